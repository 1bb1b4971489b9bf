package metricsapi

import (
	"maps"
	"testing"

	"cads/shared/metrics"
	"cads/shared/store"
)

// TestSubtractSets: a refused set's chunks come out of the account's,
// bucket by bucket, matched by tier and start whatever their scope; a
// set read ahead of its account (two calls, between two folds) leaves an
// accumulator at nothing, never below; the account's chunks as read are
// not changed.
func TestSubtractSets(t *testing.T) {
	acct := metrics.ScopeSetsOf("a")
	k := func(scope string, start int64) store.MetricChunkKey {
		return store.MetricChunkKey{Scope: scope, Tier: "m1", Start: start}
	}
	total := map[store.MetricChunkKey]map[string]int64{
		k(acct, 0):   {"0.1": 7, "3.1": 2},
		k(acct, 900): {"0.1": 5},
	}
	before := map[store.MetricChunkKey]map[string]int64{}
	for key, v := range total {
		before[key] = maps.Clone(v)
	}
	parts := map[store.MetricChunkKey]map[string]int64{
		k(metrics.ScopeSet("s"), 0):    {"0.1": 2, "3.1": 3}, // ahead of the account in bucket 3
		k(metrics.ScopeSet("s"), 1800): {"0.1": 1},           // a chunk the account's read did not find
	}
	got := subtractSets(total, parts, acct)
	want := map[store.MetricChunkKey]map[string]int64{
		k(acct, 0):   {"0.1": 5},
		k(acct, 900): {"0.1": 5},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for key, w := range want {
		if !maps.Equal(got[key], w) {
			t.Errorf("%v: %v, want %v", key, got[key], w)
		}
	}
	for key, v := range before {
		if !maps.Equal(total[key], v) {
			t.Errorf("the account's chunk %v was changed: %v, was %v", key, total[key], v)
		}
	}
}
