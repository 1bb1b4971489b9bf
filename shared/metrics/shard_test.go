package metrics_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"cads/shared/metrics"
	"cads/shared/store"
)

// recordingStore keeps the chunk items each transaction of one aggregator
// wrote and the errors it got.
type recordingStore struct {
	*store.Metrics
	mu    sync.Mutex
	items map[string]bool
	errs  []error
}

func (r *recordingStore) ApplyMetricStep(ctx context.Context, s store.MetricStep) error {
	err := r.Metrics.ApplyMetricStep(ctx, s)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs = append(r.errs, err)
	}
	for _, u := range s.Updates {
		r.items[fmt.Sprintf("%s/%s/%d/%d", u.Key.Scope, u.Key.Tier, u.Key.Start, u.Key.Shard)] = true
	}
	return err
}

// TestConcurrentBatchesOfOneApplicationUseDisjointItems: AppShards
// aggregator invocations fold batches of one application for the same
// buckets at the same time. Each writes its own shard, so no two
// transactions touch the same item (on DynamoDB: no TransactionConflict
// between them, and each shard's items in their own partition), and the
// query sums the shards exactly. Then more concurrent batches than shards,
// with random shards: still exact.
func TestConcurrentBatchesOfOneApplicationUseDisjointItems(t *testing.T) {
	st, _ := newStore(t)
	now := st.Now().Truncate(2 * time.Minute).Add(110 * time.Second)
	batch := func(id string, status int) string {
		var recs []metrics.Record
		for i := range 40 {
			recs = append(recs, access("busy", now.Add(-time.Duration(i)*time.Second), status, 100, 20))
		}
		return message(id, recs...)
	}
	recs := make([]*recordingStore, metrics.AppShards)
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = &recordingStore{Metrics: st.Metrics, items: map[string]bool{}}
		a := metrics.NewAggregator(recs[i], nil, nil, quiet)
		a.PinShard(func(int) int { return i })
		wg.Go(func() {
			if f := handle(t, a, sqsEvent(batch(fmt.Sprintf("pinned-%d", i), 200))); len(f) != 0 {
				t.Errorf("invocation %d: failures %v", i, f)
			}
		})
	}
	wg.Wait()
	owner := map[string]int{}
	for i, r := range recs {
		if len(r.errs) > 0 {
			t.Errorf("invocation %d: %v", i, r.errs)
		}
		if len(r.items) != 4 { // one chunk per tier
			t.Errorf("invocation %d wrote %d items, want 4: %v", i, len(r.items), r.items)
		}
		for it := range r.items {
			if j, ok := owner[it]; ok {
				t.Errorf("invocations %d and %d both wrote %s", j, i, it)
			}
			owner[it] = i
		}
	}
	r := read(t, st, metrics.FamilyApplication, metrics.ScopeApp("busy"), "names=requests,bytes_out,status_codes&summarize=true"+window(now))
	if got, want := num(t, r, "requests"), float64(40*metrics.AppShards); got != want {
		t.Fatalf("requests = %v, want %v", got, want)
	}

	// Random shards: 3 batches per shard at once, each a new status code.
	a := metrics.NewAggregator(st.Metrics, nil, nil, quiet)
	for i := range 3 * metrics.AppShards {
		wg.Go(func() {
			if f := handle(t, a, sqsEvent(batch(fmt.Sprintf("random-%d", i), 500))); len(f) != 0 {
				t.Errorf("random %d: failures %v", i, f)
			}
		})
	}
	wg.Wait()
	r = read(t, st, metrics.FamilyApplication, metrics.ScopeApp("busy"), "names=requests,bytes_out,status_codes&resolution=10"+window(now))
	if got, want := sum(t, r, "requests"), float64(40*4*metrics.AppShards); got != want {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	if got, want := sum(t, r, "bytes_out"), float64(100*40*4*metrics.AppShards); got != want {
		t.Fatalf("bytes_out = %v, want %v", got, want)
	}
}
