package localaws

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/truora/minidyn/server"
)

// DynamoDB's per-partition throughput: a partition serves at most this
// many read and write capacity units per second, whatever the table's
// capacity mode. One partition key value always lives in one partition
// (and one item never spans two), so a key that needs more is throttled.
const (
	PartitionRCULimit = 3000
	PartitionWCULimit = 1000
)

// PartitionKey names one partition key value of a table or of one of its
// global secondary indexes.
type PartitionKey struct {
	Table, Index, Key string
}

func (k PartitionKey) String() string {
	if k.Index != "" {
		return k.Index + ":" + k.Key
	}
	return k.Key
}

// Units are consumed read and write capacity units.
type Units struct{ RCU, WCU float64 }

// PartitionMeter counts the capacity the metered DynamoDB stand-in bills
// (capacity.go's rules) per partition key: in total since the last Reset,
// and per wall-clock second, keeping each key's busiest second. Install it
// with StartDynamoMetered. Safe for concurrent use.
type PartitionMeter struct {
	now func() time.Time

	mu   sync.Mutex
	keys map[PartitionKey]*partitionCount
	// requests counts metered requests since the last Reset.
	requests int
}

type partitionCount struct {
	total  Units
	second int64 // unix second of cur
	cur    Units
	peak   Units // the largest RCU and WCU of any one second (maybe different seconds)
}

// NewPartitionMeter returns an empty meter; now is its clock (nil: the
// wall clock), which decides the second each request is counted in.
func NewPartitionMeter(now func() time.Time) *PartitionMeter {
	if now == nil {
		now = time.Now
	}
	return &PartitionMeter{now: now, keys: map[PartitionKey]*partitionCount{}}
}

func (p *PartitionMeter) add(cc []server.Consumed) {
	sec := p.now().Unix()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	for _, c := range cc {
		k := PartitionKey{Table: c.Table, Index: c.Index, Key: c.Key}
		pc := p.keys[k]
		if pc == nil {
			pc = &partitionCount{second: sec}
			p.keys[k] = pc
		}
		if pc.second != sec {
			pc.second, pc.cur = sec, Units{}
		}
		if c.Read {
			pc.total.RCU += c.Units
			pc.cur.RCU += c.Units
		} else {
			pc.total.WCU += c.Units
			pc.cur.WCU += c.Units
		}
		pc.peak.RCU = max(pc.peak.RCU, pc.cur.RCU)
		pc.peak.WCU = max(pc.peak.WCU, pc.cur.WCU)
	}
}

// Reset forgets everything counted so far.
func (p *PartitionMeter) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.keys)
	p.requests = 0
}

// Requests is the number of requests metered since the last Reset.
func (p *PartitionMeter) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}

// PartitionUse is one key's consumption: in total and in its busiest
// second.
type PartitionUse struct {
	PartitionKey
	Total, Peak Units
}

// Utilisation is the larger of the peak second's RCU and WCU as a
// fraction of the per-partition limits (1 = at the limit).
func (u PartitionUse) Utilisation() float64 {
	return max(u.Peak.RCU/PartitionRCULimit, u.Peak.WCU/PartitionWCULimit)
}

// Snapshot returns every key's consumption, busiest (by Utilisation,
// then total units) first.
func (p *PartitionMeter) Snapshot() []PartitionUse {
	p.mu.Lock()
	out := make([]PartitionUse, 0, len(p.keys))
	for k, pc := range p.keys {
		out = append(out, PartitionUse{PartitionKey: k, Total: pc.total, Peak: pc.peak})
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b PartitionUse) int {
		if c := cmp.Compare(b.Utilisation(), a.Utilisation()); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Total.RCU+b.Total.WCU, a.Total.RCU+a.Total.WCU); c != 0 {
			return c
		}
		return cmp.Compare(a.String(), b.String())
	})
	return out
}

// Totals returns each key's units since the last Reset.
func (p *PartitionMeter) Totals() map[PartitionKey]Units {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[PartitionKey]Units, len(p.keys))
	for k, pc := range p.keys {
		out[k] = pc.total
	}
	return out
}

func (u PartitionUse) String() string {
	return fmt.Sprintf("%s: total %.1f RCU %.1f WCU, peak second %.1f RCU %.1f WCU", u.PartitionKey, u.Total.RCU, u.Total.WCU, u.Peak.RCU, u.Peak.WCU)
}
