package store

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLostRaceWaitsKeepTheTailShort is the measurement behind
// lostRaceWait, in virtual time: eight writers patch one item four times
// each, every patch a read and a conditional write of one round trip each
// (log-normal around m), a lost race waited out and the patch re-applied.
// Over many seeds it compares the slowest patch when the wait is at most
// one attempt's length with the slowest when the wait doubles up to four
// attempts' lengths (the policy before). The doubling policy lets writers
// that arrived later go first while the writer that lost most waits
// longest.
func TestLostRaceWaitsKeepTheTailShort(t *testing.T) {
	p := reapplyPolicy
	oneAttempt := func(_ int, took time.Duration) time.Duration { return lostRaceWait(p, took) }
	doubling := func(lost int, took time.Duration) time.Duration {
		return min(max(160*time.Millisecond, 4*took), max(p.Base, took)<<min(lost-1, 20))
	}
	for _, m := range []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond} {
		got, before := slowestPatch(m, oneAttempt), slowestPatch(m, doubling)
		t.Logf("round trip %v: slowest patch (median over seeds) %v with one attempt's wait, %v with doubling waits (%.2f)", m, got, before, float64(got)/float64(before))
		if float64(got) > 0.85*float64(before) {
			t.Errorf("round trip %v: the slowest patch took %v, not clearly shorter than %v with doubling waits", m, got, before)
		}
	}
}

// slowestPatch is the median, over 200 seeds, of the slowest patch's time
// when a writer that lost its n-th race (after an attempt of took) waits
// uniformly at random up to bound(n, took).
func slowestPatch(m time.Duration, bound func(lost int, took time.Duration) time.Duration) time.Duration {
	const writers, patches, seeds = 8, 4, 200
	var slowest []time.Duration
	for seed := range uint64(seeds) {
		rnd := rand.New(rand.NewPCG(seed, 26))
		trip := func() time.Duration { return time.Duration(math.Exp(rnd.NormFloat64()*0.6) * float64(m)) }
		type writer struct {
			done, lost   int
			began, tried time.Duration // the patch's start, the attempt's
			read         int           // the version the attempt read
		}
		ws := make([]writer, writers)
		var q events
		for w := range ws {
			heap.Push(&q, event{at: time.Duration(rnd.Int64N(int64(time.Millisecond))), writer: w, kind: startPatch})
		}
		version, worst := 0, time.Duration(0)
		for q.Len() > 0 {
			e := heap.Pop(&q).(event)
			w := &ws[e.writer]
			switch e.kind {
			case startPatch:
				w.began, w.lost = e.at, 0
				fallthrough
			case startAttempt:
				w.tried = e.at
				heap.Push(&q, event{at: e.at + trip(), writer: e.writer, kind: readDone})
			case readDone:
				w.read = version
				heap.Push(&q, event{at: e.at + trip(), writer: e.writer, kind: writeDone})
			case writeDone:
				if w.read == version {
					version++
					worst = max(worst, e.at-w.began)
					if w.done++; w.done < patches {
						heap.Push(&q, event{at: e.at, writer: e.writer, kind: startPatch})
					}
					continue
				}
				w.lost++
				wait := time.Duration(rnd.Int64N(int64(bound(w.lost, e.at-w.tried)) + 1))
				heap.Push(&q, event{at: e.at + wait, writer: e.writer, kind: startAttempt})
			}
		}
		slowest = append(slowest, worst)
	}
	slices.Sort(slowest)
	return slowest[len(slowest)/2]
}

const (
	startPatch = iota
	startAttempt
	readDone
	writeDone
)

type event struct {
	at     time.Duration
	writer int
	kind   int
}

type events []event

func (q events) Len() int           { return len(q) }
func (q events) Less(i, j int) bool { return q[i].at < q[j].at }
func (q events) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)        { *q = append(*q, x.(event)) }
func (q *events) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
