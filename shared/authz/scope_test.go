package authz

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The hierarchy of the tests: r0 (the operator's root) -> a1 -> a2 -> a3,
// a sibling b1 below r0, and z1, the root of another hierarchy.
var ancestorsOf = map[string][]string{
	"r0": nil,
	"a1": {"r0"},
	"a2": {"r0", "a1"},
	"a3": {"r0", "a1", "a2"},
	"b1": {"r0"},
	"z1": nil,
}

type hierarchyRoles struct {
	rInh, a1Own, a1Inh, a2Own, a2Inh, a3Own, b1Own, zOwn *CompiledRole
}

func newHierarchyRoles(t testing.TB) hierarchyRoles {
	role := func(id, acct string, inh bool) *CompiledRole {
		return mustCompile(t, Role{ID: id, AccountID: acct, Name: id, Inheritable: inh, Permissions: []Permission{
			perm("GET", "permit", "/v2/accounts/"+acct),
			perm("GET", "permit", "/v2/accounts/*/roles"),
		}})
	}
	return hierarchyRoles{
		rInh:  role("rinh", "r0", true),
		a1Own: role("a1own", "a1", false),
		a1Inh: role("a1inh", "a1", true),
		a2Own: role("a2own", "a2", false),
		a2Inh: role("a2inh", "a2", true),
		a3Own: role("a3own", "a3", false),
		b1Own: role("b1own", "b1", false),
		zOwn:  role("zown", "z1", false),
	}
}

func (h hierarchyRoles) all() []*CompiledRole {
	return []*CompiledRole{h.rInh, h.a1Own, h.a1Inh, h.a2Own, h.a2Inh, h.a3Own, h.b1Own, h.zOwn}
}

func names(rs []*CompiledRole) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID())
	}
	return out
}

func TestApplicable(t *testing.T) {
	h := newHierarchyRoles(t)
	cases := []struct {
		target string
		scope  Scope
		want   []string
	}{
		// inheritable:false applies in its own account, inheritable:true
		// ONLY below its account (docs/api.md#inheritable-roles).
		{"r0", ScopeAuthenticated, []string{}},
		{"a1", ScopeAuthenticated, []string{"rinh", "a1own"}},
		{"a2", ScopeAuthenticated, []string{"rinh", "a1inh", "a2own"}},          // depth 1
		{"a3", ScopeAuthenticated, []string{"rinh", "a1inh", "a2inh", "a3own"}}, // deep
		{"b1", ScopeAuthenticated, []string{"rinh", "b1own"}},                   // a1's inherited roles are not b1's
		{"z1", ScopeAuthenticated, []string{"zown"}},                            // other hierarchy: only its own
		// Sub-account scope: only inherited roles, never the target's own.
		{"a2", ScopeSubAccount, []string{"rinh", "a1inh"}},
		{"a3", ScopeSubAccount, []string{"rinh", "a1inh", "a2inh"}},
		// Switch: as if authenticated into the target.
		{"a2", ScopeSwitch, []string{"rinh", "a1inh", "a2own"}},
		{"a1", ScopeSwitch, []string{"rinh", "a1own"}},
	}
	for _, c := range cases {
		got := names(Applicable(h.all(), c.target, ancestorsOf[c.target], c.scope))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Applicable(%s, %v) = %v, want %v", c.target, c.scope, got, c.want)
		}
	}
	// Duplicates (direct and through a group) and nils are dropped; a target
	// wrongly listed among its own ancestors does not make its inheritable
	// roles apply to it.
	got := names(Applicable([]*CompiledRole{h.a1Own, nil, h.a1Own, h.a1Inh}, "a1", []string{"r0", "a1"}, ScopeAuthenticated))
	if !reflect.DeepEqual(got, []string{"a1own"}) {
		t.Errorf("got %v", got)
	}
}

func TestTarget(t *testing.T) {
	cases := []struct {
		method, path, want string
		fromPath           bool
	}{
		{"GET", "/v2/applications", "k", false},
		{"GET", "/v2/accounts", "k", false},
		{"POST", "/v2/accounts", "k", false},
		{"GET", "/v2/accounts/a2", "a2", true},
		{"PATCH", "/v2/accounts/a2", "a2", true},
		{"GET", "/v2/accounts/a2/roles/r1", "a2", true},
		{"GET", "/v2/users/self", "k", false},
		{"GET", "/v2/accountsx/a2", "k", false},
	}
	for _, c := range cases {
		got, from := Target(c.method, c.path, "k")
		if got != c.want || from != c.fromPath {
			t.Errorf("Target(%s %s) = %q, %v", c.method, c.path, got, from)
		}
	}
}

func TestScopeFor(t *testing.T) {
	cases := []struct {
		key, method, path, target string
		want                      Scope
		err                       string
	}{
		{"a1", "GET", "/v2/applications", "a1", ScopeAuthenticated, ""},
		{"a1", "GET", "/v2/accounts/a1/roles", "a1", ScopeAuthenticated, ""},
		{"a1", "PATCH", "/v2/accounts/a1", "a1", ScopeAuthenticated, ""},
		{"a1", "GET", "/v2/accounts/a2/roles", "a2", ScopeSubAccount, ""},
		{"a1", "POST", "/v2/accounts/a3/invitations", "a3", ScopeSubAccount, ""},
		{"a1", "PATCH", "/v2/accounts/a2", "a2", ScopeSubAccount, ""},
		{"a1", "DELETE", "/v2/accounts/a3", "a3", ScopeSubAccount, ""},
		{"a1", "GET", "/v2/accounts/a1", "a1", ScopeSwitch, ""},
		{"a1", "GET", "/v2/accounts/a3", "a3", ScopeSwitch, ""},
		{"a1", "GET", "/v2/accounts/z1", "z1", ScopeSwitch, ""}, // unrelated: decided by z1's roles
		{"a1", "GET", "/v2/accounts/r0", "r0", ScopeSwitch, ""}, // above: likewise
		{"", "GET", "/v2/accounts/a1", "a1", ScopeSwitch, ""},
		{"a2", "GET", "/v2/accounts/a1/roles", "a1", 0, "neither the account this key is authenticated into"}, // above
		{"a2", "PATCH", "/v2/accounts/a1", "a1", 0, "neither"},
		{"a1", "GET", "/v2/accounts/z1/roles", "z1", 0, "neither"}, // unrelated
		{"a1", "GET", "/v2/accounts/b1/roles", "b1", 0, "neither"}, // sibling
		{"a1", "GET", "/v2/accounts/a2/roles", "a1", 0, "not the account this request addresses"},
		{"a1", "GET", "/v2/applications", "a2", 0, "not the account this request addresses"},
		{"", "GET", "/v2/applications", "", 0, "authenticated into no account"},
		{"", "GET", "/v2/accounts/a1/roles", "a1", 0, "authenticated into no account"},
	}
	for _, c := range cases {
		got, err := ScopeFor(c.method, c.path, c.key, c.target, ancestorsOf[c.target])
		var se *ScopeError
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ScopeFor(key %s, %s %s) = %v, %v; want %v", c.key, c.method, c.path, got, err, c.want)
		case c.err != "" && (!errors.As(err, &se) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ScopeFor(key %s, %s %s) = %v, %v; want error %q", c.key, c.method, c.path, got, err, c.err)
		}
	}
	if ScopeSubAccount.String() != "sub-account" || Scope(7).String() != "Scope(7)" {
		t.Error("Scope.String")
	}
}
