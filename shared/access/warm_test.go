package access_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/authz"
	"cads/shared/domain"
	"cads/shared/store"
)

// clock is a test clock shared by two "containers".
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A warm container grants from what it read, reading nothing, and still
// checks the secret and the key's expiry on every request; a refusal it
// decides again from the table, with strongly consistent reads only.
func TestWarmPathReadsNothing(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	chain := tree(t, st, 2)
	rs := roles(t, st, chain[2].ID, 3, false)
	secret := principalWithKey(t, st, chain[2], rs)
	clk := &clock{t: time.Now().UTC()}
	svc := access.New(access.NewStore(st), quiet, access.WithStaleness(access.DefaultStaleness), access.WithClock(clk.now))

	if res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x"); err != nil || !res.Decision.Allowed {
		t.Fatalf("cold: %+v %v", res.Decision, err)
	}
	d.Counter.Reset()
	for _, path := range []string{"/v2/applications/x", "/v2/applications/y/logs"} {
		res, err := svc.Authorize(ctx, secret, "GET", path)
		if err != nil || !res.Decision.Allowed {
			t.Fatalf("warm GET %s: %+v %v", path, res.Decision, err)
		}
	}
	if got := d.Counter.Total(); got != 0 {
		t.Errorf("warm decisions made %d DynamoDB calls (%v), want 0", got, d.Counter.ByOperation())
	}
	if res, err := svc.Authorize(ctx, secret, "GET", "/v2/tests"); err != nil || res.Decision.Allowed {
		t.Fatalf("warm GET /v2/tests: %+v %v, want a refusal", res.Decision, err)
	}
	if d.Counter.Total() == 0 {
		t.Error("a warm refusal read nothing: it came from the cache")
	}
	if ev := d.Counter.Eventual(); len(ev) != 0 {
		t.Errorf("a refusal decided with eventually consistent reads: %+v", ev)
	}
	if _, err := svc.Authorize(ctx, tampered(secret), "GET", "/v2/applications/x"); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("a wrong secret against a warm entry: %v", err)
	}
	// A request naming another account is another entry: its credential
	// is read cold; the roles, read within the bound by the first
	// request, come from the container's item cache.
	// The delay makes the calls made in parallel overlap whatever the
	// machine's load, so the sequential count is deterministic.
	d.Counter.Reset()
	d.Counter.SetDelay(25 * time.Millisecond)
	if res, err := svc.Authorize(ctx, secret, "GET", "/v2/accounts/"+chain[2].ID); err != nil || !res.Decision.Allowed {
		t.Fatal(res.Decision, err)
	}
	d.Counter.SetDelay(0)
	if got, q := d.Counter.Sequential(), d.Counter.ByOperation()["Query"]; got != 1 || q != 1 {
		t.Errorf("another target account: %d sequential round trips, %d Queries (%v), want 1 and 1 (the grants)", got, q, d.Counter.ByOperation())
	}

	// An expiry is compared with the clock on every request, warm or not.
	exp := clk.now().Add(300 * time.Millisecond)
	short := access.NewSecret("u1", "k9")
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k9", PrincipalID: "u1", Account: chain[2].ID, AccountAncestors: chain[2].Ancestors,
		Expiry: &exp, SecretHash: access.HashSecret(short)}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authorize(ctx, short, "GET", "/v2/applications/x"); err != nil {
		t.Fatal(err)
	}
	clk.add(400 * time.Millisecond)
	if _, err := svc.Authorize(ctx, short, "GET", "/v2/applications/x"); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("a key past its expiry, warm: %v", err)
	}
}

