package authz

import (
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	operatorOwn := mustCompile(t, Role{ID: "ea", AccountID: "r0", Name: "Entitlement administrator", EntitlementAdministrator: true, Permissions: []Permission{
		perm("GET", "permit", "/v2/accounts/r0"),
		perm("POST", "permit", "/v2/accounts"),
		perm("GET", "permit", "/v2/users", "/v2/users/*"),
	}})
	operatorInh := mustCompile(t, Role{ID: "eainh", AccountID: "r0", Name: "Entitlement administrator", Inheritable: true, EntitlementAdministrator: true, Permissions: []Permission{
		perm("GET", "permit", "/v2/accounts/*", "/v2/accounts/*/roles"),
		perm("POST", "permit", "/v2/accounts/*/invitations", "/v2/accounts/*/entitlements"),
	}})
	// A tenant's custom role that permits everything, in its own account a1,
	// and the same with the entitlement administrator's name.
	a1All := mustCompile(t, Role{ID: "all", AccountID: "a1", Name: "Everything", Permissions: []Permission{
		perm("GET", "permit", "/v2/**"), perm("POST", "permit", "/v2/**"), perm("PATCH", "permit", "/v2/**"),
		perm("PUT", "permit", "/v2/**"), perm("DELETE", "permit", "/v2/**"),
	}})
	a1Named := mustCompile(t, Role{ID: "fake", AccountID: "a1", Name: "Entitlement administrator", Permissions: []Permission{
		perm("POST", "permit", "/v2/accounts", "/v2/accounts/a1/entitlements"),
	}})
	// A custom role the operator made in the root account.
	rootCustom := mustCompile(t, Role{ID: "rc", AccountID: "r0", Name: "User admin", Permissions: []Permission{
		perm("PATCH", "permit", "/v2/users/*"), perm("POST", "permit", "/v2/accounts"),
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
	op := func(method, path, key string) Input { i := inAs(operator, method, path, key); i.Root = "r0"; return i }
	tenant := func(roles []*CompiledRole, method, path, key string) Input {
		i := inAs(roles, method, path, key)
		i.Root = "r0"
		return i
	}
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
		// Route classes: no pattern of a tenant's role reaches a user route
		// or an entitlement administrator route.
		{"tenant's ** role: another user is a global route", tenant([]*CompiledRole{a1All}, "GET", "/v2/users/u2", "a1"), false, 403,
			`no role applies to this request, so nothing permits GET /v2/users/u2 (decided in the root account r0, global route); role "Everything" (/v2/accounts/a1/roles/all) permissions[0] GET /v2/** would permit it but is inert here: user routes are decided only by roles that apply in the root account`},
		{"tenant's ** role: the user list", tenant([]*CompiledRole{a1All}, "GET", "/v2/users", "a1"), false, 403, `is inert here`},
		{"tenant's ** role: minting another user's key", tenant([]*CompiledRole{a1All}, "POST", "/v2/users/u2/access-keys", "a1"), false, 403, `is inert here`},
		{"tenant's ** role: its own identity is not global", tenant([]*CompiledRole{a1All}, "PATCH", "/v2/users/u1", "a1"), true, 200, `(decided in account a1, authenticated scope)`},
		{"tenant's ** role: creating an account", tenant([]*CompiledRole{a1All}, "POST", "/v2/accounts", "a1"), false, 403,
			`entitlement administrator route); role "Everything" (/v2/accounts/a1/roles/all) permissions[1] POST /v2/** would permit it but is inert here: creating accounts and writing entitlements is granted only by an entitlement administrator role`},
		{"tenant's ** role: an entitlement of its own account", tenant([]*CompiledRole{a1All}, "POST", "/v2/accounts/a1/entitlements", "a1"), false, 403, `is inert here`},
		{"tenant's ** role: changing an entitlement", tenant([]*CompiledRole{a1All}, "DELETE", "/v2/accounts/a1/entitlements/e1", "a1"), false, 403, `is inert here`},
		{"tenant's ** role: reading its entitlements is an account route", tenant([]*CompiledRole{a1All}, "GET", "/v2/accounts/a1/entitlements", "a1"), true, 200, `(decided in account a1, authenticated scope)`},
		{"a role named like the administrator is not one", tenant([]*CompiledRole{a1Named}, "POST", "/v2/accounts", "a1"), false, 403, `is inert here`},
		{"operator's root roles decide user routes", op("GET", "/v2/users/u2", "r0"), true, 200, `(decided in the root account r0, global route)`},
		{"operator switched into a sub-account still uses root roles", op("GET", "/v2/users", "a3"), true, 200, `(decided in the root account r0, global route)`},
		{"operator's custom root role grants a user route", tenant([]*CompiledRole{rootCustom}, "PATCH", "/v2/users/u2", "r0"), true, 200, `"User admin"`},
		{"operator's custom root role is not an administrator", tenant([]*CompiledRole{rootCustom}, "POST", "/v2/accounts", "r0"), false, 403, `is inert here`},
		{"operator's inherited administrator role writes entitlements below", op("POST", "/v2/accounts/a3/entitlements", "r0"), true, 200, `eainh`},
		{"global route without a known root", inAs(operator, "GET", "/v2/users/u2", "r0"), false, 403, `root account of this key's account is not known`},
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

func TestClassOf(t *testing.T) {
	cases := []struct {
		method, path string
		want         Class
	}{
		{"GET", "/v2/users", ClassGlobal},
		{"POST", "/v2/users", ClassGlobal},
		{"GET", "/v2/users/u2", ClassGlobal},
		{"POST", "/v2/users/u2/access-keys", ClassGlobal},
		{"PATCH", "/v2/users/u2/invitations/i1", ClassGlobal},
		{"PATCH", "/v2/users/self", ClassAccount},
		{"PATCH", "/v2/users/u1", ClassAccount}, // the caller's own id
		{"GET", "/v2/users/u1/roles", ClassAccount},
		{"GET", "/v2/users/u1/roles/r1", ClassAccount},
		{"GET", "/v2/users/u2/roles/r1", ClassGlobal},
		{"GET", "/v2/users/u2/groups/g1", ClassGlobal},
		{"GET", "/v2/metric-prototypes", ClassAccount},
		{"DELETE", "/v2/metric-prototypes/p1", ClassAccount},
		{"POST", "/v2/accounts", ClassAdmin},
		{"GET", "/v2/accounts", ClassAccount},
		{"POST", "/v2/accounts/a1/entitlements", ClassAdmin},
		{"PATCH", "/v2/accounts/a1/entitlements/e1", ClassAdmin},
		{"PUT", "/v2/accounts/a1/entitlements/e1", ClassAdmin},
		{"DELETE", "/v2/accounts/a1/entitlements/e1", ClassAdmin},
		{"GET", "/v2/accounts/a1/entitlements/e1", ClassAccount},
		{"POST", "/v2/accounts/a1/entitlementsx", ClassAccount},
		{"POST", "/v2/accounts/a1/roles", ClassAccount},
		{"DELETE", "/v2/applications/x", ClassAccount},
		{"GET", "/v2/usersx", ClassAccount},
	}
	for _, c := range cases {
		if got := ClassOf(c.method, c.path, "u1"); got != c.want {
			t.Errorf("ClassOf(%s %s) = %v, want %v", c.method, c.path, got, c.want)
		}
	}
	if got := ClassOf("GET", "/v2/users/u1", ""); got != ClassGlobal {
		t.Errorf("no principal id: own id cannot be recognised, got %v", got)
	}
}
