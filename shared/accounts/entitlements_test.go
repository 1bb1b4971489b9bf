package accounts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cads/shared/domain"
)

func TestEntitlements(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root := e.root()
	a := e.account(root, "Customer", time.Now().UTC())
	other := e.account(root, "Other", time.Now().UTC())
	base := "/v2/accounts/" + a.ID + "/entitlements"

	for _, c := range []struct {
		name, body string
		want       int
		msg        string
	}{
		{"no resource", `{"quantity":1}`, 400, "resource is required: one of applications, address_sets, application_tests"},
		{"bad resource", `{"resource":"clusters","quantity":1}`, 400, `resource "clusters" is not a resource kind`},
		{"no quantity", `{"resource":"applications"}`, 400, "quantity is required"},
		{"negative quantity", `{"resource":"applications","quantity":-1}`, 400, "quantity must be an integer from 0 to 1000000"},
		{"fractional quantity", `{"resource":"applications","quantity":1.5}`, 400, `field "quantity"`},
		{"bad period", `{"resource":"applications","quantity":1,"period":"week"}`, 400, `period "week" is not a period: use one of month, year`},
		{"price as a string", `{"resource":"applications","quantity":1,"unit_price":"12"}`, 400, `field "unit_price" must be a number, not string`},
		{"price with cents of cents", `{"resource":"applications","quantity":1,"unit_price":1.234}`, 400, "at most 2 decimals"},
		{"negative price", `{"resource":"applications","quantity":1,"unit_price":-1}`, 400, "non-negative"},
		{"price too high", `{"resource":"applications","quantity":1,"unit_price":1000000.01}`, 400, "at most 1000000.00"},
		{"expiry before start", `{"resource":"applications","quantity":1,"started":"2030-01-02T00:00:00Z","expiry":"2030-01-01T00:00:00Z"}`, 400, "must be after started"},
		{"unknown field", `{"resource":"applications","quantity":1,"max":3}`, 400, `unknown field "max"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := e.call(e.op, "POST", base, c.body); r.Status != c.want || !strings.Contains(r.message(), c.msg) {
				t.Fatalf("%d %s, want %d with %q", r.Status, r.Raw, c.want, c.msg)
			}
		})
	}

	r := e.call(e.op, "POST", base, `{"resource":"applications","quantity":3,"unit_price":12.5,"plan_id":"pro-2026","expiry":"2099-01-01T00:00:00Z"}`)
	if r.Status != 200 || !strings.Contains(r.Raw, `"unit_price":12.50`) || r.str("period") != "month" || r.Obj["active"] != true || r.str("plan_id") != "pro-2026" {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	id := r.str("id")
	href := base + "/" + id
	if r.str("href") != href || r.str("account") != "/v2/accounts/"+a.ID {
		t.Fatalf("hrefs: %s", r.Raw)
	}
	if r := e.call(e.op, "POST", base, `{"resource":"address_sets","quantity":0,"period":"year","started":"2099-01-01T00:00:00Z"}`); r.Status != 200 || r.Obj["active"] != false {
		t.Fatalf("create a future one: %d %s", r.Status, r.Raw)
	}

	if r := e.call(e.op, "GET", href, ""); r.Status != 200 || r.str("id") != id {
		t.Fatalf("GET: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "GET", base+"?order=-resource", ""); r.Status != 200 || len(r.List) != 2 || r.List[0].(map[string]any)["resource"] != "applications" {
		t.Fatalf("list: %d %s", r.Status, r.Raw)
	}
	// Another account's entitlement is not found through this account.
	wrong := "/v2/accounts/" + other.ID + "/entitlements/" + id
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		body := "" // a GET or DELETE with a body is a 400 before anything is looked up
		if m == "PATCH" {
			body = `{"quantity":1}`
		}
		if r := e.call(e.op, m, wrong, body); r.Status != 404 {
			t.Errorf("%s through another account: %d %s", m, r.Status, r.Raw)
		}
	}
	for _, c := range []struct {
		name, body string
		want       int
		msg        string
	}{
		{"empty", `{}`, 400, "nothing to change"},
		{"resource", `{"resource":"address_sets"}`, 400, "resource cannot be changed"},
		{"expiry before start", `{"expiry":"2000-01-01T00:00:00Z"}`, 400, "must be after started"},
	} {
		if r := e.call(e.op, "PATCH", href, c.body); r.Status != c.want || !strings.Contains(r.message(), c.msg) {
			t.Errorf("PATCH %s: %d %s", c.name, r.Status, r.Raw)
		}
	}
	r = e.call(e.op, "PATCH", href, `{"quantity":5,"expiry":null,"plan_id":null,"unit_price":7}`)
	if r.Status != 200 || r.Obj["quantity"] != 5.0 || r.Obj["expiry"] != nil || r.Obj["plan_id"] != nil || !strings.Contains(r.Raw, `"unit_price":7.00`) {
		t.Fatalf("PATCH: %d %s", r.Status, r.Raw)
	}
	if limit, limited, err := e.st.Entitlements.Allowance(ctx, a.ID, domain.ResourceApplications); err != nil || !limited || limit != 5 {
		t.Fatalf("allowance after PATCH: %d %v %v", limit, limited, err)
	}
	if r := e.call(e.op, "DELETE", href, ""); r.Status != 200 || r.str("id") != id {
		t.Fatalf("DELETE: %d %s", r.Status, r.Raw)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := e.call(e.op, m, href, ""); r.Status != 404 {
			t.Errorf("%s after DELETE: %d %s", m, r.Status, r.Raw)
		}
	}
	if r := e.call(e.op, "GET", base+"/NOT-AN-ID", ""); r.Status != 404 {
		t.Errorf("invalid id: %d", r.Status)
	}

	// At most MaxEntitlementsPerAccount per account.
	for i := 0; i < domain.MaxEntitlementsPerAccount-1; i++ {
		if err := e.st.Entitlements.CreateEntitlement(ctx, domain.Entitlement{ID: fmt.Sprintf("e%d", i), Account: a.ID, Resource: domain.ResourceApplicationTests, Period: domain.PeriodMonth, Version: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.call(e.op, "POST", base, `{"resource":"applications","quantity":1}`); r.Status != 409 || !strings.Contains(r.message(), "the most an account can have") {
		t.Fatalf("over the cap: %d %s", r.Status, r.Raw)
	}
}

// Collections show only the members the caller may GET (docs/api.md#collection-reads): a
// Reader whose role denies one entitlement does not see it listed.
func TestEntitlementListIsFiltered(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.account(e.root(), "Customer", time.Now().UTC())
	var ids []string
	for _, q := range []int{1, 2} {
		r := e.call(e.op, "POST", "/v2/accounts/"+a.ID+"/entitlements", fmt.Sprintf(`{"resource":"applications","quantity":%d}`, q))
		if r.Status != 200 {
			t.Fatal(r.Raw)
		}
		ids = append(ids, r.str("id"))
	}
	roles, _ := e.st.Roles.RolesOf(ctx, []string{a.ID})
	for _, ro := range roles {
		if ro.Name != "Reader" {
			continue
		}
		ro.Permissions = append(ro.Permissions, authzDeny("GET", "/v2/accounts/"+a.ID+"/entitlements/"+ids[0]))
		ro.Version++
		if err := e.st.Roles.PutRole(ctx, ro); err != nil {
			t.Fatal(err)
		}
		if err := e.st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "reader", Kind: domain.KindUser, Email: "r@example.com"}); err != nil {
			t.Fatal(err)
		}
		if err := e.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "reader", AccountID: a.ID, RoleID: ro.ID, Via: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	p := e.op
	p.ID, p.AccountID = "reader", a.ID
	r := e.call(p, "GET", "/v2/accounts/"+a.ID+"/entitlements", "")
	if r.Status != 200 || len(r.List) != 1 || r.List[0].(map[string]any)["id"] != ids[1] {
		t.Fatalf("reader's list: %d %s", r.Status, r.Raw)
	}
}
