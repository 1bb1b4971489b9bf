package access_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/authz"
	"cads/shared/domain"
	"cads/shared/store"
)

func allMethods(spec string) []authz.Permission {
	var ps []authz.Permission
	for _, m := range authz.Methods() {
		ps = append(ps, authz.Permission{Method: m, Effect: "permit", Spec: []string{spec}})
	}
	return ps
}

// A tenant's role that permits everything in its own account grants nothing
// on the user routes (global) and on account creation and entitlement
// writes (entitlement administrator), in the authorizer's usual two round
// trips; the root is taken from the key account's own item, so a key item
// that names the wrong ancestors cannot make a tenant's account the root.
func TestRouteClassesInTheAuthorizer(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	chain := tree(t, st, 2) // root -> a1 -> a2
	a1 := chain[1]
	everything := domain.Role{AccountID: a1.ID, ID: "all", Name: "Everything", Permissions: allMethods("/v2/**"), Version: 1}
	if err := st.Roles.CreateRole(ctx, everything); err != nil {
		t.Fatal(err)
	}
	secret := principalWithKey(t, st, a1, []domain.Role{everything})
	svc := access.New(access.NewStore(st), quiet)

	d.Counter.SetDelay(25 * time.Millisecond)
	for _, c := range []struct{ method, path, inert string }{
		{"GET", "/v2/users", "user routes are decided only by roles that apply in the root account"},
		{"GET", "/v2/users/op", "user routes are decided only by roles that apply in the root account"},
		{"POST", "/v2/users/op/access-keys", "user routes are decided only by roles that apply in the root account"},
		{"DELETE", "/v2/users/op/access-keys/k9", "user routes are decided only by roles that apply in the root account"},
		{"POST", "/v2/accounts", "only by an entitlement administrator role"},
		{"POST", "/v2/accounts/a1/entitlements", "only by an entitlement administrator role"},
	} {
		d.Counter.Reset()
		res, err := svc.Authorize(ctx, secret, c.method, c.path)
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision.Allowed || !strings.Contains(res.Decision.Reason, c.inert) || !strings.Contains(res.Decision.Reason, "Everything") {
			t.Errorf("%s %s: %+v", c.method, c.path, res.Decision)
		}
		if got := d.Counter.Sequential(); got != 2 {
			t.Errorf("%s %s: sequential round trips = %d, want 2", c.method, c.path, got)
		}
	}
	d.Counter.SetDelay(0)
	// Its own identity and its own account stay its own.
	for _, c := range [][2]string{{"PATCH", "/v2/users/u1"}, {"POST", "/v2/applications"}, {"GET", "/v2/accounts/a1/entitlements"}, {"PATCH", "/v2/accounts/a1"}} {
		if res, err := svc.Authorize(ctx, secret, c[0], c[1]); err != nil || !res.Decision.Allowed {
			t.Errorf("%s %s: %+v %v", c[0], c[1], res.Decision, err)
		}
	}

	// A key item claiming a1 has no ancestors (a1 would then be its own
	// root): the decision takes the root from a1's item, so the role in a1
	// still cannot reach the user routes.
	lying := access.NewSecret("u1", "k2")
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k2", PrincipalID: "u1", Type: "bearer", Account: a1.ID, SecretHash: access.HashSecret(lying)}); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Authorize(ctx, lying, "GET", "/v2/users/op")
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision.Allowed || !strings.Contains(res.Decision.Reason, "decided in the root account root") {
		t.Errorf("key item without ancestors: %+v", res.Decision)
	}

	// The same role defined in the root account decides the user routes,
	// whatever account the key is in.
	rootAll := domain.Role{AccountID: "root", ID: "rootall", Name: "Users", Permissions: allMethods("/v2/users/**"), Version: 1}
	if err := st.Roles.CreateRole(ctx, rootAll); err != nil {
		t.Fatal(err)
	}
	if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: "root", RoleID: rootAll.ID, Via: "test"}); err != nil {
		t.Fatal(err)
	}
	res, err = svc.Authorize(ctx, secret, "GET", "/v2/users/op")
	if err != nil || !res.Decision.Allowed || res.Decision.RoleName != "Users" {
		t.Errorf("a root role on a user route: %+v %v", res.Decision, err)
	}
	// ...but it is no entitlement administrator.
	if res, err := svc.Authorize(ctx, secret, "POST", "/v2/accounts"); err != nil || res.Decision.Allowed {
		t.Errorf("POST /v2/accounts by a custom root role: %+v %v", res.Decision, err)
	}
}
