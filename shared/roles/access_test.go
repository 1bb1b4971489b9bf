package roles_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/authz"
	"cads/shared/domain"
	"cads/shared/ids"
)

// whoCan asks GET /v2/accounts/{acct}/access for method and path with
// secret, following every Link with pages of limit, and returns the
// principals listed (hrefs) with the members as answered.
func (e *env) whoCan(secret, acct, method, path string, limit int) ([]string, []map[string]any) {
	e.t.Helper()
	q := fmt.Sprintf("/v2/accounts/%s/access?method=%s&path=%s&limit=%d", acct, method, path, limit)
	var hrefs []string
	var members []map[string]any
	for range 100 {
		r := e.must(e.call(secret, "GET", q, nil), 200, "who can "+method+" "+path)
		if len(r.List) > limit {
			e.t.Fatalf("page of %d members, limit %d", len(r.List), limit)
		}
		for _, m := range r.List {
			hrefs = append(hrefs, m["principal"].(string))
			members = append(members, m)
		}
		link := r.Header["Link"]
		if link == "" {
			if !sort.StringsAreSorted(idsOf(hrefs)) {
				e.t.Fatalf("not in principal id order: %v", hrefs)
			}
			return hrefs, members
		}
		u, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
		if err != nil {
			e.t.Fatalf("Link %q: %v", link, err)
		}
		q = fmt.Sprintf("/v2/accounts/%s/access?method=%s&path=%s&limit=%d&cursor=%s", acct, method, path, limit, u.Query().Get("cursor"))
	}
	e.t.Fatal("more than 100 pages")
	return nil, nil
}

func idsOf(hrefs []string) []string {
	out := make([]string, len(hrefs))
	for i, h := range hrefs {
		out[i] = h[strings.LastIndexByte(h, '/')+1:]
	}
	return out
}

