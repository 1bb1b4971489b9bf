package roles_test

import (
	"strings"
	"testing"
)

func TestServiceUsers(t *testing.T) {
	e := newEnv(t)
	base := "/v2/accounts/" + e.root
	coll := base + "/service-users"

	// POST with no body at all, then with a configuration.
	r := e.must(e.call(e.op, "POST", coll, nil), 200, "create without body")
	if r.str("name") != "" || r.str("account") != base {
		t.Fatalf("service user: %s", r.Raw)
	}
	r = e.must(e.call(e.op, "POST", coll, map[string]any{"name": "ci", "description": "deploys from CI"}), 200, "create")
	href, email, id := r.str("href"), r.str("email"), r.str("id")
	keys, _ := r.Body["access_keys"].([]any)
	if len(keys) != 1 {
		t.Fatalf("keys: %s", r.Raw)
	}
	key := keys[0].(map[string]any)
	secret, _ := key["secret_key"].(string)
	if secret == "" || key["account"] != base || !strings.HasSuffix(email, ".invalid") || href != coll+"/"+id {
		t.Fatalf("created service user: %s", r.Raw)
	}
	for _, c := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"name": strings.Repeat("n", 33)}, "at most 32"},
		{map[string]any{"roles": []string{}}, `unknown field "roles"`},
	} {
		if r := e.call(e.op, "POST", coll, c.body); r.Status != 400 || !strings.Contains(r.msg(), c.msg) {
			t.Errorf("POST %v: %d %s", c.body, r.Status, r.Raw)
		}
	}
	if r := e.call(e.op, "POST", coll, `{"name":"x"}`, "text/plain"); r.Status != 415 {
		t.Fatalf("POST text/plain: %d %s", r.Status, r.Raw)
	}

	// The secret is never shown again.
	r = e.must(e.call(e.op, "GET", href, nil), 200, "get")
	if strings.Contains(r.Raw, secret) || strings.Contains(r.Raw, "secret_key") || len(r.Body["access_keys"].([]any)) != 1 {
		t.Fatalf("GET shows a secret or lost the key: %s", r.Raw)
	}
	r = e.must(e.call(e.op, "GET", coll+"?order=-name", nil), 200, "list")
	if len(r.List) != 2 || r.List[0]["name"] != "ci" || strings.Contains(r.Raw, secret) {
		t.Fatalf("list: %s", r.Raw)
	}

	// The key authenticates; the service user holds no role yet.
	if eff, _ := e.authorize(secret, "GET", coll); eff != "Deny" {
		t.Fatalf("service user without roles: %s", eff)
	}
	// Invited to a role of its account: accepted at creation, no queue.
	role := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "CI", "permissions": []map[string]any{permit("GET", coll)}}), 200, "role")
	r = e.must(e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": strings.ToUpper(email), "role": role.str("href")}), 200, "invite service user")
	if r.str("state") != "accepted" || r.Body["accepted"] == nil {
		t.Fatalf("service user invitation: %s", r.Raw)
	}
	if n := e.deliver(); n != 0 {
		t.Fatalf("a service user's invitation was queued (%d messages)", n)
	}
	e.must(e.call(secret, "GET", coll, nil), 200, "service user lists service users")
	if r := e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": email, "role": role.str("href")}); r.Status != 409 {
		t.Fatalf("second invitation to a held role: %d %s", r.Status, r.Raw)
	}
	// Bound to its account: no role of another account.
	sub, subRoles := e.account("Sub", e.root)
	r = e.call(e.op, "POST", "/v2/accounts/"+sub.ID+"/invitations", map[string]any{"user_email": email, "role": "/v2/accounts/" + sub.ID + "/roles/" + subRoles["Reader"].ID})
	if r.Status != 400 || !strings.Contains(r.msg(), "bound to their account") {
		t.Fatalf("service user invited into another account: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "nobody@service-users." + e.root + ".invalid", "role": role.str("href")}); r.Status != 400 {
		t.Fatalf("unknown service user: %d %s", r.Status, r.Raw)
	}
	// Through another account's path it does not exist.
	if r := e.call(e.op, "GET", "/v2/accounts/"+sub.ID+"/service-users/"+id, nil); r.Status != 404 {
		t.Fatalf("service user through another account: %d %s", r.Status, r.Raw)
	}

	// PATCH edits name and description only.
	r = e.must(e.call(e.op, "PATCH", href, map[string]any{"name": "deployer", "description": ""}), 200, "patch")
	if r.str("name") != "deployer" || r.str("description") != "" || r.str("email") != email {
		t.Fatalf("patched: %s", r.Raw)
	}
	if r := e.call(e.op, "PATCH", href, map[string]any{"email": "x@example.com"}); r.Status != 400 {
		t.Fatalf("patch email: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "PATCH", href, map[string]any{}); r.Status != 400 {
		t.Fatalf("empty patch: %d %s", r.Status, r.Raw)
	}

	// DELETE revokes its keys at once, and its invitations go with it.
	e.must(e.call(e.op, "DELETE", href, nil), 200, "delete")
	if eff, _ := e.authorize(secret, "GET", "/v2/users/self"); eff != "Unauthorized" {
		t.Fatalf("deleted service user's key: %s", eff)
	}
	if r := e.call(e.op, "GET", href, nil); r.Status != 404 {
		t.Fatalf("deleted service user: %d", r.Status)
	}
	if r := e.must(e.call(e.op, "GET", base+"/invitations", nil), 200, "invitations"); len(r.List) != 0 {
		t.Fatalf("invitations of the deleted service user remain: %s", r.Raw)
	}
	if r := e.call(e.op, "DELETE", href, nil); r.Status != 404 {
		t.Fatalf("second delete: %d", r.Status)
	}
}
