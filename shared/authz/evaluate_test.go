package authz

import (
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	operatorOwn := mustCompile(t, Role{ID: "ea", AccountID: "r0", Name: "Entitlement administrator", Permissions: []Permission{
		perm("GET", "permit", "/v2/accounts/r0"),
		perm("POST", "permit", "/v2/accounts"),
	}})
	operatorInh := mustCompile(t, Role{ID: "eainh", AccountID: "r0", Name: "Entitlement administrator", Inheritable: true, Permissions: []Permission{
		perm("GET", "permit", "/v2/accounts/*", "/v2/accounts/*/roles"),
		perm("POST", "permit", "/v2/accounts/*/invitations"),
	}})
	a1Editor := mustCompile(t, Role{ID: "ed", AccountID: "a1", Name: "Editor", Permissions: []Permission{
		perm("GET", "permit", "/v2/accounts/a1", "/v2/applications**"),
		perm("DELETE", "permit", "/v2/applications/*"),
		perm("DELETE", "deny", "/v2/applications/prod"),
	}})
	a2Owner := mustCompile(t, Role{ID: "own", AccountID: "a2", Name: "Account owner", Permissions: []Permission{
		perm("GET", "permit", "/v2/accounts/a2", "/v2/accounts/a2/**", "/v2/applications**"),
	}})
	held := []*CompiledRole{a1Editor, a2Owner}
	operator := []*CompiledRole{operatorOwn, operatorInh}

	inAs := func(roles []*CompiledRole, method, path, key string) Input {
		target, _ := Target(method, path, key)
		return Input{Method: method, Path: path, PrincipalID: "u1", KeyAccount: key, Target: target, TargetAncestors: ancestorsOf[target], Held: roles}
	}
	in := func(method, path, key string) Input { return inAs(held, method, path, key) }
	op := func(method, path, key string) Input { return inAs(operator, method, path, key) }
	cases := []struct {
		name    string
		in      Input
		allowed bool
		status  int
		reason  string
	}{
		{"non-canonical path first", in("GET", "/v2/users/self/../u2", "a1"), false, 400, `dot segment`},
		{"encoded slash", in("GET", "/v2/applications%2Fx", "a1"), false, 400, `percent-encoding`},
		{"self-service needs no role", Input{Method: "GET", Path: "/v2/users/self/access-keys", PrincipalID: "u9"}, true, 200, `self-service: GET /v2/users/self/access-keys`},
		{"self-service by own id", Input{Method: "DELETE", Path: "/v2/users/u9/roles/r1", PrincipalID: "u9", KeyAccount: "a1"}, true, 200, `self-service`},
		{"no account: only self-service", Input{Method: "GET", Path: "/v2/applications", PrincipalID: "u1", Held: held}, false, 403, msgNoAccount},
		{"no account: not even a switch check", Input{Method: "GET", Path: "/v2/accounts/a1", PrincipalID: "u1", Held: held}, false, 403, msgNoAccount},
		{"editor in its account", in("GET", "/v2/applications/app1/logs", "a1"), true, 200,
			`permitted by role "Editor" (/v2/accounts/a1/roles/ed) permissions[0] GET /v2/applications** (decided in account a1, authenticated scope)`},
		{"deny in the editor role", inAs(held[:1], "DELETE", "/v2/applications/prod", "a1"), false, 403,
			`role "Editor" (/v2/accounts/a1/roles/ed) would permit but its deny permissions[2] DELETE /v2/applications/prod matches (decided in account a1, authenticated scope)`},
		{"a2's owner role does not apply in a1", in("GET", "/v2/accounts/a1/roles", "a1"), false, 403,
			`no permission of the 1 applicable role matches GET /v2/accounts/a1/roles (decided in account a1, authenticated scope)`},
		{"a2's own role applies with a key into a2", in("GET", "/v2/accounts/a2/roles", "a2"), true, 200, `"Account owner"`},
		{"a2's own role does not apply from a1 (sub-account scope)", in("GET", "/v2/accounts/a2/roles", "a1"), false, 403,
			`no role applies to this request, so nothing permits GET /v2/accounts/a2/roles (decided in account a2, sub-account scope)`},
		{"switch into a2 uses a2's own roles", in("GET", "/v2/accounts/a2", "a1"), true, 200, `(decided in account a2, switch scope)`},
		{"target above the key's account", in("GET", "/v2/accounts/a1/roles", "a2"), false, 403, `neither the account this key is authenticated into ("a2") nor one of its sub-accounts`},
		{"operator in root", op("POST", "/v2/accounts", "r0"), true, 200, `"Entitlement administrator" (/v2/accounts/r0/roles/ea)`},
		{"operator's inherited role in a deep sub-account", op("GET", "/v2/accounts/a3/roles", "r0"), true, 200, `(/v2/accounts/r0/roles/eainh) permissions[0] GET /v2/accounts/*/roles (decided in account a3, sub-account scope)`},
		{"operator's inherited role does not apply in root", op("GET", "/v2/accounts/r0/roles", "r0"), false, 403, `no permission of the 1 applicable role`},
		{"operator looks up a sub-account", op("GET", "/v2/accounts/a3", "r0"), true, 200, `eainh`},
		{"empty Target means the key's account", Input{Method: "GET", Path: "/v2/applications", PrincipalID: "u1", KeyAccount: "a1", Held: held}, true, 200, `Editor`},
		{"empty Target on an account path is refused", Input{Method: "GET", Path: "/v2/accounts/a1/roles", PrincipalID: "u1", KeyAccount: "a1", Held: held}, false, 403, `not the account this request addresses`},
	}
	for _, c := range cases {
		d := Evaluate(c.in)
		if d.Allowed != c.allowed || d.Status != c.status || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s: allowed %v status %d reason\n  %s\nwant %v %d containing\n  %s", c.name, d.Allowed, d.Status, d.Reason, c.allowed, c.status, c.reason)
		}
		if d.Reason == "" || d.Explain() != d.Reason {
			t.Errorf("%s: Reason not filled", c.name)
		}
	}
}

func TestCanSwitch(t *testing.T) {
	a2Owner := mustCompile(t, Role{ID: "own", AccountID: "a2", Name: "Account owner", Permissions: []Permission{perm("GET", "permit", "/v2/accounts/a2")}})
	a1Inh := mustCompile(t, Role{ID: "inh", AccountID: "a1", Name: "Sub reader", Inheritable: true, Permissions: []Permission{perm("GET", "permit", "/v2/accounts/*")}})
	if d := CanSwitch([]*CompiledRole{a2Owner}, "a2", ancestorsOf["a2"]); !d.Allowed {
		t.Errorf("own role: %s", d.Reason)
	}
	if d := CanSwitch([]*CompiledRole{a1Inh}, "a3", ancestorsOf["a3"]); !d.Allowed {
		t.Errorf("inherited role: %s", d.Reason)
	}
	if d := CanSwitch([]*CompiledRole{a1Inh}, "a1", ancestorsOf["a1"]); d.Allowed {
		t.Errorf("inheritable role applied in its own account: %s", d.Reason)
	}
	if d := CanSwitch([]*CompiledRole{a2Owner}, "z1", nil); d.Allowed || d.Reason == "" {
		t.Errorf("other hierarchy: %+v", d)
	}
	for _, bad := range []string{"", "a2/roles", ".."} {
		if d := CanSwitch([]*CompiledRole{a2Owner}, bad, nil); d.Allowed || d.Status != 400 || d.Reason == "" {
			t.Errorf("CanSwitch(%q) = %+v", bad, d)
		}
	}
}