// TestWhoCanMatchesTheAuthorizer is the property: in random worlds of
// roles (permits and denies, inheritable or not), groups, grants, users
// and service users, for random requests asked in an account and in its
// sub-account, a principal is listed exactly when the authorizer allows
// its key in that account the request.
func TestWhoCanMatchesTheAuthorizer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := testenv.Operator(e.boot)
	type principal struct {
		id, href string
		svcOf    string            // a service user's account
		keys     map[string]string // account -> secret
	}
	methods := []string{"GET", "DELETE", "PATCH"}
	// Both answers must occur, or the property holds vacuously.
	var listed, refused int
	t.Cleanup(func() {
		if !t.Failed() && (listed == 0 || refused == 0) {
			t.Errorf("vacuous: %d principals listed, %d refused", listed, refused)
		}
	})
	// Under the race detector one seed (the other runs without it, make
	// test-unraced-light): each is a few hundred sequential decisions.
	seeds := uint64(2)
	if testenv.RaceEnabled {
		seeds = 1
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 30))
			pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
			a, aRoles := e.account(fmt.Sprintf("whocan a%d", seed), e.root)
			b, _ := e.account(fmt.Sprintf("whocan b%d", seed), a.ID)
			accts := []domain.Account{a, b}
			patterns := func(acct domain.Account) []string {
				return []string{"/v2/applications/**", "/v2/applications/*", "/v2/applications/x1", "/v2/applications/x1/actions",
					"/v2/address-sets/*", "/v2/accounts/" + acct.ID + "/**", "/v2/accounts/*/roles", "/v2/**", "/v2/accounts/" + b.ID}
			}
			now := e.st.Now()
			roles := map[string][]domain.Role{a.ID: {aRoles["Account owner"], aRoles["Reader"]}}
			for _, acct := range accts {
				for range 3 {
					var ps []authz.Permission
					for range 1 + rng.IntN(3) {
						eff := "permit"
						if rng.IntN(4) == 0 {
							eff = "deny"
						}
						ps = append(ps, authz.Permission{Method: pick(methods), Effect: eff, Spec: []string{pick(patterns(acct))}})
					}
					valid, err := authz.ValidatePermissions(ps)
					if err != nil {
						t.Fatal(err)
					}
					r := domain.Role{AccountID: acct.ID, ID: ids.New(), Name: "r" + ids.New(), Inheritable: rng.IntN(2) == 0,
						Permissions: valid, Version: 1, Created: now, Updated: now}
					if err := e.st.Roles.CreateRole(ctx, r); err != nil {
						t.Fatal(err)
					}
					roles[acct.ID] = append(roles[acct.ID], r)
				}
			}
			groups := map[string][]domain.Group{}
			for _, acct := range accts {
				for range 2 {
					g := domain.Group{AccountID: acct.ID, ID: ids.New(), Name: "g" + ids.New(), Version: 1, Created: now, Updated: now}
					for _, r := range roles[acct.ID] {
						if rng.IntN(3) == 0 {
							g.Roles = append(g.Roles, r.ID)
						}
					}
					if err := e.st.Roles.CreateGroup(ctx, g); err != nil {
						t.Fatal(err)
					}
					groups[acct.ID] = append(groups[acct.ID], g)
				}
			}
			grant := func(p string, acct domain.Account) {
				for _, r := range roles[acct.ID] {
					if rng.IntN(4) == 0 {
						if err := e.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: p, AccountID: acct.ID, RoleID: r.ID, Via: "test", Created: now}); err != nil {
							t.Fatal(err)
						}
					}
				}
				for _, g := range groups[acct.ID] {
					if rng.IntN(3) == 0 {
						if err := e.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: p, AccountID: acct.ID, Group: g.ID, Via: "test", Created: now}); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			// The operator holds the root's roles; everyone else is of this world.
			ps := []principal{{id: op.ID, href: "/v2/users/" + op.ID, keys: map[string]string{a.ID: e.keyFor(op.ID, a), b.ID: e.keyFor(op.ID, b)}}}
			for i := range 6 {
				sec, p := e.user(fmt.Sprintf("u%d-%d@example.com", seed, i), a)
				ps = append(ps, principal{id: p.ID, href: "/v2/users/" + p.ID, keys: map[string]string{a.ID: sec, b.ID: e.keyFor(p.ID, b)}})
				grant(p.ID, a)
				grant(p.ID, b)
			}
			for _, acct := range accts {
				id, sec := e.serviceUser(acct)
				ps = append(ps, principal{id: id, href: "/v2/accounts/" + acct.ID + "/service-users/" + id, svcOf: acct.ID, keys: map[string]string{acct.ID: sec}})
				grant(id, acct)
			}
			requests := [][2]string{
				{"DELETE", "/v2/applications/x1"}, {"GET", "/v2/applications/x1"}, {"PATCH", "/v2/applications/x2"},
				{"GET", "/v2/applications/x1/actions"}, {"DELETE", "/v2/address-sets/s1"},
				{"GET", "/v2/accounts/" + b.ID + "/roles"}, {"GET", "/v2/accounts/" + b.ID}, {"PATCH", "/v2/accounts/" + b.ID + "/roles/r1"},
			}
			for _, acct := range accts {
				for _, rq := range requests {
					if acct.ID == b.ID && strings.HasPrefix(rq[1], "/v2/accounts/") && !strings.HasPrefix(rq[1], "/v2/accounts/"+b.ID) {
						continue
					}
					var want []string
					for _, p := range ps {
						if sec, ok := p.keys[acct.ID]; ok && e.allowed(sec, rq[0], rq[1]) {
							want = append(want, p.href)
						}
					}
					listed, refused = listed+len(want), refused+len(ps)-len(want)
					got, members := e.whoCan(e.op, acct.ID, rq[0], rq[1], 2+rng.IntN(3))
					slices.Sort(want)
					gotSorted := slices.Clone(got)
					slices.Sort(gotSorted)
					if !slices.Equal(gotSorted, want) {
						t.Errorf("in %s, who can %s %s: listed %v, the authorizer allows %v", acct.ID, rq[0], rq[1], gotSorted, want)
					}
					for _, m := range members {
						if m["role"] == nil || m["reason"] == "" {
							t.Errorf("member without its role and reason: %v", m)
						}
					}
				}
			}
		})
	}
}

