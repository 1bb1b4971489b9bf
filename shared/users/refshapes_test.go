package users_test

import (
	"testing"
)

// PATCH /v2/users/{id} takes the reference document's phone; it is read
// back, cleared with "", and checked.
func TestPatchUserPhone(t *testing.T) {
	e := newEnv(t)
	op := e.operator()
	res, params := "/v2/users/{id}", map[string]string{"id": "self"}
	st, out := e.call(op, "PATCH", res, "/v2/users/self", params, nil, map[string]any{"phone": "+1 (555) 010-0199"})
	if st != 200 || out["phone"] != "+1 (555) 010-0199" {
		t.Fatalf("set phone: %d %v", st, out)
	}
	if st, out := e.call(op, "GET", res, "/v2/users/self", params, nil, nil); st != 200 || out["phone"] != "+1 (555) 010-0199" {
		t.Fatalf("read phone: %d %v", st, out)
	}
	st, out = e.call(op, "PATCH", res, "/v2/users/self", params, nil, map[string]any{"phone": "", "name": "Op"})
	if _, has := out["phone"]; st != 200 || has || out["name"] != "Op" {
		t.Fatalf("clear phone: %d %v", st, out)
	}
	for _, bad := range []map[string]any{
		{"phone": "call me"},
		{"phone": "+1 555 0100 0100 0100 0100 0100 0199"},
		{"phone": 5550100},
		{"phone": "555\n0100"},
		{"mobile": "555"},
	} {
		if st, out := e.call(op, "PATCH", res, "/v2/users/self", params, nil, bad); st != 400 {
			t.Errorf("PATCH %v: %d %v, want 400", bad, st, out)
		}
	}
}

// An access key with no account, expiry or last use has no such members
// (the reference document's are strings, never null).
func TestAccessKeyAbsentFields(t *testing.T) {
	e := newEnv(t)
	op := e.operator()
	st, out := e.call(op, "POST", "/v2/users/{id}/access-keys", "/v2/users/self/access-keys", map[string]string{"id": "self"}, nil, map[string]any{"type": "bearer"})
	if st != 200 {
		t.Fatalf("create: %d %v", st, out)
	}
	for _, f := range []string{"account", "expiry", "last_used"} {
		if _, has := out[f]; has {
			t.Errorf("%s present: %v", f, out)
		}
	}
	if out["secret_key"] == "" || out["durability"] != "persistent" {
		t.Errorf("key: %v", out)
	}
}

// The authorization is the caller's own: "self" and the caller's id read
// the same key; any other id is a 404 whether that user exists or not.
func TestAuthorizationByOwnID(t *testing.T) {
	e := newEnv(t)
	op := e.operator()
	const res = "/v2/users/{id}/authorization"
	_, self := e.call(op, "GET", res, "/v2/users/self/authorization", map[string]string{"id": "self"}, nil, nil)
	st, own := e.call(op, "GET", res, "/v2/users/"+op.ID+"/authorization", map[string]string{"id": op.ID}, nil, nil)
	if st != 200 || own["href"] != self["href"] || own["account"] != "/v2/accounts/"+op.AccountID {
		t.Fatalf("own id: %d %v (self: %v)", st, own, self)
	}
	st, sw := e.call(op, "POST", res, "/v2/users/"+op.ID+"/authorization", map[string]string{"id": op.ID}, nil, map[string]any{"account": "/v2/accounts/" + op.AccountID})
	if st != 200 || sw["durability"] != "session" || sw["secret_key"] == "" {
		t.Fatalf("switch with own id: %d %v", st, sw)
	}
	st, other := e.call(op, "POST", "/v2/users", "/v2/users", nil, nil, map[string]any{"email": "other@example.com"})
	if st != 200 {
		t.Fatalf("create user: %d %v", st, other)
	}
	for _, id := range []string{other["id"].(string), "nosuchuser"} {
		path := "/v2/users/" + id + "/authorization"
		g, gout := e.call(op, "GET", res, path, map[string]string{"id": id}, nil, nil)
		p, pout := e.call(op, "POST", res, path, map[string]string{"id": id}, nil, map[string]any{"account": "/v2/accounts/" + op.AccountID})
		if g != 404 || p != 404 || gout["error"].(map[string]any)["message"] != "no authorization at "+path+": it is the caller's own; use /v2/users/self/authorization" {
			t.Errorf("%s: GET %d %v, POST %d %v; want 404s naming only the path", id, g, gout, p, pout)
		}
	}
}