// Revocation across containers: one container (here: the store, as
// another function's container would write) changes what a key may do;
// the other, warm, container takes the change into account no later than
// the staleness bound, for each of the five changes the API promises.
func TestWarmPathRevocationWithinTheBound(t *testing.T) {
	const bound = access.DefaultStaleness
	for _, c := range []struct {
		name   string
		change func(t *testing.T, st *store.Store, w world)
		// denied: the request is refused as forbidden (else: unauthenticated)
		denied bool
	}{
		{"deleted key", func(t *testing.T, st *store.Store, w world) {
			if _, err := st.Principals.DeleteKey(context.Background(), "u1", "k1"); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"revoked grant", func(t *testing.T, st *store.Store, w world) {
			if err := st.Accounts.RevokeGrants(context.Background(), []domain.Grant{{PrincipalID: "u1", AccountID: w.role.AccountID, RoleID: w.role.ID}}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"edited role", func(t *testing.T, st *store.Store, w world) {
			r := w.role
			r.Permissions = append(append([]authz.Permission(nil), r.Permissions...), authz.Permission{Method: "GET", Effect: "deny", Spec: []string{"/v2/applications/**"}})
			r.Version++
			if err := st.Roles.PutRole(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"deleted role", func(t *testing.T, st *store.Store, w world) {
			if _, err := st.Roles.DeleteRole(context.Background(), w.role.AccountID, w.role.ID); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"deleted account", func(t *testing.T, st *store.Store, w world) {
			if _, err := st.Accounts.DeleteAccount(context.Background(), w.account.ID); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := testenv.NewDynamo(t)
			st := store.New(d.Client, d.Table)
			chain := tree(t, st, 2)
			role := roles(t, st, chain[2].ID, 1, false)[0]
			secret := principalWithKey(t, st, chain[2], []domain.Role{role})
			w := world{account: chain[2], role: role}
			clk := &clock{t: time.Now().UTC()}
			// Two containers of the authorizer over the same table.
			a := access.New(access.NewStore(st), quiet, access.WithStaleness(bound), access.WithClock(clk.now))
			b := access.New(access.NewStore(st), quiet, access.WithStaleness(bound), access.WithClock(clk.now))
			ctx := context.Background()
			for _, svc := range []*access.Service{a, b} {
				if res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x"); err != nil || !res.Decision.Allowed {
					t.Fatalf("before the change: %+v %v", res.Decision, err)
				}
			}
			c.change(t, st, w)
			clk.add(bound / 2)
			// Within the bound container a may still answer from what it
			// read; b, asked for the first time on this target, reads.
			if _, err := b.Authorize(ctx, secret, "GET", "/v2/accounts/"+chain[2].ID+"/roles"); err == nil && !c.denied {
				t.Errorf("a cold read after the change still authenticates")
			}
			clk.add(bound - bound/2)
			res, err := a.Authorize(ctx, secret, "GET", "/v2/applications/x")
			switch {
			case c.denied && (err != nil || res.Decision.Allowed):
				t.Errorf("at the bound: %+v %v, want a refusal", res.Decision, err)
			case !c.denied && !errors.Is(err, access.ErrUnauthenticated):
				t.Errorf("at the bound: %+v %v, want ErrUnauthenticated", res.Decision, err)
			}
		})
	}
}

type world struct {
	account domain.Account
	role    domain.Role
}

// A role is read once per staleness period per container, whatever the
// number of credentials holding it that container serves: a second
// principal's cold read takes the roles the first one's read, and the
// entry it makes expires with them, so a role change still takes effect
// within the bound.
func TestWarmPathSharesAnAccountsRoles(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	chain := tree(t, st, 1)
	acct := chain[1]
	rs := roles(t, st, acct.ID, 3, false)
	first := principalWithKey(t, st, acct, rs)
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u2", Kind: domain.KindUser, Email: "u2@example.com"}); err != nil {
		t.Fatal(err)
	}
	second := access.NewSecret("u2", "k2")
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k2", PrincipalID: "u2", Type: "bearer", Account: acct.ID, AccountAncestors: acct.Ancestors, SecretHash: access.HashSecret(second)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u2", AccountID: acct.ID, RoleID: rs[0].ID, Via: "test"}); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now().UTC()}
	svc := access.New(access.NewStore(st), quiet, access.WithStaleness(access.DefaultStaleness), access.WithClock(clk.now))
	allowed := func(secret string) bool {
		t.Helper()
		res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x")
		if err != nil {
			t.Fatal(err)
		}
		return res.Decision.Allowed
	}
	if !allowed(first) {
		t.Fatal("first key denied")
	}
	clk.add(600 * time.Millisecond)
	d.Counter.Reset()
	if !allowed(second) {
		t.Fatal("second key denied")
	}
	// Its credential and its grants; not the role.
	if ops := d.Counter.ByOperation(); ops["Query"] != 1 || ops["BatchGetItem"] != 1 {
		t.Errorf("second credential, same role within the bound: %v, want 1 Query and 1 BatchGetItem", ops)
	}
	// The role the second key holds loses its permission; at the bound of
	// the first read (not of the second key's own read) both see it.
	r := rs[0]
	r.Permissions = []authz.Permission{{Method: "GET", Effect: "permit", Spec: []string{"/v2/tests"}}}
	r.Version++
	if err := st.Roles.PutRole(ctx, r); err != nil {
		t.Fatal(err)
	}
	clk.add(400 * time.Millisecond)
	if allowed(second) {
		t.Error("the second key still allowed at the first read's bound")
	}
}
