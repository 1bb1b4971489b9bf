package access_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/authz"
	"cads/shared/domain"
	"cads/shared/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// tree makes a chain root -> a1 -> ... -> a<depth>. Deep chains store
// only the root and the last two accounts: the authorizer reads no account
// between them (that is the point of the ancestor list), and writing a
// thousand growing items through minidyn's transactions costs minutes.
func tree(t testing.TB, st *store.Store, depth int) []domain.Account {
	t.Helper()
	ctx := context.Background()
	chain := []domain.Account{{ID: "root", Name: "root", Ancestors: nil}}
	for i := 1; i <= depth; i++ {
		parent := chain[i-1]
		anc := append(append([]string{}, parent.Ancestors...), parent.ID)
		chain = append(chain, domain.Account{ID: fmt.Sprintf("a%d", i), Name: fmt.Sprintf("account %d", i), Parent: parent.ID, Ancestors: anc})
	}
	for i, a := range chain {
		if depth > 10 && i > 0 && i < depth-1 {
			continue
		}
		if err := st.Accounts.CreateAccount(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
	}
	return chain
}

// roles creates n roles of 20 permissions in account acct: each permits
// GET on /v2/applications/** and /v2/accounts/*, and on paths no request
// uses.
func roles(t testing.TB, st *store.Store, acct string, n int, inheritable bool) []domain.Role {
	t.Helper()
	var out []domain.Role
	for i := 0; i < n; i++ {
		var ps []authz.Permission
		for j := 0; j < 18; j++ {
			ps = append(ps, authz.Permission{Method: "GET", Effect: "permit", Spec: []string{fmt.Sprintf("/v2/thing%d/*", j)}})
		}
		ps = append(ps, authz.Permission{Method: "GET", Effect: "permit", Spec: []string{"/v2/applications/**"}},
			authz.Permission{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts/*"}})
		r := domain.Role{AccountID: acct, ID: fmt.Sprintf("r%s%v%d", acct, inheritable, i), Name: fmt.Sprintf("role %d", i), Inheritable: inheritable, Permissions: ps, Version: 1}
		if err := st.Roles.CreateRole(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// heldRoleCopies returns r, a role made by roles (its first), and the
// n-1 roles roles would have made after it, held by u1 as r is: their
// items and u1's grants of them are copies of r's, written in batches
// (the authorizer reads them; how the store writes them is tested in
// shared/store), where one transaction per role and per grant cost most
// of this package's CPU under -race.
func heldRoleCopies(t *testing.T, d testenv.Dynamo, r domain.Role, n int) []domain.Role {
	t.Helper()
	prefix, ok := strings.CutSuffix(r.ID, "0")
	if !ok || r.Name != "role 0" {
		t.Fatalf("role %s (%s) is not the first one roles makes", r.ID, r.Name)
	}
	out := []domain.Role{r}
	for i := 1; i < n; i++ {
		c := r
		c.ID, c.Name = prefix+strconv.Itoa(i), "role "+strconv.Itoa(i)
		out = append(out, c)
	}
	copies(t, d, [][2]string{{"RBAC#" + r.AccountID, "ROLE#" + r.ID}, {"PRINCIPAL#u1", "GRANT#" + r.AccountID + "#" + r.ID}}, n,
		func(i int) *strings.Replacer { return strings.NewReplacer(r.ID, out[i].ID, r.Name, out[i].Name) })
	return out
}

func principalWithKey(t testing.TB, st *store.Store, account domain.Account, held []domain.Role) string {
	t.Helper()
	ctx := context.Background()
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com"}); err != nil {
		t.Fatal(err)
	}
	secret := access.NewSecret("u1", "k1")
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k1", PrincipalID: "u1", Type: "bearer", Account: account.ID, AccountAncestors: account.Ancestors, SecretHash: access.HashSecret(secret)}); err != nil {
		t.Fatal(err)
	}
	for _, r := range held {
		if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: r.AccountID, RoleID: r.ID, Via: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	return secret
}

// The authorizer's budget: 2 sequential DynamoDB round trips per allowed
// decision, the same at depth 1 and 1000 and with 1 or 50 roles held (of
// which the first access.FirstGrants are read, by key). A refusal reads
// every held role that can apply: 2 round trips when the first grants
// were all of them, 4 otherwise (the rest of the grants, then their roles).
func TestAuthorizeRoundTripsDoNotGrowWithDepthOrRoles(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("one goroutine over account trees a thousand deep: run without the race detector (make test-unraced-light)")
	}
	for _, depth := range []int{1, 10, 100, 1000} {
		for _, n := range []int{1, 50} {
			if testing.Short() && depth > 100 {
				continue
			}
			t.Run(fmt.Sprintf("depth%d/roles%d", depth, n), func(t *testing.T) {
				d := testenv.NewDynamo(t)
				st := store.New(d.Client, d.Table)
				chain := tree(t, st, depth)
				leaf := chain[len(chain)-1]
				own, inh := roles(t, st, leaf.ID, 1, false), roles(t, st, "root", 1, true)
				secret := principalWithKey(t, st, leaf, append(own, inh...))
				held := append(heldRoleCopies(t, d, own[0], n), inh...)
				svc := access.New(access.NewStore(st), quiet)

				// The delay makes parallel calls overlap even on a loaded machine
				// under -race, so Sequential() counts waves, not scheduling luck.
				d.Counter.SetDelay(25 * time.Millisecond)
				d.Counter.Reset()
				res, err := svc.Authorize(context.Background(), secret, "GET", "/v2/applications/app1/logs")
				if err != nil {
					t.Fatal(err)
				}
				if !res.Decision.Allowed {
					t.Fatalf("denied: %s", res.Decision.Reason)
				}
				if got := d.Counter.Sequential(); got != 2 {
					t.Errorf("sequential round trips = %d, want 2 (calls %v)", got, d.Counter.ByOperation())
				}
				// BatchGet + the first grants' Query, then one BatchGet of
				// the roles they name, the key account's GetItem and the
				// last_used update.
				if got, ops := d.Counter.Total(), d.Counter.ByOperation(); got != 5 || ops["BatchGetItem"] != 2 {
					t.Errorf("total round trips = %d, want 5 with 2 BatchGetItem (calls %v)", got, ops)
				}
				if got := d.Counter.ByOperation()["UpdateItem"]; got != 1 {
					t.Errorf("first use: last_used written %d times, want 1", got)
				}

				// A /v2/accounts/{id} path reads the named account in the
				// same first round trip.
				d.Counter.Reset()
				res, err = svc.Authorize(context.Background(), secret, "GET", "/v2/accounts/"+leaf.ID)
				if err != nil || !res.Decision.Allowed {
					t.Fatalf("account path: %+v %v", res.Decision, err)
				}
				if got := d.Counter.Sequential(); got != 2 {
					t.Errorf("account path: sequential round trips = %d, want 2", got)
				}
				// The named account is the key's: it was read already. The
				// key was used a moment ago, so its last_used is not
				// written again (a write whose condition fails is billed).
				if got := d.Counter.Total(); got != 3 {
					t.Errorf("account path: total round trips = %d, want 3 (calls %v)", got, d.Counter.ByOperation())
				}

				// A refusal is decided with every role that applies.
				d.Counter.Reset()
				res, err = svc.Authorize(context.Background(), secret, "DELETE", "/v2/applications/app1")
				if err != nil || res.Decision.Allowed || res.Decision.Considered != len(held) {
					t.Fatalf("refusal: %+v %v, want a refusal considering %d roles", res.Decision, err, len(held))
				}
				seq, calls := 2, 4
				if len(held) > access.FirstGrants {
					seq, calls = 4, 6
				}
				if got, all := d.Counter.Sequential(), d.Counter.Total(); got != seq || all != calls {
					t.Errorf("refusal with %d roles held: %d sequential / %d calls, want %d / %d (calls %v)", len(held), got, all, seq, calls, d.Counter.ByOperation())
				}
				if got := d.Counter.ByOperation()["UpdateItem"]; got != 0 {
					t.Errorf("last_used written %d times within the minute, want 0", got)
				}

				// A session key, a session key minted with it and a key
				// minted with that: the origin and the parent are read in
				// the second round trip with the key's account, in one
				// BatchGetItem, so they cost what a persistent key does.
				k1 := &domain.KeyRef{Principal: "u1", ID: "k1"}
				s1 := lineageKey(t, st, "u1", "s1", leaf, k1, k1, nil)
				s2 := lineageKey(t, st, "u1", "s2", leaf, k1, &domain.KeyRef{Principal: "u1", ID: "s1"}, nil)
				k3 := lineageKey(t, st, "u1", "k3", leaf, k1, &domain.KeyRef{Principal: "u1", ID: "s2"}, nil)
				for name, secret := range map[string]string{"session": s1, "session of a session": s2, "minted with a session": k3} {
					d.Counter.Reset()
					res, err := svc.Authorize(context.Background(), secret, "GET", "/v2/applications/app1/logs")
					if err != nil || !res.Decision.Allowed {
						t.Fatalf("%s: %+v %v", name, res.Decision, err)
					}
					if got := d.Counter.Sequential(); got != 2 {
						t.Errorf("%s: sequential round trips = %d, want 2 (calls %v)", name, got, d.Counter.ByOperation())
					}
					// BatchGet + grants Query; the roles' BatchGet, the
					// BatchGet of the key account and the lineage, the
					// last_used update.
					if got, ops := d.Counter.Total(), d.Counter.ByOperation(); got != 5 || ops["BatchGetItem"] != 3 || ops["GetItem"] != 0 {
						t.Errorf("%s: total round trips = %d, want 5 with 3 BatchGetItem (calls %v)", name, got, ops)
					}
					// On its own account's path no account read is needed,
					// but the lineage is: one call more than a persistent key.
					d.Counter.Reset()
					if _, err := svc.Authorize(context.Background(), secret, "GET", "/v2/accounts/"+leaf.ID); err != nil {
						t.Fatal(err)
					}
					if seq, got := d.Counter.Sequential(), d.Counter.Total(); seq != 2 || got != 4 {
						t.Errorf("%s, account path: %d sequential / %d calls, want 2 / 4 (calls %v)", name, seq, got, d.Counter.ByOperation())
					}
				}
			})
		}
	}
}

func TestAuthorizeRefusesBadKeys(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	chain := tree(t, st, 1)
	held := roles(t, st, chain[1].ID, 1, false)
	secret := principalWithKey(t, st, chain[1], held)
	svc := access.New(access.NewStore(st), quiet)
	ctx := context.Background()

	if _, err := svc.Authorize(ctx, secret, "GET", "/v2/applications"); err != nil {
		t.Fatalf("good key refused: %v", err)
	}
	for _, bad := range []string{"", "garbage", access.NewSecret("u1", "k1"), access.NewSecret("u2", "k1"), tampered(secret)} {
		if _, err := svc.Authorize(ctx, bad, "GET", "/v2/applications"); !errors.Is(err, access.ErrUnauthenticated) {
			t.Errorf("secret %q: %v, want ErrUnauthenticated", bad, err)
		}
	}
	// An expired key is refused from its expiry on.
	past := time.Now().Add(-time.Second)
	exp := access.NewSecret("u1", "k2")
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k2", PrincipalID: "u1", Account: chain[1].ID, SecretHash: access.HashSecret(exp), Expiry: &past}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authorize(ctx, exp, "GET", "/v2/applications"); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("expired key: %v", err)
	}
	// A key whose account is gone is dead, even if the sweep missed it.
	orphan := access.NewSecret("u1", "k3")
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k3", PrincipalID: "u1", Account: "gone", AccountAncestors: []string{"root"}, SecretHash: access.HashSecret(orphan)}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authorize(ctx, orphan, "GET", "/v2/applications"); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("key of a deleted account: %v", err)
	}
	// Revocation applies to the very next request: nothing is cached.
	if _, err := st.Principals.DeleteKey(ctx, "u1", "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authorize(ctx, secret, "GET", "/v2/applications"); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("revoked key: %v", err)
	}
}

// A role's change applies to the holder's next request, and roles of
// accounts outside the request's hierarchy never apply (docs/api.md#applicable-roles).
func TestDecisionsFollowStoredRoles(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	chain := tree(t, st, 2) // root -> a1 -> a2
	ctx := context.Background()
	if err := st.Accounts.CreateAccount(ctx, domain.Account{ID: "other", Name: "other", Ancestors: []string{"root"}, Parent: "root"}, nil); err != nil {
		t.Fatal(err)
	}
	inh := roles(t, st, "a1", 1, true)[0]  // applies in a2, not in a1
	own := roles(t, st, "a1", 1, false)[0] // applies in a1 only
	foreign := roles(t, st, "other", 1, false)[0]
	secret := principalWithKey(t, st, chain[2], []domain.Role{inh, own, foreign})
	svc := access.New(access.NewStore(st), quiet)

	res, err := svc.Authorize(ctx, secret, "GET", "/v2/applications/x")
	if err != nil || !res.Decision.Allowed || res.Decision.Role != inh.AuthzRole().Href() {
		t.Fatalf("inheritable role from the parent: %+v, %v", res.Decision, err)
	}
	// Deny in the only granting role: refused.
	inh.Permissions = append(inh.Permissions, authz.Permission{Method: "GET", Effect: "deny", Spec: []string{"/v2/applications/x"}})
	inh.Version++
	if err := st.Roles.PutRole(ctx, inh); err != nil {
		t.Fatal(err)
	}
	res, err = svc.Authorize(ctx, secret, "GET", "/v2/applications/x")
	if err != nil || res.Decision.Allowed {
		t.Fatalf("after adding a deny: %+v, %v", res.Decision, err)
	}
}

// tampered changes the secret's last character (to a different one: a
// plain replacement would be a no-op one time in 32).
func tampered(secret string) string {
	last := byte('a')
	if secret[len(secret)-1] == 'a' {
		last = 'b'
	}
	return secret[:len(secret)-1] + string(last)
}
