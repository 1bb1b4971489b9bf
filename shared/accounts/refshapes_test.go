package accounts_test

import (
	"strings"
	"testing"
	"time"
)

// A client written for the reference document creates an entitlement
// from plan_id and started alone; it records the plan and allocates
// nothing, and it cannot be given a quantity without a resource.
func TestEntitlementFromPlan(t *testing.T) {
	e := newEnv(t)
	a := e.account(e.root(), "Planned", time.Now().UTC())
	base := "/v2/accounts/" + a.ID + "/entitlements"

	r := e.call(e.op, "POST", base, `{"plan_id":"pro-2026","started":"2030-01-01T00:00:00Z"}`)
	if r.Status != 200 || r.str("plan_id") != "pro-2026" || r.str("started") != "2030-01-01T00:00:00Z" || r.Obj["quantity"] != 0.0 {
		t.Fatalf("create from plan: %d %s", r.Status, r.Raw)
	}
	if _, has := r.Obj["resource"]; has {
		t.Fatalf("a plan entitlement names no resource: %s", r.Raw)
	}
	href := r.str("href")
	// started may be null (the reference's nullable): it starts now.
	if r := e.call(e.op, "POST", base, `{"plan_id":"basic","started":null}`); r.Status != 200 || r.Obj["active"] != true {
		t.Fatalf("create with started null: %d %s", r.Status, r.Raw)
	}
	for _, c := range []struct{ method, path, body, msg string }{
		{"POST", base, `{"plan_id":"pro","quantity":2}`, "quantity needs resource"},
		{"POST", base, `{"plan_id":"pro","seats":2}`, `unknown field "seats"`},
		{"PATCH", href, `{"quantity":2}`, "quantity needs resource"},
		// Removing the plan of a plan-only entitlement would leave one that
		// records nothing.
		{"PATCH", href, `{"plan_id":null}`, "plan_id cannot be removed"},
		{"PATCH", href, `{"plan_id":""}`, "plan_id cannot be removed"},
	} {
		if r := e.call(e.op, c.method, c.path, c.body); r.Status != 400 || !strings.Contains(r.message(), c.msg) {
			t.Errorf("%s %s: %d %s, want 400 with %q", c.method, c.body, r.Status, r.Raw, c.msg)
		}
	}
	// Without a plan_id the entitlement is still read without plan_id
	// (absent, not null: the reference's plan_id is a string).
	r = e.call(e.op, "POST", base, `{"resource":"applications","quantity":1}`)
	if _, has := r.Obj["plan_id"]; r.Status != 200 || has {
		t.Fatalf("create without plan: %d %s", r.Status, r.Raw)
	}
}

// An account without an owner has no owner member: the reference
// document's owner is a string, never null.
func TestAccountWithoutOwner(t *testing.T) {
	e := newEnv(t)
	r := e.call(e.op, "POST", "/v2/accounts", `{"name":"Ownerless"}`)
	if _, has := r.Obj["owner"]; r.Status != 200 || has {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "GET", r.str("href"), ""); r.Status != 200 || strings.Contains(r.Raw, `"owner"`) {
		t.Fatalf("GET: %d %s", r.Status, r.Raw)
	}
}