// TestWhoCanRules: the route's refusals and answers that need no world.
func TestWhoCanRules(t *testing.T) {
	e := newEnv(t)
	a, aRoles := e.account("whocan rules", e.root)
	other, _ := e.account("whocan other", e.root)
	b, _ := e.account("whocan rules sub", a.ID)
	owner, ownerP := e.user("owner@example.com", a, aRoles["Account owner"])
	reader, readerP := e.user("reader@example.com", a, aRoles["Reader"])
	base := "/v2/accounts/" + a.ID + "/access"

	t.Run("owner asks, reader may not", func(t *testing.T) {
		got, _ := e.whoCan(owner, a.ID, "DELETE", "/v2/applications/x1", 100)
		if !slices.Equal(got, []string{"/v2/users/" + ownerP.ID}) {
			t.Errorf("who can delete an application: %v, want the owner alone", got)
		}
		got, _ = e.whoCan(owner, a.ID, "GET", "/v2/applications/x1", 100)
		if !slices.Contains(got, "/v2/users/"+readerP.ID) || !slices.Contains(got, "/v2/users/"+ownerP.ID) {
			t.Errorf("who can read an application: %v, want the owner and the reader", got)
		}
		r := e.call(reader, "GET", base+"?method=GET&path=/v2/applications", nil)
		if r.Status != 403 {
			t.Fatalf("reader asked: %d %s", r.Status, r.Raw)
		}
	})
	t.Run("grants through a group name it", func(t *testing.T) {
		ctx := context.Background()
		now := e.st.Now()
		g := domain.Group{AccountID: a.ID, ID: ids.New(), Name: "ops", Roles: []string{aRoles["Editor"].ID}, Version: 1, Created: now, Updated: now}
		if err := e.st.Roles.CreateGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
		_, p := e.user("member@example.com", a)
		if err := e.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: p.ID, AccountID: a.ID, Group: g.ID, Via: "test", Created: now}); err != nil {
			t.Fatal(err)
		}
		_, members := e.whoCan(owner, a.ID, "PUT", "/v2/applications/x1", 100)
		found := false
		for _, m := range members {
			if m["principal"] == "/v2/users/"+p.ID {
				found = true
				gs, _ := m["groups"].([]any)
				if m["role"] != "/v2/accounts/"+a.ID+"/roles/"+aRoles["Editor"].ID || len(gs) != 1 || gs[0] != "/v2/accounts/"+a.ID+"/groups/"+g.ID {
					t.Errorf("member through a group: %v", m)
				}
			}
		}
		if !found {
			t.Errorf("the group's member is not listed: %v", members)
		}
	})
	for _, c := range []struct{ name, query, msg string }{
		{"no method", "?path=/v2/applications", "method and path are required"},
		{"bad method", "?method=TRACE&path=/v2/applications", "method must be one of"},
		{"bad path", "?method=GET&path=/v2/applications/../x", "path:"},
		{"self-service", "?method=GET&path=/v2/users/self", "self-service"},
		{"another tenant's account", "?method=GET&path=/v2/accounts/" + other.ID, "neither this account nor one of its sub-accounts"},
		{"unknown account", "?method=GET&path=/v2/accounts/" + ids.New(), "neither this account nor one of its sub-accounts"},
		{"user route outside the root", "?method=GET&path=/v2/users", "ask in the root account"},
		{"bad cursor", "?method=GET&path=/v2/applications&cursor=xyz", "cursor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.call(owner, "GET", base+c.query, nil)
			if r.Status != 400 || !strings.Contains(r.msg(), c.msg) {
				t.Fatalf("%d %s, want 400 saying %q", r.Status, r.Raw, c.msg)
			}
		})
	}
	t.Run("a sub-account's path, nothing from above the caller's account", func(t *testing.T) {
		op := "/v2/users/" + testenv.Operator(e.boot).ID
		got, _ := e.whoCan(owner, a.ID, "GET", "/v2/accounts/"+b.ID+"/roles", 100)
		if slices.Contains(got, op) {
			t.Errorf("a tenant's owner asks about its sub-account: %v lists the operator, whose grant is the root's", got)
		}
		got, _ = e.whoCan(owner, a.ID, "GET", "/v2/accounts/"+a.ID+"/roles", 100)
		if !slices.Contains(got, "/v2/users/"+ownerP.ID) || slices.Contains(got, op) {
			t.Errorf("a tenant's owner asks: %v, want its owner and not the operator, whose grant is the root's", got)
		}
		got, _ = e.whoCan(e.op, a.ID, "GET", "/v2/accounts/"+a.ID+"/roles", 100)
		if !slices.Contains(got, op) || !slices.Contains(got, "/v2/users/"+ownerP.ID) {
			t.Errorf("the operator asks: %v, want the operator (administrator below the root) and the tenant's owner", got)
		}
	})
}

// serviceUser creates a service user of acct with its key, as the roles
// function does, and returns its id and secret.
func (e *env) serviceUser(acct domain.Account) (string, string) {
	e.t.Helper()
	now := e.st.Now()
	u := domain.ServiceUser{ID: ids.New(), Kind: domain.KindServiceUser, Account: acct.ID, Name: "robot", Created: now, Updated: now}
	u.Email = domain.ServiceUserEmail(acct.ID, u.ID)
	k := domain.AccessKey{ID: ids.New(), PrincipalID: u.ID, Type: "bearer", Durability: domain.DurabilityPersistent,
		Account: acct.ID, AccountAncestors: acct.Ancestors, Created: now}
	secret := access.NewSecret(u.ID, k.ID)
	k.SecretHash = access.HashSecret(secret)
	if err := e.st.Principals.CreateServiceUser(context.Background(), u, k); err != nil {
		e.t.Fatal(err)
	}
	return u.ID, secret
}
