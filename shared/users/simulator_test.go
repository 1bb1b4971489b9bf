package users_test

import (
	"context"
	"strings"
	"testing"

	"cads/shared/authz"
	"cads/shared/caller"
	"cads/shared/domain"
)

// The policy simulator answers for a tenant's role that permits everything
// in its own account as the authorizer does: such a permit is inert on the
// user routes and on the entitlement administrator routes, and says so.
func TestSimulatorExplainsInertPermits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := e.deps.Store.Now()
	a := domain.Account{ID: "tenant1", Name: "Tenant", Keyword: "tenant", Parent: e.boot.RootAccount, Ancestors: []string{e.boot.RootAccount}, Created: now, Updated: now}
	if err := e.deps.Store.Accounts.CreateAccount(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	var ps []authz.Permission
	for _, m := range authz.Methods() {
		ps = append(ps, authz.Permission{Method: m, Effect: "permit", Spec: []string{"/v2/**"}})
	}
	role := domain.Role{AccountID: a.ID, ID: "all", Name: "Everything", Permissions: ps, Version: 1, Created: now, Updated: now}
	if err := e.deps.Store.Roles.CreateRole(ctx, role); err != nil {
		t.Fatal(err)
	}
	u := domain.Principal{ID: "mallory", Kind: domain.KindUser, Email: "mallory@example.com", Created: now, Updated: now}
	if err := e.deps.Store.Principals.CreatePrincipal(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := e.deps.Store.Principals.CreateKey(ctx, domain.AccessKey{ID: "k1", PrincipalID: u.ID, Type: "bearer", Account: a.ID, AccountAncestors: a.Ancestors, SecretHash: "x", Created: now}); err != nil {
		t.Fatal(err)
	}
	if err := e.deps.Store.Roles.PutGrant(ctx, domain.Grant{PrincipalID: u.ID, AccountID: a.ID, RoleID: role.ID, Via: "test"}); err != nil {
		t.Fatal(err)
	}
	p := caller.Principal{ID: u.ID, Kind: "user", AccountID: a.ID, KeyID: "k1"}
	for _, c := range []struct {
		method, path string
		allowed      bool
		reason       string
	}{
		{"POST", "/v2/users/" + e.boot.Operator + "/access-keys", false, "is inert here: user routes are decided only by roles that apply in the root account"},
		{"GET", "/v2/users", false, "is inert here: user routes"},
		{"POST", "/v2/accounts", false, "is inert here: creating accounts and writing entitlements is granted only by an entitlement administrator role"},
		{"POST", "/v2/accounts/" + a.ID + "/entitlements", false, "is inert here: creating accounts"},
		{"PATCH", "/v2/users/self", true, `permitted by role "Everything"`},
		{"DELETE", "/v2/applications/x", true, `permitted by role "Everything"`},
	} {
		st, body := e.call(p, "GET", "/v2/users/self/authorization", "/v2/users/self/authorization", nil, map[string]string{"method": c.method, "path": c.path}, nil)
		d, _ := body["decision"].(map[string]any)
		reason, _ := d["reason"].(string)
		if st != 200 || d["allowed"] != c.allowed || !strings.Contains(reason, c.reason) {
			t.Errorf("simulate %s %s: %d allowed=%v %q", c.method, c.path, st, d["allowed"], reason)
		}
	}
}
