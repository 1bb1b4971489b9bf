package accounts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"cads/infra/local/localtest"
	"cads/shared/authz"
	"cads/shared/domain"
)

type client struct {
	t    *testing.T
	base string
}

type reply struct {
	Status int
	Raw    string
	Obj    map[string]any
	List   []map[string]any
}

func (c client) do(method, path, secret string, body any) reply {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := reply{Status: res.StatusCode, Raw: string(raw)}
	if strings.HasPrefix(string(raw), "[") {
		_ = json.Unmarshal(raw, &r.List)
	} else {
		_ = json.Unmarshal(raw, &r.Obj)
	}
	return r
}

// expect checks a status; for errors it also checks the API error body.
func (c client) expect(want int, method, path, secret string, body any) reply {
	c.t.Helper()
	r := c.do(method, path, secret, body)
	if r.Status != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Raw, want)
	}
	if want >= 400 {
		e, _ := r.Obj["error"].(map[string]any)
		if st, _ := r.Obj["status"].(float64); int(st) != want || e == nil || e["message"] == "" {
			c.t.Fatalf("%s %s: not the API error body: %s", method, path, r.Raw)
		}
	}
	return r
}

func (r reply) ids() []string {
	var out []string
	for _, a := range r.List {
		out = append(out, a["id"].(string))
	}
	slices.Sort(out)
	return out
}

