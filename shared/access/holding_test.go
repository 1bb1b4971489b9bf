package access_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/authz"
	"cads/shared/domain"
	"cads/shared/store"
)

// cost is what one Authorize cost: round trips in sequence, calls and
// read capacity units.
type cost struct {
	seq, calls int
	rcu        float64
}

func measure(t *testing.T, d testenv.Dynamo, f func()) cost {
	t.Helper()
	d.Counter.SetDelay(25 * time.Millisecond)
	defer d.Counter.SetDelay(0)
	d.Counter.Reset()
	f()
	c := d.Counter.Without("UpdateItem") // last_used: once a minute, not per request
	rcu, _ := c.Consumed()
	return cost{seq: c.Sequential(), calls: c.Total(), rcu: rcu}
}

// An allowed request whose granting role is among the first grants costs
// the same round trips and capacity units whatever the number of roles
// the caller holds beyond those and the number of roles its account
// defines; a refusal reads every held role and costs more with more.
func TestAllowedCostDoesNotGrowWithHeldOrDefinedRoles(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("one goroutine over hundreds of held and defined roles: run without the race detector (make test-unraced-light)")
	}
	type world struct {
		held, defined int
	}
	run := func(t *testing.T, w world) (allowed, refused cost) {
		d := testenv.NewDynamo(t)
		st := store.New(d.Client, d.Table)
		chain := tree(t, st, 1)
		acct := chain[1]
		held := roles(t, st, acct.ID, w.held, false)
		roles(t, st, acct.ID, w.defined, true) // inheritable: also never applies in acct itself
		secret := principalWithKey(t, st, acct, held)
		svc := access.New(access.NewStore(st), quiet)
		ctx := context.Background()
		// Touch last_used first, so that no measured request writes it.
		if _, err := svc.Authorize(ctx, secret, "GET", "/v2/users/self"); err != nil {
			t.Fatal(err)
		}
		allowed = measure(t, d, func() {
			if res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x"); err != nil || !res.Decision.Allowed {
				t.Fatalf("allowed: %+v %v", res.Decision, err)
			}
		})
		refused = measure(t, d, func() {
			res, err := svc.Authorize(ctx, secret, "DELETE", "/v2/applications/x")
			if err != nil || res.Decision.Allowed || res.Decision.Considered != w.held {
				t.Fatalf("refused: %+v %v, want a refusal considering all %d held roles", res.Decision, err, w.held)
			}
		})
		return allowed, refused
	}
	few := world{held: access.FirstGrants, defined: 0}
	base, baseRefused := run(t, few)
	for _, w := range []world{{held: 4 * access.FirstGrants}, {held: access.FirstGrants, defined: 40}} {
		t.Run(fmt.Sprintf("held%d/defined%d", w.held, w.defined), func(t *testing.T) {
			allowed, refused := run(t, w)
			if allowed != base {
				t.Errorf("allowed: %+v, want %+v as with %d held roles", allowed, base, few.held)
			}
			if w.defined > 0 && refused != baseRefused {
				t.Errorf("refused with %d roles defined but not held: %+v, want %+v", w.defined, refused, baseRefused)
			}
			if w.held > few.held && (refused.seq != 4 || refused.rcu <= baseRefused.rcu) {
				t.Errorf("refused with %d held roles: %+v, want 4 round trips and more than %+v", w.held, refused, baseRefused)
			}
		})
	}
}

// Self-service routes read no grant and no role; a later request of the
// same key that needs roles reads them then, on the warm entry.
func TestSelfServiceReadsNoRoles(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	chain := tree(t, st, 1)
	acct := chain[1]
	held := roles(t, st, acct.ID, 3, false)
	secret := principalWithKey(t, st, acct, held)
	clk := &clock{t: time.Now().UTC()}
	ctx := context.Background()
	for _, warm := range []bool{false, true} {
		opts := []access.Option{access.WithClock(clk.now)}
		if warm {
			opts = append(opts, access.WithStaleness(access.DefaultStaleness))
		}
		svc := access.New(access.NewStore(st), quiet, opts...)
		for _, path := range []string{"/v2/users/self/roles", "/v2/users/u1/roles", "/v2/users/self"} {
			d.Counter.Reset()
			res, err := svc.Authorize(ctx, secret, "GET", path)
			if err != nil || !res.Decision.Allowed {
				t.Fatalf("warm %v, GET %s: %+v %v", warm, path, res.Decision, err)
			}
			// The credential's BatchGet and the key account's GetItem
			// (the first request only, when warm).
			ops := d.Counter.ByOperation()
			if ops["Query"] != 0 || ops["BatchGetItem"] > 1 {
				t.Errorf("warm %v, GET %s: %v, want no Query and at most the credential's BatchGetItem", warm, path, ops)
			}
		}
		// A request that needs roles, after self-service ones: on the
		// warm entry it reads the grants and the roles, and nothing else.
		d.Counter.Reset()
		res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x")
		if err != nil || !res.Decision.Allowed {
			t.Fatalf("warm %v, after self-service: %+v %v", warm, res.Decision, err)
		}
		if ops := d.Counter.ByOperation(); warm && (ops["Query"] != 1 || ops["BatchGetItem"] != 1 || ops["GetItem"] != 0) {
			t.Errorf("warm entry read on: %v, want the grants' Query and the roles' BatchGetItem", ops)
		}
		// Another user's roles are not self-service: decided by roles,
		// and refused: warm or not, from grants read for this request.
		d.Counter.Reset()
		res, err = svc.Authorize(ctx, secret, "GET", "/v2/users/someoneelse/roles")
		if err != nil || res.Decision.Allowed || res.Decision.Class != authz.ClassGlobal {
			t.Fatalf("warm %v, another user's roles: %+v %v", warm, res.Decision, err)
		}
		if q := d.Counter.ByOperation()["Query"]; q != 1 {
			t.Errorf("warm %v, another user's roles: %v", warm, d.Counter.ByOperation())
		}
	}
}

