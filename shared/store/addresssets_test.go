package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/store"
)

func TestAddressSetWritesAreVersioned(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	now := st.Now()
	exp := now.Add(time.Minute)
	a := domain.AddressSet{ID: "s1", Account: "a1", Name: "one", Type: "manual", Version: 1, EntryCount: 1, Created: now, Updated: now}
	e := domain.AddressEntry{Set: "s1", Prefix: "10.0.0.0/8", Address: "10.0.0.0/8", Expiry: &exp, Created: now}
	if err := st.WriteAddressSet(ctx, store.AddressSetWrite{Set: a, Create: true, PutEntries: []domain.AddressEntry{e}}); err != nil {
		t.Fatal(err)
	}
	b := domain.AddressSet{ID: "s2", Account: "a1", Name: "two", Type: "combined", Inclusions: []string{"s1"}, Version: 1, Created: now, Updated: now}
	if err := st.WriteAddressSet(ctx, store.AddressSetWrite{Set: b, Create: true, AddInclusions: []store.AddressSetRef{{ID: "s1", Version: 1}}}); err != nil {
		t.Fatal(err)
	}
	// A write from a stale version loses.
	stale := a
	stale.Version, stale.Name = 2, "stale"
	if err := st.WriteAddressSet(ctx, store.AddressSetWrite{Set: stale}); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteAddressSet(ctx, store.AddressSetWrite{Set: stale}); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("second write from version 1: %v", err)
	}
	got, err := st.GetAddressSet(ctx, "a1", "s1", true)
	if err != nil || got.Set.Includers != 1 || len(got.IncludedBy) != 1 || got.IncludedBy[0] != "s2" || len(got.Entries) != 1 {
		t.Fatalf("s1 %+v %v", got, err)
	}
	if _, err := st.GetAddressSet(ctx, "other", "s1", false); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another account's set: %v", err)
	}
	// Included: the delete's condition refuses.
	if err := st.DeleteAddressSet(ctx, got.Set, []string{e.Prefix}, nil); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("delete an included set: %v", err)
	}
	// The expiry index finds the entry once due, and the next expiry before.
	if due, err := st.DueAddressEntries(ctx, now, 10); err != nil || len(due) != 0 {
		t.Fatalf("due now: %v %v", due, err)
	}
	if next, ok, err := st.NextAddressExpiry(ctx, now); err != nil || !ok || !next.Equal(exp) {
		t.Fatalf("next expiry %v %v %v", next, ok, err)
	}
	if due, err := st.DueAddressEntries(ctx, exp, 10); err != nil || len(due) != 1 || due[0].Prefix != e.Prefix {
		t.Fatalf("due at expiry: %v %v", due, err)
	}
	// Un-include, then delete: the partition and the index are empty.
	bs, _ := st.GetAddressSet(ctx, "a1", "s2", true)
	if err := st.DeleteAddressSet(ctx, bs.Set, nil, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = st.GetAddressSet(ctx, "a1", "s1", true)
	if got.Set.Includers != 0 || len(got.IncludedBy) != 0 {
		t.Fatalf("inclusion records left: %+v", got)
	}
	if err := st.DeleteAddressSet(ctx, got.Set, []string{e.Prefix}, nil); err != nil {
		t.Fatal(err)
	}
	if due, _ := st.DueAddressEntries(ctx, exp.Add(time.Hour), 10); len(due) != 0 {
		t.Fatalf("index entries left: %v", due)
	}
	if err := st.PurgeAddressSet(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	// The sweep's lease: one holder at a time; opportunistic sweeps spaced.
	if ok, err := st.ClaimAddressSweep(ctx, now, time.Minute, 30*time.Second, false); !ok || err != nil {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	if ok, _ := st.ClaimAddressSweep(ctx, now.Add(time.Second), time.Minute, 30*time.Second, true); ok {
		t.Fatal("a held lease was claimed")
	}
	if err := st.ReleaseAddressSweep(ctx, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.ClaimAddressSweep(ctx, now.Add(time.Second), time.Minute, 30*time.Second, false); ok {
		t.Fatal("an opportunistic sweep ran within the gap")
	}
	if ok, _ := st.ClaimAddressSweep(ctx, now.Add(time.Second), time.Minute, 30*time.Second, true); !ok {
		t.Fatal("a forced sweep after release was refused")
	}
	// Wake-ups: an earlier one replaces a pending one, a later one does not.
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{10 * time.Minute, true}, {20 * time.Minute, false}, {5 * time.Minute, true}} {
		if ok, err := st.ArmAddressWake(ctx, now.Add(c.at), now); err != nil || ok != c.want {
			t.Fatalf("arm at +%s: %v %v", c.at, ok, err)
		}
	}
	if ok, _ := st.ArmAddressWake(ctx, now.Add(20*time.Minute), now.Add(6*time.Minute)); !ok {
		t.Fatal("a spent wake-up was not replaced")
	}
}
