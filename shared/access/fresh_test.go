package access_test

import (
	"context"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/store"
)

// A refusal never comes from a cache: a warm container that refused a
// request into an account the caller held nothing in grants it at once
// when a grant there is written, well within the staleness bound, in the
// authorizer and in a Decider (the switch of POST
// /v2/users/self/authorization). Every read behind the decisions is
// strongly consistent.
func TestRefusalIsDecidedFromTheTable(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	chain := tree(t, st, 2)
	home := roles(t, st, chain[1].ID, 1, false)
	secret := principalWithKey(t, st, chain[1], home)
	other := chain[2]
	// Not inheritable: u1's role in chain[1] does not apply in chain[2].
	target := roles(t, st, other.ID, 1, false)[0]
	clk := &clock{t: time.Now().UTC()}
	svc := access.New(access.NewStore(st), quiet, access.WithStaleness(access.DefaultStaleness), access.WithClock(clk.now))
	path := "/v2/accounts/" + other.ID

	if res, err := svc.Authorize(ctx, secret, "GET", path); err != nil || res.Decision.Allowed {
		t.Fatalf("before the grant: %+v %v, want a refusal", res.Decision, err)
	}
	p := caller.Principal{ID: "u1", Kind: domain.KindUser, AccountID: chain[1].ID, KeyID: "k1"}
	dec, err := svc.Decider(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := dec.CanSwitch(ctx, other); err != nil || res.Allowed {
		t.Fatalf("switch before the grant: %+v %v, want a refusal", res, err)
	}

	// As accepting an invitation does.
	if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: other.ID, RoleID: target.ID, Via: "test"}); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Millisecond)
	d.Counter.Reset()
	if res, err := svc.Authorize(ctx, secret, "GET", path); err != nil || !res.Decision.Allowed {
		t.Errorf("1 ms after the grant, warm: %+v %v, want allowed", res.Decision, err)
	}
	dec, err = svc.Decider(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := dec.CanSwitch(ctx, other); err != nil || !res.Allowed {
		t.Errorf("switch 1 ms after the grant, warm Decider: %+v %v, want allowed", res, err)
	}
	if ev := d.Counter.Eventual(); len(ev) != 0 {
		t.Errorf("decided with eventually consistent reads: %+v", ev)
	}

	// And the grant, once read, is what the warm path keeps: the next
	// request reads nothing.
	d.Counter.Reset()
	if res, err := svc.Authorize(ctx, secret, "GET", path); err != nil || !res.Decision.Allowed {
		t.Fatalf("again: %+v %v", res.Decision, err)
	}
	if n := d.Counter.Total(); n != 0 {
		t.Errorf("a warm grant read %d times (%v), want 0", n, d.Counter.ByOperation())
	}
}

// A cold decision reads everything strongly consistently: a just-created
// account, key or grant is found, and a just-revoked grant is not.
func TestColdDecisionReadsConsistently(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	chain := tree(t, st, 2)
	secret := principalWithKey(t, st, chain[2], roles(t, st, chain[2].ID, 2, false))
	svc := access.New(access.NewStore(st), quiet)
	d.Counter.Reset()
	for _, path := range []string{"/v2/applications/x", "/v2/accounts/" + chain[2].ID, "/v2/tests", "/v2/users/u1/access-keys"} {
		if _, err := svc.Authorize(ctx, secret, "GET", path); err != nil {
			t.Fatal(path, err)
		}
	}
	if d.Counter.Total() == 0 {
		t.Fatal("nothing read")
	}
	if ev := d.Counter.Eventual(); len(ev) != 0 {
		t.Errorf("the authorizer read eventually consistently: %+v", ev)
	}
}