// A warm entry read only as far as an allowed request needed reads on for
// a refusal, which is then decided with every held role; the entry kept
// then holds them all, and the next grant reads nothing; a refusal is
// decided again from the table.
func TestWarmEntryReadsOnForARefusal(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	chain := tree(t, st, 1)
	acct := chain[1]
	held := roles(t, st, acct.ID, 3*access.FirstGrants, false)
	// The last role (by id) permits DELETE: only a complete read finds it.
	last := held[len(held)-1]
	for _, r := range held {
		if r.ID > last.ID {
			last = r
		}
	}
	last.Permissions = append(last.Permissions, authz.Permission{Method: "DELETE", Effect: "permit", Spec: []string{"/v2/applications/*"}})
	last.Version++
	if err := st.Roles.PutRole(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	secret := principalWithKey(t, st, acct, held)
	clk := &clock{t: time.Now().UTC()}
	svc := access.New(access.NewStore(st), quiet, access.WithStaleness(access.DefaultStaleness), access.WithClock(clk.now))
	ctx := context.Background()
	if res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x"); err != nil || !res.Decision.Allowed {
		t.Fatalf("cold: %+v %v", res.Decision, err)
	}
	d.Counter.Reset()
	if res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/y"); err != nil || !res.Decision.Allowed {
		t.Fatalf("warm: %+v %v", res.Decision, err)
	}
	if got := d.Counter.Total(); got != 0 {
		t.Errorf("warm allowed request: %d calls, want 0", got)
	}
	// Granted by the role found last: the rest of the grants, then their roles.
	res, err := svc.Authorize(ctx, secret, "DELETE", "/v2/applications/x")
	if err != nil || !res.Decision.Allowed || res.Decision.Role != last.AuthzRole().Href() {
		t.Fatalf("granted by the last role: %+v %v", res.Decision, err)
	}
	if ops := d.Counter.ByOperation(); ops["Query"] != 1 || ops["BatchGetItem"] != 1 {
		t.Errorf("reading on: %v, want the rest of the grants and one BatchGetItem of their roles", ops)
	}
	d.Counter.Reset()
	res, err = svc.Authorize(ctx, secret, "PATCH", "/v2/applications/x")
	if err != nil || res.Decision.Allowed || res.Decision.Considered != len(held) {
		t.Fatalf("refusal: %+v %v, want one considering all %d roles", res.Decision, err, len(held))
	}
	if d.Counter.Total() == 0 || len(d.Counter.Eventual()) != 0 {
		t.Errorf("refusal on the completed entry: %v (%d eventually consistent), want a consistent read again", d.Counter.ByOperation(), len(d.Counter.Eventual()))
	}
	d.Counter.Reset()
	if res, err := svc.Authorize(ctx, secret, "DELETE", "/v2/applications/x"); err != nil || !res.Decision.Allowed {
		t.Fatalf("after the refusal: %+v %v", res.Decision, err)
	}
	if got := d.Counter.Total(); got != 0 {
		t.Errorf("a grant on the entry the refusal read: %d calls (%v), want 0", got, d.Counter.ByOperation())
	}
	// The bound still holds for the entry read on: at the first read's
	// bound it is read again.
	clk.add(access.DefaultStaleness)
	d.Counter.Reset()
	if _, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x"); err != nil {
		t.Fatal(err)
	}
	if d.Counter.Total() == 0 {
		t.Error("at the bound: nothing read")
	}
}

// The grants come in key order (by account id), so the first ones may all
// be in accounts the request cannot use: the authorizer then reads the
// rest in its second round trip and their roles in a third.
func TestFirstGrantsInOtherAccounts(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	chain := tree(t, st, 1) // root -> a1
	if err := st.Accounts.CreateAccount(ctx, domain.Account{ID: "a0", Name: "a0", Parent: "root", Ancestors: []string{"root"}}, nil); err != nil {
		t.Fatal(err)
	}
	// a0 sorts before a1: its grants come first.
	other := roles(t, st, "a0", access.FirstGrants, false)
	mine := roles(t, st, chain[1].ID, 1, false)
	secret := principalWithKey(t, st, chain[1], append(other, mine...))
	svc := access.New(access.NewStore(st), quiet)
	d.Counter.SetDelay(25 * time.Millisecond)
	defer d.Counter.SetDelay(0)
	d.Counter.Reset()
	res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x")
	if err != nil || !res.Decision.Allowed || res.Decision.Role != mine[0].AuthzRole().Href() {
		t.Fatalf("%+v %v", res.Decision, err)
	}
	if got, ops := d.Counter.Sequential(), d.Counter.ByOperation(); got != 3 || ops["Query"] != 2 || ops["BatchGetItem"] != 2 {
		t.Errorf("%d sequential (%v), want 3: two grants Queries, then one BatchGetItem of the role", got, ops)
	}
}
