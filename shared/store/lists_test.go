package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"cads/shared/domain"
	"cads/shared/store"
)

// walk reads a whole collection a page of 3 at a time, following the
// positions as a cursor would, forward and then backward, and returns the
// ids seen forward. It fails if a position has not the collection's
// shape, if a member is seen twice, or if backward is not forward
// reversed.
func walk[T any](t *testing.T, name string, page func(ctx context.Context, after string, desc bool, n int) ([]T, []string, bool, error),
	valid func(string) bool, id func(T) string) []string {
	t.Helper()
	read := func(desc bool) []string {
		var ids []string
		after := ""
		for range 20 {
			items, pos, more, err := page(context.Background(), after, desc, 3)
			if err != nil || len(items) != len(pos) || len(items) > 3 {
				t.Fatalf("%s: page after %q: %d items, %d positions, %v", name, after, len(items), len(pos), err)
			}
			for i, it := range items {
				if !valid(pos[i]) {
					t.Fatalf("%s: position %q is not one a cursor accepts", name, pos[i])
				}
				if slices.Contains(ids, id(it)) {
					t.Fatalf("%s: %s seen twice", name, id(it))
				}
				ids = append(ids, id(it))
			}
			if !more || len(items) == 0 {
				return ids
			}
			after = pos[len(pos)-1]
		}
		t.Fatalf("%s: no end after 20 pages", name)
		return nil
	}
	fwd, back := read(false), read(true)
	slices.Reverse(back)
	if !slices.Equal(fwd, back) {
		t.Fatalf("%s: backward is not forward reversed:\n%v\n%v", name, fwd, back)
	}
	return fwd
}

// Every paged collection can be walked with its positions, in creation
// order, each member once, whatever the page boundaries.
func TestPagedCollectionsWalkWithPositions(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	ensureAccount(t, st, "a1")
	ensureAccount(t, st, "a2")
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com", Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	const n = 7
	var roles, groups, ents, invs, inbox, keys []string
	for i := range n {
		// Ids against creation order, so that the order seen is the
		// creation order and not the ids'.
		id := fmt.Sprintf("x%02d", n-i)
		for _, acct := range []string{"a1", "a2"} {
			r := domain.Role{AccountID: acct, ID: id, Name: "r" + id, Version: 1, Created: at(i), Updated: at(i)}
			if err := st.Roles.CreateRole(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		roles = append(roles, id)
		if err := st.Roles.CreateGroup(ctx, domain.Group{AccountID: "a1", ID: id, Name: "g" + id, Roles: []string{id}, Version: 1, Created: at(i), Updated: at(i)}); err != nil {
			t.Fatal(err)
		}
		groups = append(groups, id)
		if err := st.Entitlements.CreateEntitlement(ctx, domain.Entitlement{ID: id, Account: "a1", Resource: "applications", Quantity: 1, Period: "month",
			Started: t0, Version: 1, Created: at(i), Updated: at(i)}); err != nil {
			t.Fatal(err)
		}
		ents = append(ents, id)
		// Invitations of two accounts to one invitee: the account's list
		// has its own, the inbox both, interleaved by creation time.
		for j, acct := range []string{"a1", "a2"} {
			// a2's are written queued and then sent: delivery adds them to
			// the inbox.
			state := domain.InvitationSent
			if acct == "a2" {
				state = domain.InvitationQueued
			}
			inv := domain.Invitation{AccountID: acct, ID: id, Kind: domain.InvitationRole, Email: "u1@example.com", Target: id,
				State: state, Created: at(i).Add(time.Duration(j) * time.Millisecond), Updated: at(i)}
			if err := st.Invitations.CreateInvitation(ctx, inv, nil); err != nil {
				t.Fatal(err)
			}
			if state == domain.InvitationQueued {
				if _, err := st.Invitations.MarkInvitationSent(ctx, inv); err != nil {
					t.Fatal(err)
				}
			}
			inbox = append(inbox, acct+"/"+id)
		}
		invs = append(invs, id)
		if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: id, PrincipalID: "u1", Type: "bearer", Durability: domain.DurabilityPersistent,
			SecretHash: "h" + id, Created: at(i)}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, id)
		if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: "a2", RoleID: id, Via: "test", Created: at(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"roles", walk(t, "roles", func(ctx context.Context, a string, d bool, n int) ([]domain.Role, []string, bool, error) {
			return st.Roles.PageRoles(ctx, "a1", a, d, n)
		}, store.ValidPosition, func(r domain.Role) string { return r.ID }), roles},
		{"groups", walk(t, "groups", func(ctx context.Context, a string, d bool, n int) ([]domain.Group, []string, bool, error) {
			return st.Roles.PageGroups(ctx, "a1", a, d, n)
		}, store.ValidPosition, func(g domain.Group) string { return g.ID }), groups},
		{"entitlements", walk(t, "entitlements", func(ctx context.Context, a string, d bool, n int) ([]domain.Entitlement, []string, bool, error) {
			return st.Entitlements.PageEntitlements(ctx, "a1", a, d, n)
		}, store.ValidPosition, func(e domain.Entitlement) string { return e.ID }), ents},
		{"invitations", walk(t, "invitations", func(ctx context.Context, a string, d bool, n int) ([]domain.Invitation, []string, bool, error) {
			return st.Invitations.PageInvitations(ctx, "a1", domain.InvitationRole, a, d, n)
		}, store.ValidPosition, func(i domain.Invitation) string { return i.ID }), invs},
		{"inbox", walk(t, "inbox", func(ctx context.Context, a string, d bool, n int) ([]domain.Invitation, []string, bool, error) {
			return st.Invitations.PageInbox(ctx, "u1@example.com", domain.InvitationRole, a, d, n)
		}, store.ValidPairPosition, func(i domain.Invitation) string { return i.AccountID + "/" + i.ID }), inbox},
		{"keys", walk(t, "keys", func(ctx context.Context, a string, d bool, n int) ([]domain.AccessKey, []string, bool, error) {
			return st.Principals.PageKeys(ctx, "u1", a, d, n)
		}, store.ValidPosition, func(k domain.AccessKey) string { return k.ID }), keys},
		{"held roles", walk(t, "held roles", func(ctx context.Context, a string, d bool, n int) ([]domain.Role, []string, bool, error) {
			return st.Roles.PageHeldRoles(ctx, "u1", a, d, n)
		}, store.ValidPairPosition, func(r domain.Role) string { return r.ID }), roles},
		{"accounts", walk(t, "accounts", st.Accounts.PageAccounts, store.ValidPosition, func(a domain.AccountRecord) string { return a.ID }), nil},
	} {
		if c.want != nil && !slices.Equal(c.got, c.want) {
			t.Errorf("%s: walked %v, want %v", c.name, c.got, c.want)
		}
		if c.name == "accounts" && len(c.got) != 2 {
			t.Errorf("accounts: walked %v, want a1 and a2", c.got)
		}
	}
}
