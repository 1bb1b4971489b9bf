package store_test

import (
	"context"
	"errors"
	"strings"
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
	if err := st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: a, Create: true, PutEntries: []domain.AddressEntry{e}}); err != nil {
		t.Fatal(err)
	}
	b := domain.AddressSet{ID: "s2", Account: "a1", Name: "two", Type: "combined", Inclusions: []string{"s1"}, Version: 1, Created: now, Updated: now}
	if err := st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: b, Create: true, AddInclusions: []store.AddressSetRef{{ID: "s1", Version: 1}}}); err != nil {
		t.Fatal(err)
	}
	// A write from a stale version loses.
	stale := a
	stale.Version, stale.Name = 2, "stale"
	if err := st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: stale}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: stale}); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("second write from version 1: %v", err)
	}
	got, err := st.AddressSets.GetAddressSet(ctx, "a1", "s1")
	if err != nil || got.Set.Includers != 1 || len(got.IncludedBy) != 1 || got.IncludedBy[0] != "s2" || len(got.Entries) != 1 {
		t.Fatalf("s1 %+v %v", got, err)
	}
	if _, err := st.AddressSets.GetAddressSet(ctx, "other", "s1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another account's set: %v", err)
	}
	// Included: the delete's condition refuses.
	if err := st.AddressSets.DeleteAddressSet(ctx, got.Set, []string{e.Prefix}, nil); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("delete an included set: %v", err)
	}
	// The expiry index finds the entry once due, and the next expiry before.
	if due, err := st.AddressSets.DueAddressEntries(ctx, now, 10); err != nil || len(due) != 0 {
		t.Fatalf("due now: %v %v", due, err)
	}
	if next, ok, err := st.AddressSets.NextAddressExpiry(ctx, now); err != nil || !ok || !next.Equal(exp) {
		t.Fatalf("next expiry %v %v %v", next, ok, err)
	}
	if due, err := st.AddressSets.DueAddressEntries(ctx, exp, 10); err != nil || len(due) != 1 || due[0].Prefix != e.Prefix {
		t.Fatalf("due at expiry: %v %v", due, err)
	}
	// Un-include, then delete: the partition and the index are empty.
	bs, _ := st.AddressSets.GetAddressSet(ctx, "a1", "s2")
	if err := st.AddressSets.DeleteAddressSet(ctx, bs.Set, nil, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = st.AddressSets.GetAddressSet(ctx, "a1", "s1")
	if got.Set.Includers != 0 || len(got.IncludedBy) != 0 {
		t.Fatalf("inclusion records left: %+v", got)
	}
	if err := st.AddressSets.DeleteAddressSet(ctx, got.Set, []string{e.Prefix}, nil); err != nil {
		t.Fatal(err)
	}
	if due, _ := st.AddressSets.DueAddressEntries(ctx, exp.Add(time.Hour), 10); len(due) != 0 {
		t.Fatalf("index entries left: %v", due)
	}
	if err := st.AddressSets.PurgeAddressSet(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	// The sweep's lease: one holder at a time; opportunistic sweeps spaced.
	if ok, err := st.AddressSets.ClaimAddressSweep(ctx, now, time.Minute, 30*time.Second, false); !ok || err != nil {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	if ok, _ := st.AddressSets.ClaimAddressSweep(ctx, now.Add(time.Second), time.Minute, 30*time.Second, true); ok {
		t.Fatal("a held lease was claimed")
	}
	if err := st.AddressSets.ReleaseAddressSweep(ctx, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.AddressSets.ClaimAddressSweep(ctx, now.Add(time.Second), time.Minute, 30*time.Second, false); ok {
		t.Fatal("an opportunistic sweep ran within the gap")
	}
	if ok, _ := st.AddressSets.ClaimAddressSweep(ctx, now.Add(time.Second), time.Minute, 30*time.Second, true); !ok {
		t.Fatal("a forced sweep after release was refused")
	}
	// Wake-ups: an earlier one replaces a pending one, a later one does not.
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{10 * time.Minute, true}, {20 * time.Minute, false}, {5 * time.Minute, true}} {
		if ok, err := st.AddressSets.ArmAddressWake(ctx, now.Add(c.at), now); err != nil || ok != c.want {
			t.Fatalf("arm at +%s: %v %v", c.at, ok, err)
		}
	}
	if ok, _ := st.AddressSets.ArmAddressWake(ctx, now.Add(20*time.Minute), now.Add(6*time.Minute)); !ok {
		t.Fatal("a spent wake-up was not replaced")
	}
}

// A set's entries are paged in address order (IPv4 first, then by
// address, a shorter prefix first), which the table's sort key (the
// network as a string) does not hold: GSI2 does, one Query a page, both
// ways, from any cursor position.
func TestPageAddressEntriesInAddressOrder(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	now := st.Now()
	nets := []string{"10.0.0.0/8", "9.0.0.0/8", "10.0.0.0/16", "192.0.2.1/32", "2001:db8::/32", "::1/128", "0.0.0.0/0", "2001:db8::1/128", "ffff::/16"}
	want := []string{"0.0.0.0/0", "9.0.0.0/8", "10.0.0.0/8", "10.0.0.0/16", "192.0.2.1/32", "::1/128", "2001:db8::/32", "2001:db8::1/128", "ffff::/16"}
	a := domain.AddressSet{ID: "s1", Account: "a1", Name: "one", Type: "manual", Version: 1, EntryCount: len(nets), Created: now, Updated: now}
	w := store.AddressSetWrite{Set: a, Create: true}
	for _, n := range nets {
		w.PutEntries = append(w.PutEntries, domain.AddressEntry{Set: "s1", Prefix: n, Address: n, Created: now})
	}
	// Another set's entries are another partition.
	b := domain.AddressSet{ID: "s2", Account: "a1", Name: "two", Type: "manual", Version: 1, EntryCount: 1, Created: now, Updated: now}
	if err := st.AddressSets.WriteAddressSet(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: b, Create: true, PutEntries: []domain.AddressEntry{{Set: "s2", Prefix: "8.8.8.8/32", Address: "8.8.8.8", Created: now}}}); err != nil {
		t.Fatal(err)
	}
	for _, desc := range []bool{false, true} {
		var got []string
		after := ""
		for range 20 {
			d.Counter.Reset()
			es, pos, more, err := st.AddressSets.PageAddressEntries(ctx, "s1", after, desc, 2)
			if err != nil {
				t.Fatal(err)
			}
			if !onePage(d.Counter) || len(es) != len(pos) || len(es) > 2 {
				t.Fatalf("page: %d calls, %d entries, %d positions", d.Counter.Total(), len(es), len(pos))
			}
			for i, e := range es {
				got = append(got, e.Prefix)
				if p, err := store.AddressPosition(e.Prefix); err != nil || p != pos[i] || !store.ValidAddressPosition(p) {
					t.Fatalf("position of %s: %q, want %q (%v)", e.Prefix, pos[i], p, err)
				}
			}
			if !more {
				break
			}
			after = pos[len(pos)-1]
		}
		w := want
		if desc {
			w = reversed(want)
		}
		if strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("desc %v:\n got %v\nwant %v", desc, got, w)
		}
	}
	// A position no entry has starts a page all the same.
	mid, _ := store.AddressPosition("10.0.0.0/12")
	es, _, _, err := st.AddressSets.PageAddressEntries(ctx, "s1", mid, false, 2)
	if err != nil || len(es) != 2 || es[0].Prefix != "10.0.0.0/16" || es[1].Prefix != "192.0.2.1/32" {
		t.Fatalf("after 10.0.0.0/12: %+v %v", es, err)
	}
	for _, bad := range []string{"", "10.0.0.0/8", "4/032", "40a000000/08", "40a000000/033", "40A000000/008", "40a000001/008", "5000000000/000", "4zz000000/008", "60a000000/008"} {
		if store.ValidAddressPosition(bad) {
			t.Errorf("ValidAddressPosition(%q) = true", bad)
		}
	}
	if _, err := store.AddressPosition("10.0.0.1/8"); err == nil {
		t.Error("a network with host bits set has a position")
	}
}
