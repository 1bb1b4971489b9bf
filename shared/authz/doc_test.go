package authz

import (
	"reflect"
	"testing"
)

// The examples of docs/rbac.md, so that the document stays true.
func TestDocExamples(t *testing.T) {
	_, err := ValidatePermissions([]Permission{
		perm("GET", "permit", "/v2/x"), perm("GET", "permit", "/v2/x"),
		perm("GET", "permit", "/v2/applications/{id}"),
	})
	if want := `permissions[2].spec[0]: "/v2/applications/{id}": braces are not allowed; write * for one path segment, e.g. /v2/applications/* (at offset 17)`; err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	if got, want := CheckPath("/v2/applications/../accounts").Error(), `request path "/v2/applications/../accounts": dot segment (..) (at offset 17)`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	role := func(id, acct, name string, inh bool) *CompiledRole {
		return mustCompile(t, Role{ID: id, AccountID: acct, Name: name, Inheritable: inh,
			Permissions: []Permission{perm("GET", "permit", "/v2/accounts/"+acct)}})
	}
	held := []*CompiledRole{
		role("ea", "r0", "EA", false), role("easub", "r0", "EA-sub", true),
		role("owner1", "a1", "Owner", false), role("support", "a1", "Support", true),
		role("owner2", "a2", "Owner", false),
	}
	anc := map[string][]string{"r0": nil, "a1": {"r0"}, "a2": {"r0", "a1"}}
	cases := []struct {
		key, method, path string
		scope             Scope
		roles             []string // nil: refused
	}{
		{"a1", "GET", "/v2/applications", ScopeAuthenticated, []string{"easub", "owner1"}},
		{"a1", "GET", "/v2/accounts/a2/roles", ScopeSubAccount, []string{"easub", "support"}},
		{"a1", "GET", "/v2/accounts/a2", ScopeSwitch, []string{"easub", "support", "owner2"}},
		{"a2", "GET", "/v2/accounts/a1/roles", 0, nil},
		{"r0", "POST", "/v2/accounts", ScopeAuthenticated, []string{"ea"}},
	}
	for _, c := range cases {
		target, _ := Target(c.method, c.path, c.key)
		scope, err := ScopeFor(c.method, c.path, c.key, target, anc[target])
		if c.roles == nil {
			if err == nil {
				t.Errorf("%s %s from %s: not refused", c.method, c.path, c.key)
			}
			continue
		}
		got := names(Applicable(held, target, anc[target], scope))
		if err != nil || scope != c.scope || !reflect.DeepEqual(got, c.roles) {
			t.Errorf("%s %s from %s: %v %v %v", c.method, c.path, c.key, scope, got, err)
		}
	}
}
