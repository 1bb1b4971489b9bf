package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"cads/shared/domain"
)

func ref(p, k string) *domain.KeyRef { return &domain.KeyRef{Principal: p, ID: k} }

// minted is a key of principal p minted with parent, in origin's lineage.
func minted(p, id string, origin, parent *domain.KeyRef) domain.AccessKey {
	exp := time.Now().Add(time.Hour).UTC()
	return domain.AccessKey{ID: id, PrincipalID: p, Type: "bearer", Durability: domain.DurabilitySession, SecretHash: "h" + id,
		Expiry: &exp, Origin: origin, Parent: parent}
}

func ids(keys []domain.AccessKey) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.ID)
	}
	slices.Sort(out)
	return out
}

func TestDescendants(t *testing.T) {
	keys := []domain.AccessKey{
		{ID: "p0", PrincipalID: "u1"},
		minted("u1", "s1", ref("u1", "p0"), ref("u1", "p0")),
		minted("u1", "s2", ref("u1", "p0"), ref("u1", "s1")),
		minted("u1", "k3", ref("u1", "p0"), ref("u1", "s1")),
		minted("u1", "s4", ref("u1", "p0"), ref("u1", "k3")),
		minted("u1", "s5", ref("u1", "p0"), ref("u1", "p0")),
		{ID: "p6", PrincipalID: "u1"},
		minted("u1", "s7", ref("u1", "p6"), ref("u1", "p6")),
	}
	for _, c := range []struct {
		roots []domain.KeyRef
		want  []string
	}{
		{[]domain.KeyRef{*ref("u1", "p0")}, []string{"k3", "s1", "s2", "s4", "s5"}},
		{[]domain.KeyRef{*ref("u1", "s1")}, []string{"k3", "s2", "s4"}},
		{[]domain.KeyRef{*ref("u1", "k3")}, []string{"s4"}},
		{[]domain.KeyRef{*ref("u1", "s4")}, []string{}},
		{[]domain.KeyRef{*ref("u1", "k3"), *ref("u1", "p6")}, []string{"s4", "s7"}},
		// Keys are named with their principal: u2's p0 is another key.
		{[]domain.KeyRef{*ref("u2", "p0")}, []string{}},
	} {
		if got := ids(domain.Descendants(keys, c.roots)); !slices.Equal(got, c.want) {
			t.Errorf("Descendants(%v) = %v, want %v", c.roots, got, c.want)
		}
	}
}