// Sub-accounts (docs/api.md#sub-accounts) through the whole platform (gateway, authorizer, functions):
// access to a sub-account comes only from a role defined in it (while
// authenticated into it) or an inheritable role of an ancestor; revoking
// those grants removes the access; deleting an account revokes its keys.
func TestSubAccountAccessEndToEnd(t *testing.T) {
	p, _ := localtest.Start(t)
	c := client{t: t, base: p.URL}
	st := p.Deps.Store
	ctx := context.Background()
	op, root := p.Bootstrap.Secret, p.Bootstrap.RootAccount

	// The operator makes a1 (in root), then a2 inside a1 after switching.
	a1 := c.expect(200, "POST", "/v2/accounts", op, map[string]any{"name": "Reseller"}).Obj["id"].(string)
	c.expect(400, "POST", "/v2/accounts", op, map[string]any{"name": "Other", "parent": "/v2/accounts/" + a1})
	c.expect(409, "POST", "/v2/accounts", op, map[string]any{"name": "reseller"})
	opA1 := c.expect(200, "POST", "/v2/users/self/authorization", op, map[string]any{"account": "/v2/accounts/" + a1}).Obj["secret_key"].(string)
	a2r := c.expect(200, "POST", "/v2/accounts", opA1, map[string]any{"name": "Shop"})
	a2 := a2r.Obj["id"].(string)
	if a2r.Obj["parent"] != "/v2/accounts/"+a1 {
		t.Fatalf("a2's parent: %s", a2r.Raw)
	}
	if got := c.expect(200, "GET", "/v2/accounts", op, nil).ids(); !slices.Equal(got, sorted(root, a1, a2)) {
		t.Fatalf("the operator lists %v", got)
	}

	// Ann owns a1 (its non-inheritable Account owner role).
	ann := c.expect(200, "POST", "/v2/users", op, map[string]any{"email": "ann@example.com"}).Obj["id"].(string)
	annKey := c.expect(200, "POST", "/v2/users/"+ann+"/access-keys", op, map[string]any{"type": "bearer"}).Obj["secret_key"].(string)
	owner := func(account string) domain.Grant {
		roles, err := st.Roles.RolesOf(ctx, []string{account})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range roles {
			if r.Name == "Account owner" {
				return domain.Grant{PrincipalID: ann, AccountID: account, RoleID: r.ID, Via: "test"}
			}
		}
		t.Fatalf("no Account owner role in %s", account)
		return domain.Grant{}
	}
	grant := func(g domain.Grant) {
		if err := st.Roles.PutGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	revoke := func(g domain.Grant) {
		if err := st.Accounts.RevokeGrants(ctx, []domain.Grant{g}); err != nil {
			t.Fatal(err)
		}
	}
	ownA1, ownA2 := owner(a1), owner(a2)
	grant(ownA1)
	// (The operator binds ann's first key to a1: identity's switch refuses
	// keys bound to no account, see the report.)
	annA1 := c.expect(200, "POST", "/v2/users/"+ann+"/access-keys", op, map[string]any{"type": "bearer", "account": "/v2/accounts/" + a1}).Obj["secret_key"].(string)
	for _, path := range []string{"/v2/accounts/" + a1, "/v2/accounts/" + a1 + "/entitlements", "/v2/accounts/" + a1 + "/billing"} {
		c.expect(200, "GET", path, annA1, nil)
	}
	c.expect(200, "PATCH", "/v2/accounts/"+a1, annA1, map[string]any{"name": "Reseller Inc"})
	// Not the entitlement administrator: no sub-accounts, no entitlements,
	// no deleting.
	c.expect(403, "POST", "/v2/accounts", annA1, map[string]any{"name": "Mine"})
	c.expect(403, "POST", "/v2/accounts/"+a1+"/entitlements", annA1, map[string]any{"resource": "applications", "quantity": 100})
	c.expect(403, "DELETE", "/v2/accounts/"+a1, annA1, nil)
	// Owning a1 gives nothing in a2 (docs/api.md#applicable-roles), nor in root.
	for _, path := range []string{"/v2/accounts/" + a2, "/v2/accounts/" + a2 + "/entitlements", "/v2/accounts/" + a2 + "/billing", "/v2/accounts/" + root} {
		c.expect(403, "GET", path, annA1, nil)
	}
	c.expect(404, "POST", "/v2/users/self/authorization", annA1, map[string]any{"account": "/v2/accounts/" + a2})
	if got := c.expect(200, "GET", "/v2/accounts", annA1, nil).ids(); !slices.Equal(got, []string{a1}) {
		t.Fatalf("ann (owner of a1) lists %v", got)
	}

	// A role defined in a2: ann may switch into a2 and act
	// there, but a2's own role does not apply while authenticated in a1.
	grant(ownA2)
	c.expect(200, "GET", "/v2/accounts/"+a2, annA1, nil)
	c.expect(403, "GET", "/v2/accounts/"+a2+"/entitlements", annA1, nil)
	annA2 := c.expect(200, "POST", "/v2/users/self/authorization", annA1, map[string]any{"account": "/v2/accounts/" + a2}).Obj["secret_key"].(string)
	c.expect(200, "GET", "/v2/accounts/"+a2+"/billing", annA2, nil)
	if got := c.expect(200, "GET", "/v2/accounts", annA2, nil).ids(); !slices.Equal(got, sorted(a1, a2)) {
		t.Fatalf("ann (owner of a1 and a2) lists %v", got)
	}
	// Revoking it removes the access at once (docs/api.md#revoking-access).
	revoke(ownA2)
	c.expect(403, "GET", "/v2/accounts/"+a2+"/billing", annA2, nil)
	c.expect(403, "GET", "/v2/accounts/"+a2, annA1, nil)
	if got := c.expect(200, "GET", "/v2/accounts", annA1, nil).ids(); !slices.Equal(got, []string{a1}) {
		t.Fatalf("after revoking a2's role ann lists %v", got)
	}

	// An inheritable role of the parent (docs/api.md#inheritable-roles): it reaches a2 (also
	// its sub-resources, decided in a2's sub-account scope), not a1.
	support := domain.Role{AccountID: a1, ID: "support", Name: "Support", Inheritable: true, Version: 1, Permissions: []authz.Permission{
		{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts/*", "/v2/accounts/*/**"}}}}
	if err := st.Roles.CreateRole(ctx, support); err != nil {
		t.Fatal(err)
	}
	sup := domain.Grant{PrincipalID: ann, AccountID: a1, RoleID: "support", Via: "test"}
	grant(sup)
	c.expect(200, "GET", "/v2/accounts/"+a2, annA1, nil)
	c.expect(200, "GET", "/v2/accounts/"+a2+"/entitlements", annA1, nil)
	c.expect(200, "GET", "/v2/accounts/"+a2+"/billing", annA2, nil)
	if got := c.expect(200, "GET", "/v2/accounts", annA1, nil).ids(); !slices.Equal(got, sorted(a1, a2)) {
		t.Fatalf("ann with Support in a1 lists %v", got)
	}
	revoke(sup)
	c.expect(403, "GET", "/v2/accounts/"+a2+"/entitlements", annA1, nil)
	c.expect(403, "GET", "/v2/accounts/"+a2+"/billing", annA2, nil)

	// DELETE rules through the gateway; deleting revokes the keys bound to
	// the account (ann's and the operator's session keys) at once.
	grant(ownA2)
	c.expect(409, "DELETE", "/v2/accounts/"+a1, op, nil)
	c.expect(200, "DELETE", "/v2/accounts/"+a2, opA1, nil)
	c.expect(401, "GET", "/v2/users/self/authorization", annA2, nil)
	if gs, _ := st.Roles.Grants(ctx, ann); len(gs) != 1 || gs[0].AccountID != a1 {
		t.Fatalf("ann's grants after deleting a2: %+v", gs)
	}
	c.expect(200, "DELETE", "/v2/accounts/"+a1, op, nil)
	for _, k := range []string{annA1, opA1} {
		c.expect(401, "GET", "/v2/accounts", k, nil)
	}
	c.expect(200, "GET", "/v2/users/self/authorization", annKey, nil) // bound to no account: untouched
	if got := c.expect(200, "GET", "/v2/accounts", op, nil).ids(); !slices.Equal(got, []string{root}) {
		t.Fatalf("after the deletes the operator lists %v", got)
	}
	c.expect(200, "POST", "/v2/accounts", op, map[string]any{"name": "Reseller Inc"})
}

func sorted(s ...string) []string { slices.Sort(s); return s }
