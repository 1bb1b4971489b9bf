package access_test

import (
	"context"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/domain"
	"cads/shared/store"
)

// A group membership expands to the group's roles: the authorizer reads
// the group by key in its second round trip and the roles it names in a
// third, only when no role held directly granted the request (the
// groups' items name the roles; the account's other roles and groups are
// not read). A change to the group's list applies to the member's next
// request.
func TestGroupMembershipCostsOneRoundTripMore(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	chain := tree(t, st, 2) // root -> a1 -> a2
	leaf := chain[2]
	rs := roles(t, st, leaf.ID, 3, false)
	inherited := roles(t, st, "a1", 1, true)[0]
	secret := principalWithKey(t, st, leaf, nil)
	g := domain.Group{AccountID: leaf.ID, ID: "g1", Name: "ops", Roles: []string{rs[0].ID}, Version: 1}
	if err := st.Roles.CreateGroup(ctx, g); err != nil {
		t.Fatal(err)
	}
	gi := domain.Group{AccountID: "a1", ID: "g2", Name: "support", Roles: []string{inherited.ID}, Version: 1}
	if err := st.Roles.CreateGroup(ctx, gi); err != nil {
		t.Fatal(err)
	}
	for _, gr := range []domain.Grant{{PrincipalID: "u1", AccountID: leaf.ID, Group: g.ID, Via: "test"}, {PrincipalID: "u1", AccountID: "a1", Group: gi.ID, Via: "test"}} {
		if err := st.Roles.PutGrant(ctx, gr); err != nil {
			t.Fatal(err)
		}
	}
	svc := access.New(access.NewStore(st), quiet)

	d.Counter.SetDelay(25 * time.Millisecond)
	d.Counter.Reset()
	res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x")
	if err != nil {
		t.Fatal(err)
	}
	// Both groups' roles apply (a2's own, a1's inherited); either grants.
	if d := res.Decision; !d.Allowed || d.Role != rs[0].AuthzRole().Href() && d.Role != inherited.AuthzRole().Href() {
		t.Fatalf("through the groups: %+v", res.Decision)
	}
	if got := d.Counter.Sequential(); got != 3 {
		t.Errorf("sequential round trips = %d, want 3 (%v)", got, d.Counter.ByOperation())
	}
	// BatchGet + grants Query; the groups' BatchGet, the key account's
	// GetItem and last_used; the roles' BatchGet.
	if got, ops := d.Counter.Total(), d.Counter.ByOperation(); got != 6 || ops["BatchGetItem"] != 3 {
		t.Errorf("total round trips = %d, want 6 with 3 BatchGetItem (%v)", got, ops)
	}

	// A role held directly that grants the request spares the third:
	// the groups are read with it, their roles only if it does not grant.
	if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: leaf.ID, RoleID: rs[2].ID, Via: "test"}); err != nil {
		t.Fatal(err)
	}
	d.Counter.Reset()
	if res, err = svc.Authorize(ctx, secret, "GET", "/v2/applications/x"); err != nil || res.Decision.Role != rs[2].AuthzRole().Href() {
		t.Fatalf("with a direct grant: %+v %v", res.Decision, err)
	}
	if got := d.Counter.Sequential(); got != 2 {
		t.Errorf("with a direct grant: sequential round trips = %d, want 2 (%v)", got, d.Counter.ByOperation())
	}
	if err := st.Accounts.RevokeGrants(ctx, []domain.Grant{{PrincipalID: "u1", AccountID: leaf.ID, RoleID: rs[2].ID}}); err != nil {
		t.Fatal(err)
	}
	d.Counter.SetDelay(0)

	// The inherited role reaches a2 through a1's group alone.
	g.Roles, g.Version = nil, 2
	if err := st.Roles.PutGroup(ctx, g); err != nil {
		t.Fatal(err)
	}
	res, err = svc.Authorize(ctx, secret, "GET", "/v2/applications/x")
	if err != nil || !res.Decision.Allowed || res.Decision.Role != inherited.AuthzRole().Href() {
		t.Fatalf("after emptying the group, via the inherited group: %+v %v", res.Decision, err)
	}
	gi.Roles, gi.Version = nil, 2
	if err := st.Roles.PutGroup(ctx, gi); err != nil {
		t.Fatal(err)
	}
	if res, err = svc.Authorize(ctx, secret, "GET", "/v2/applications/x"); err != nil || res.Decision.Allowed {
		t.Fatalf("both groups empty: %+v %v", res.Decision, err)
	}
	// A group whose role is deleted grants nothing; one given a role back
	// grants again.
	g.Roles, g.Version = []string{rs[1].ID}, 3
	if err := st.Roles.PutGroup(ctx, g); err != nil {
		t.Fatal(err)
	}
	if res, err = svc.Authorize(ctx, secret, "GET", "/v2/applications/x"); err != nil || !res.Decision.Allowed {
		t.Fatalf("role added back: %+v %v", res.Decision, err)
	}
	if _, err := st.Roles.DeleteRole(ctx, leaf.ID, rs[1].ID); err != nil {
		t.Fatal(err)
	}
	if res, err = svc.Authorize(ctx, secret, "GET", "/v2/applications/x"); err != nil || res.Decision.Allowed {
		t.Fatalf("role deleted: %+v %v", res.Decision, err)
	}
}