// Deleting a key deletes the principal's keys minted under it, whatever
// the depth, in the same request; keys outside its lineage stay.
func TestDeleteKeyDeletesItsLineage(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	for _, u := range []string{"u1", "u2"} {
		if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: u, Kind: domain.KindUser, Email: u + "@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []domain.AccessKey{
		{ID: "p0", PrincipalID: "u1", Durability: domain.DurabilityPersistent, SecretHash: "h"},
		minted("u1", "s1", ref("u1", "p0"), ref("u1", "p0")),
		minted("u1", "s2", ref("u1", "p0"), ref("u1", "s1")),
		minted("u1", "k3", ref("u1", "p0"), ref("u1", "s1")),
		minted("u1", "s4", ref("u1", "p0"), ref("u1", "k3")),
		{ID: "p5", PrincipalID: "u1", Durability: domain.DurabilityPersistent, SecretHash: "h"},
		// Minted by u1's session key for u2 (an operator's case): the
		// authorizer refuses it through its parent; it is not in u1's
		// partition.
		minted("u2", "k6", ref("u1", "p0"), ref("u1", "s1")),
	} {
		if err := st.Principals.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := st.Principals.GetKey(ctx, "u1", "s4")
	if err != nil || stored.Origin == nil || *stored.Origin != *ref("u1", "p0") || *stored.Parent != *ref("u1", "k3") {
		t.Fatalf("lineage not stored: %+v %v", stored, err)
	}

	d.Counter.Reset()
	got, err := st.Principals.DeleteKey(ctx, "u1", "s1")
	if err != nil || got.ID != "s1" || got.Parent == nil {
		t.Fatalf("DeleteKey = %+v, %v", got, err)
	}
	if seq, ops := d.Counter.Sequential(), d.Counter.ByOperation(); seq != 2 || ops["Query"] != 1 || ops["TransactWriteItems"] != 1 {
		t.Errorf("delete with a lineage: %d sequential, %v; want 2: the Query, then one transaction", seq, ops)
	}
	left, _ := st.Principals.ListKeys(ctx, "u1")
	if got := ids(left); !slices.Equal(got, []string{"p0", "p5"}) {
		t.Fatalf("u1's keys after deleting s1: %v, want [p0 p5]", got)
	}
	if _, err := st.Principals.GetKey(ctx, "u2", "k6"); err != nil {
		t.Fatalf("another principal's key is not in this partition: %v", err)
	}

	// No lineage: one plain conditional delete after the Query.
	d.Counter.Reset()
	if _, err := st.Principals.DeleteKey(ctx, "u1", "p5"); err != nil {
		t.Fatal(err)
	}
	// (and, in parallel, the journal's PutItem: journal.go)
	if ops := d.Counter.Without("PutItem").ByOperation(); d.Counter.Without("PutItem").Total() != 2 || ops["DeleteItem"] != 1 {
		t.Errorf("delete without a lineage: %v, want a Query and a DeleteItem", ops)
	}
	// Unknown: the Query says so, nothing is written.
	d.Counter.Reset()
	if _, err := st.Principals.DeleteKey(ctx, "u1", "p5"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if d.Counter.Total() != 1 {
		t.Errorf("delete of a missing key: %v, want the Query only", d.Counter.ByOperation())
	}

	// More keys than one transaction holds: all of them go.
	for i := range 120 {
		if err := st.Principals.CreateKey(ctx, minted("u1", fmt.Sprintf("m%d", i), ref("u1", "p0"), ref("u1", "p0"))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Principals.DeleteKey(ctx, "u1", "p0"); err != nil {
		t.Fatal(err)
	}
	if left, _ := st.Principals.ListKeys(ctx, "u1"); len(left) != 0 {
		t.Fatalf("%d keys of the deleted origin's lineage left: %v", len(left), ids(left))
	}
}

// Deleting an account deletes the keys bound to it and the keys minted
// under them, wherever those are bound.
func TestDeleteAccountDeletesTheLineageOfItsKeys(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	root := rootAccount(t, st)
	a1 := subAccount(root, "a1", "One")
	if err := st.Accounts.CreateSubAccount(ctx, a1, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com"}); err != nil {
		t.Fatal(err)
	}
	inRoot := func(k domain.AccessKey) domain.AccessKey { k.Account = "root"; return k }
	for _, k := range []domain.AccessKey{
		{ID: "ka", PrincipalID: "u1", Durability: domain.DurabilityPersistent, Account: "a1", AccountAncestors: []string{"root"}, SecretHash: "h"},
		// Switched from ka into the root account, and a switch from that.
		inRoot(minted("u1", "sb", ref("u1", "ka"), ref("u1", "ka"))),
		inRoot(minted("u1", "sc", ref("u1", "ka"), ref("u1", "sb"))),
		{ID: "kr", PrincipalID: "u1", Durability: domain.DurabilityPersistent, Account: "root", SecretHash: "h"},
		inRoot(minted("u1", "sr", ref("u1", "kr"), ref("u1", "kr"))),
	} {
		if err := st.Principals.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Accounts.DeleteAccount(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	left, _ := st.Principals.ListKeys(ctx, "u1")
	if got := ids(left); !slices.Equal(got, []string{"kr", "sr"}) {
		t.Fatalf("u1's keys after deleting a1: %v, want [kr sr]", got)
	}
}
