package store_test

import (
	"context"
	"errors"
	"testing"

	"cads/infra/testenv"
	"cads/shared/store"
)

func TestMetricStepsAreAppliedOnce(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	k := store.MetricChunkKey{Scope: "app#a1", Tier: "s10", Start: 1_700_000_040}
	up := store.MetricUpdate{Key: k, Attrs: []store.MetricAttr{{Name: "0.n", Value: 2}, {Name: "3.sc.200", Value: 2}}, Expires: 1_700_200_000}
	step := func(i, n int) store.MetricStep {
		return store.MetricStep{Dedup: []store.MetricDedup{{Kind: store.MetricMarker, ID: "b1", Step: i, Steps: n}}, Updates: []store.MetricUpdate{up}}
	}
	if err := st.Metrics.ApplyMetricStep(ctx, step(0, 2)); err != nil {
		t.Fatal(err)
	}
	// Step 0 again (a redelivery) is refused as a duplicate, with nothing added.
	var dup *store.MetricDuplicateError
	if err := st.Metrics.ApplyMetricStep(ctx, step(0, 2)); !errors.As(err, &dup) || len(dup.Dedup) != 1 {
		t.Fatalf("repeated step 0: %v", err)
	}
	if s, done, err := st.Metrics.MetricProgress(ctx, store.MetricMarker, "b1"); err != nil || s != 1 || done {
		t.Fatalf("progress after step 0: %d %v %v", s, done, err)
	}
	if err := st.Metrics.ApplyMetricStep(ctx, step(1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := st.Metrics.ApplyMetricStep(ctx, step(1, 2)); !errors.As(err, &dup) {
		t.Fatalf("repeated step 1: %v", err)
	}
	if _, done, _ := st.Metrics.MetricProgress(ctx, store.MetricMarker, "b1"); !done {
		t.Fatal("not done after the last step")
	}
	got, err := st.Metrics.MetricChunks(ctx, []store.MetricChunkKey{k, {Scope: "app#a1", Tier: "s10", Start: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[k]["0.n"] != 4 || got[k]["3.sc.200"] != 4 || len(got[k]) != 2 {
		t.Fatalf("chunk %v", got)
	}
	// An event unit without its outbox item is done: nothing is added.
	if err := st.Metrics.ApplyMetricStep(ctx, store.MetricStep{Dedup: []store.MetricDedup{{Kind: store.MetricOutbox, ID: "e1", Steps: 1}}, Updates: []store.MetricUpdate{up}}); !errors.As(err, &dup) {
		t.Fatalf("event without outbox: %v", err)
	}
	if _, done, _ := st.Metrics.MetricProgress(ctx, store.MetricOutbox, "e1"); !done {
		t.Fatal("a missing outbox item must read as done")
	}
}
