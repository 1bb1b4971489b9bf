package roles_test

import (
	"context"
	"strings"
	"testing"

	"cads/shared/builtin"
)

func perms(r reply) []map[string]any {
	var out []map[string]any
	ps, _ := r.Body["permissions"].([]any)
	for _, p := range ps {
		out = append(out, p.(map[string]any))
	}
	return out
}

func hasPerm(r reply, method, effect, spec string) bool {
	for _, p := range perms(r) {
		s, _ := p["spec"].([]any)
		if p["method"] == method && p["effect"] == effect && len(s) == 1 && s[0] == spec {
			return true
		}
	}
	return false
}

func TestRoleLifecycle(t *testing.T) {
	e := newEnv(t)
	base := "/v2/accounts/" + e.root + "/roles"
	protected := "/v2/accounts/" + e.root

	// Create: the protected permit is added; the missing /v2 prefix too.
	r := e.must(e.call(e.op, "POST", base, map[string]any{
		"name": "Maintainer", "description": "maintenance only",
		"permissions": []map[string]any{{"method": "PATCH", "effect": "permit", "spec": []string{"/applications/*"}}},
	}), 200, "create role")
	id, href := r.str("id"), r.str("href")
	if href != base+"/"+id || !hasPerm(r, "GET", "permit", protected) || !hasPerm(r, "PATCH", "permit", "/v2/applications/*") {
		t.Fatalf("created role: %s", r.Raw)
	}
	if _, ok := r.Body["control"]; ok || r.Body["inheritable"] != false || r.Body["created"] == nil {
		t.Fatalf("created role fields: %s", r.Raw)
	}

	// Bad input is a 400 naming the problem, never a 5xx.
	for _, c := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"permissions": []any{}}, "name is required"},
		{map[string]any{"name": ""}, "name must not be empty"},
		{map[string]any{"name": strings.Repeat("x", 51)}, "at most 50"},
		{map[string]any{"name": "x", "control": true}, `unknown field "control"`},
		{map[string]any{"name": "Editor"}, "reserved"},
		{map[string]any{"name": "x", "maximum_auth_age_secs": 0}, "maximum_auth_age_secs"},
		{map[string]any{"name": "x", "permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications/{id}"}}}}, "permissions[0].spec[0]"},
		{map[string]any{"name": "x", "permissions": []map[string]any{{"method": "HEAD", "effect": "permit", "spec": []string{"/v2/a"}}}}, "permissions[0].method"},
		{map[string]any{"name": "x", "permissions": []map[string]any{{"method": "GET", "effect": "deny", "spec": []string{"/v2/accounts/**"}}}}, "lock"},
		{"[1,2]", "must be an object"},
	} {
		r := e.call(e.op, "POST", base, c.body)
		if r.Status != 400 || !strings.Contains(r.msg(), c.msg) {
			t.Errorf("POST %v: %d %s; want 400 with %q", c.body, r.Status, r.Raw, c.msg)
		}
	}
	if r := e.call(e.op, "POST", base, `{"name":"x"}`, "text/plain"); r.Status != 415 {
		t.Errorf("text/plain: %d %s", r.Status, r.Raw)
	}

	// Read, list.
	e.must(e.call(e.op, "GET", href, nil), 200, "get role")
	list := e.must(e.call(e.op, "GET", base+"?order=name", nil), 200, "list roles")
	names := []string{}
	for _, x := range list.List {
		names = append(names, x["name"].(string))
		if x["name"] == "Account owner" && x["control"] != true {
			t.Errorf("Account owner is not marked control: %v", x)
		}
	}
	if strings.Join(names, ",") != "Account owner,Editor,Entitlement administrator,Entitlement administrator,Maintainer,Reader" {
		t.Fatalf("roles by name: %v", names)
	}
	if r := e.call(e.op, "GET", base+"/nosuchrole", nil); r.Status != 404 {
		t.Fatalf("unknown role: %d %s", r.Status, r.Raw)
	}

	// Merge patch: fields present replace, null clears, arrays replace.
	r = e.must(e.call(e.op, "PATCH", href, map[string]any{"description": nil, "mfa_required": true,
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/tests/**"}}}}), 200, "merge patch")
	if r.Body["description"] != "" || r.Body["mfa_required"] != true || !hasPerm(r, "GET", "permit", "/v2/tests/**") ||
		hasPerm(r, "PATCH", "permit", "/v2/applications/*") {
		t.Fatalf("after merge patch: %s", r.Raw)
	}
	// The protected permit survives a merge patch that leaves it out.
	if !hasPerm(r, "GET", "permit", protected) || perms(r)[0]["spec"].([]any)[0] != protected {
		t.Fatalf("protected permit lost by a merge patch: %s", r.Raw)
	}

	jp := func(ops string) reply { return e.call(e.op, "PATCH", href, ops, "application/json-patch+json") }

	// JSON Patch: remove the protected permission -> it is kept.
	r = e.must(jp(`[{"op":"test","path":"/permissions/0/spec/0","value":"`+protected+`"},{"op":"remove","path":"/permissions/0"}]`), 200, "remove protected")
	if !hasPerm(r, "GET", "permit", protected) || len(perms(r)) != 2 {
		t.Fatalf("protected permit not kept: %s", r.Raw)
	}
	// Turning it into a deny would lock holders out: 400.
	if r := jp(`[{"op":"replace","path":"/permissions/0/effect","value":"deny"}]`); r.Status != 400 || !strings.Contains(r.msg(), "lock") {
		t.Fatalf("deny of the protected target: %d %s", r.Status, r.Raw)
	}
	// A deny elsewhere in the role that covers it: 400 as well.
	if r := jp(`[{"op":"add","path":"/permissions/-","value":{"method":"GET","effect":"deny","spec":["/v2/accounts/*"]}}]`); r.Status != 400 || !strings.Contains(r.msg(), "permissions[2]") {
		t.Fatalf("covering deny: %d %s", r.Status, r.Raw)
	}
	// Add, replace, move in one patch, applied as a whole.
	r = e.must(jp(`[
		{"op":"add","path":"/permissions/-","value":{"method":"DELETE","effect":"deny","spec":["/v2/tests/prod"]}},
		{"op":"replace","path":"/name","value":"Tester"},
		{"op":"add","path":"/maximum_auth_age_secs","value":3600}]`), 200, "json patch")
	if r.Body["name"] != "Tester" || r.Body["maximum_auth_age_secs"] != float64(3600) || !hasPerm(r, "DELETE", "deny", "/v2/tests/prod") {
		t.Fatalf("after json patch: %s", r.Raw)
	}
	for _, c := range []struct{ ops, msg string }{
		{`[{"op":"test","path":"/name","value":"Other"}]`, "does not apply"},
		{`[{"op":"replace","path":"/nothing","value":1}]`, "does not apply"},
		{`[{"op":"add","path":"/href","value":"/v2/x"}]`, "href is read-only"},
		{`[{"op":"add","path":"/extra","value":1}]`, `unknown field "extra"`},
		{`[{"op":"remove","path":"/name"}]`, "name is required"},
		{`[{"op":"replace","path":"/permissions/1/method","value":"TRACE"}]`, "permissions[1].method"},
		{`{"op":"remove"}`, "array of operations"},
		{`[{"op":"jump","path":"/name"}]`, "JSON Patch"},
	} {
		if r := jp(c.ops); r.Status != 400 || !strings.Contains(r.msg(), c.msg) {
			t.Errorf("patch %s: %d %s; want 400 with %q", c.ops, r.Status, r.Raw, c.msg)
		}
	}
	// A failed patch changed nothing.
	if r := e.must(e.call(e.op, "GET", href, nil), 200, "get"); r.Body["name"] != "Tester" || len(perms(r)) != 3 {
		t.Fatalf("role changed by refused patches: %s", r.Raw)
	}
	if r := e.call(e.op, "PATCH", href, `{"name":"x"}`, "text/plain"); r.Status != 415 {
		t.Fatalf("PATCH text/plain: %d %s", r.Status, r.Raw)
	}

	// Control roles: permissions can be refined; name, inheritable and the
	// role itself stay.
	owner := e.rootRoles()["Account owner"]
	ownerHref := base + "/" + owner.ID
	if r := e.call(e.op, "PATCH", ownerHref, map[string]any{"name": "Boss"}); r.Status != 400 {
		t.Fatalf("renaming a control role: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "PATCH", ownerHref, map[string]any{"inheritable": true}); r.Status != 400 {
		t.Fatalf("control role inheritable: %d %s", r.Status, r.Raw)
	}
	r = e.must(e.call(e.op, "PATCH", ownerHref, `[{"op":"add","path":"/permissions/-","value":{"method":"DELETE","effect":"deny","spec":["/v2/tests/keep"]}}]`, "application/json-patch+json"), 200, "refine control role")
	if r.Body["control"] != true || !hasPerm(r, "DELETE", "deny", "/v2/tests/keep") {
		t.Fatalf("refined control role: %s", r.Raw)
	}
	// The edit keeps which built-in role it is and its revision, so the
	// next deployment's upgrade applies only later changes to it.
	if stored, err := e.st.Roles.GetRole(context.Background(), owner.AccountID, owner.ID); err != nil ||
		stored.Builtin != builtin.KeyAccountOwner || stored.BuiltinRevision != builtin.Revision() {
		t.Fatalf("refined control role lost its built-in identity: %+v %v", stored, err)
	}
	if r := e.call(e.op, "DELETE", ownerHref, nil); r.Status != 409 {
		t.Fatalf("delete control role: %d %s", r.Status, r.Raw)
	}
	// Built-in names stay with their roles.
	if r := e.call(e.op, "PATCH", href, map[string]any{"name": "reader"}); r.Status != 400 || !strings.Contains(r.msg(), "reserved") {
		t.Fatalf("rename to a built-in name: %d %s", r.Status, r.Raw)
	}

	// Delete: the role must belong to the account of the path.
	sub, _ := e.account("Sub", e.root)
	if r := e.call(e.op, "DELETE", "/v2/accounts/"+sub.ID+"/roles/"+id, nil); r.Status != 404 && r.Status != 403 {
		t.Fatalf("delete through another account: %d %s", r.Status, r.Raw)
	}
	r = e.must(e.call(e.op, "DELETE", href, nil), 200, "delete role")
	if r.Body["name"] != "Tester" {
		t.Fatalf("deleted role: %s", r.Raw)
	}
	if r := e.call(e.op, "GET", href, nil); r.Status != 404 {
		t.Fatalf("deleted role still there: %d", r.Status)
	}
	if r := e.call(e.op, "DELETE", href, nil); r.Status != 404 {
		t.Fatalf("second delete: %d", r.Status)
	}
}
