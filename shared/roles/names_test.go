package roles_test

import (
	"strings"
	"testing"
)

// No role other than a built-in one takes a name that reads as a built-in
// role's, whichever way it is written (POST, merge patch, JSON Patch), and
// names that only resemble one stay free.
func TestRoleNamesThatReadAsBuiltIn(t *testing.T) {
	e := newEnv(t)
	base := "/v2/accounts/" + e.root + "/roles"
	role := e.must(e.call(e.op, "POST", base, map[string]any{"name": "Deployer"}), 200, "create role")
	href := role.str("href")
	countRoles := func() int { return len(e.must(e.call(e.op, "GET", base, nil), 200, "list roles").List) }
	before := countRoles()

	for _, c := range []struct{ name, builtin string }{
		{"Account\u00a0owner", "Account owner"},
		{"Editor\u200b", "Editor"},
		{"ＲＥＡＤＥＲ", "Reader"},
		{"account  OWNER", "Account owner"},
		{"Editor\u00ad", "Editor"},
		{"\u2003Reader", "Reader"},
		{"Entitlement\u3000administrator", "Entitlement administrator"},
		{"R\u0435ad\u0435r", "Reader"},               // Cyrillic е
		{"\u0415DITOR", "Editor"},                    // Cyrillic Е
		{"Acc\u043eunt \u043ewner", "Account owner"}, // Cyrillic о
	} {
		want := `reads as the built-in role "` + c.builtin + `"`
		if r := e.call(e.op, "POST", base, map[string]any{"name": c.name}); r.Status != 400 || !strings.Contains(r.msg(), want) {
			t.Errorf("POST %q: %d %s; want 400 with %q", c.name, r.Status, r.Raw, want)
		}
		if r := e.call(e.op, "PATCH", href, map[string]any{"name": c.name}); r.Status != 400 || !strings.Contains(r.msg(), want) {
			t.Errorf("merge patch %q: %d %s", c.name, r.Status, r.Raw)
		}
		if r := e.call(e.op, "PATCH", href, map[string]any{"name": c.name}, "application/merge-patch+json"); r.Status != 400 || !strings.Contains(r.msg(), want) {
			t.Errorf("merge patch (RFC 7386 type) %q: %d %s", c.name, r.Status, r.Raw)
		}
		jp := []map[string]any{{"op": "replace", "path": "/name", "value": c.name}}
		if r := e.call(e.op, "PATCH", href, jp, "application/json-patch+json"); r.Status != 400 || !strings.Contains(r.msg(), want) {
			t.Errorf("JSON Patch %q: %d %s", c.name, r.Status, r.Raw)
		}
	}
	if n := countRoles(); n != before {
		t.Errorf("%d roles after refused creates; want %d", n, before)
	}
	if r := e.must(e.call(e.op, "GET", href, nil), 200, "get role"); r.str("name") != "Deployer" {
		t.Errorf("a refused patch renamed the role: %s", r.Raw)
	}

	for _, name := range []string{"Editors", "Reader 2", "Account owners", "Readers\u00a0team"} {
		e.must(e.call(e.op, "POST", base, map[string]any{"name": name}), 200, "create "+name)
	}
	e.must(e.call(e.op, "PATCH", href, map[string]any{"name": "Editor in chief"}), 200, "rename to a free name")
}

// The text rule in the roles family: the body reader refuses control
// characters and lone surrogates in every body shape the family takes,
// naming the field and the code point, and nothing is stored.
func TestRoleTextRule(t *testing.T) {
	e := newEnv(t)
	base := "/v2/accounts/" + e.root + "/roles"
	role := e.must(e.call(e.op, "POST", base, map[string]any{"name": "Deployer"}), 200, "create role")
	href := role.str("href")
	countRoles := func() int { return len(e.must(e.call(e.op, "GET", base, nil), 200, "list roles").List) }
	before := countRoles()
	for _, c := range []struct {
		method, path, body, ct, msg string
	}{
		{"POST", base, `{"name":"Deploy\u0000er"}`, "", `field "name" holds the control character U+0000`},
		{"POST", base, `{"name":"x","description":"\u001b[31mred"}`, "", `field "description" holds the control character U+001B`},
		{"POST", base, `{"name":"x","description":"line\nbreak"}`, "", `U+000A`},
		{"POST", base, "{\"name\":\"x\u0085\"}", "", `U+0085`},
		{"POST", base, `{"name":"Editor\ud800"}`, "", `lone UTF-16 surrogate (U+D800)`},
		{"PATCH", href, `{"description":"\u0007"}`, "", `field "description" holds the control character U+0007`},
		{"PATCH", href, `[{"op":"replace","path":"/name","value":"a\u007f"}]`, "application/json-patch+json", `field "[0].value" holds the control character U+007F`},
		{"PATCH", href, `{"name":"\udc00"}`, "application/merge-patch+json", `U+DC00`},
	} {
		ct := []string{}
		if c.ct != "" {
			ct = append(ct, c.ct)
		}
		r := e.call(e.op, c.method, c.path, c.body, ct...)
		if r.Status != 400 || !strings.Contains(r.msg(), c.msg) {
			t.Errorf("%s %s: %d %s; want 400 with %q", c.method, c.body, r.Status, r.Raw, c.msg)
		}
	}
	if n := countRoles(); n != before {
		t.Errorf("%d roles after refused creates; want %d", n, before)
	}
	if r := e.must(e.call(e.op, "GET", href, nil), 200, "get role"); r.str("name") != "Deployer" || r.str("description") != "" {
		t.Errorf("a refused patch changed the role: %s", r.Raw)
	}
}
