package authz

import (
	"strings"
	"testing"
)

// The wildcards of docs/api.md#permission-patterns, plus the edges NormalizePattern defines.
func TestWildcardTable(t *testing.T) {
	cases := []struct {
		pattern, path string
		match         bool
	}{
		{"/v2/accounts/*", "/v2/accounts/a1", true},
		{"/v2/accounts/*", "/v2/accounts/a1/invitations", false}, // not sub-resources
		{"/v2/accounts/*", "/v2/accounts/a1/roles", false},
		{"/v2/accounts/*", "/v2/accounts", false}, // * is one non-empty segment
		{"/v2/applications**", "/v2/applications", true},
		{"/v2/applications**", "/v2/applications/a1", true},
		{"/v2/applications**", "/v2/applications/a1/logs", true},
		{"/v2/applications**", "/v2/applicationsx", true}, // glued ** is any rest, literally
		{"/v2/applications**", "/v2/application", false},
		{"/v2/applications/**", "/v2/applications/a1/logs", true},
		{"/v2/applications/**", "/v2/applications", false}, // the "/" is literal
		{"/applications/*", "/v2/applications/a1", true},   // missing /v2 added
		{"/v2/applications/*/logs", "/v2/applications/a1/logs", true},
		{"/v2/applications/*/logs", "/v2/applications/a1/metrics", false},
		{"/v2/applications/*/logs", "/v2/applications/a1/b/logs", false},
		{"/v2/*", "/v2/applications", true},
		{"/v2/*", "/v2/applications/a1", false},
		{"/v2/**", "/v2/applications/a1", true},
		{"/v2/**", "/v2", false},
		{"/v2**", "/v2", true},
		{"/v2/accounts/a1", "/v2/accounts/a1", true},
		{"/v2/accounts/a1", "/v2/accounts/a12", false},
		{"/v2/accounts/a1", "/v2/accounts/A1", false}, // literal, case-sensitive
		{"/v2/accounts/a1**", "/v2/accounts/a12", true},
	}
	for _, c := range cases {
		r := mustCompile(t, Role{ID: "r1", AccountID: "a1", Name: "R", Permissions: []Permission{perm("GET", "permit", c.pattern)}})
		if d := Decide([]*CompiledRole{r}, "GET", c.path); d.Allowed != c.match {
			t.Errorf("%s vs %s: allowed %v, want %v (%s)", c.pattern, c.path, d.Allowed, c.match, d.Explain())
		}
	}
}

func TestDecideRules(t *testing.T) {
	editor := mustCompile(t, Role{ID: "r2", AccountID: "a1", Name: "Editor", Permissions: []Permission{
		perm("GET", "permit", "/v2/accounts/a1"),
		perm("GET", "permit", "/v2/applications**"),
		perm("POST", "permit", "/v2/applications"),
		perm("PATCH", "permit", "/v2/applications/*"),
		perm("DELETE", "permit", "/v2/applications/**"),
		perm("DELETE", "deny", "/v2/applications/prod**"),
	}})
	cleaner := mustCompile(t, Role{ID: "r3", AccountID: "a1", Name: "Cleaner", Permissions: []Permission{
		perm("DELETE", "permit", "/v2/applications/*"),
	}})
	denyOnly := mustCompile(t, Role{ID: "r4", AccountID: "a1", Name: "NoDelete", Permissions: []Permission{
		perm("DELETE", "deny", "/v2/**"),
	}})
	roles := func(rs ...*CompiledRole) []*CompiledRole { return rs }

	cases := []struct {
		name         string
		roles        []*CompiledRole
		method, path string
		allowed      bool
		role         string
		reason       string
	}{
		{"permit matches", roles(editor), "PATCH", "/v2/applications/app1", true, "Editor",
			`permitted by role "Editor" (/v2/accounts/a1/roles/r2) permissions[3] PATCH /v2/applications/*`},
		{"method must match", roles(editor), "PUT", "/v2/applications/app1", false, "",
			`no permission of the 1 applicable role matches PUT /v2/applications/app1`},
		{"methods are case-sensitive", roles(editor), "patch", "/v2/applications/app1", false, "", ""},
		{"HEAD is never permitted", roles(editor), "HEAD", "/v2/applications", false, "", ""},
		{"no permission -> denied", roles(editor, cleaner), "DELETE", "/v2/accounts/a1", false, "",
			`no permission of the 2 applicable roles matches DELETE /v2/accounts/a1`},
		{"no roles -> denied", nil, "GET", "/v2/accounts/a1", false, "",
			`no role applies to this request, so nothing permits GET /v2/accounts/a1`},
		{"deny blocks its own role", roles(editor), "DELETE", "/v2/applications/prod1", false, "",
			`role "Editor" (/v2/accounts/a1/roles/r2) would permit but its deny permissions[5] DELETE /v2/applications/prod** matches`},
		{"permit in another role wins over a deny (5.2.6)", roles(editor, cleaner), "DELETE", "/v2/applications/prod1", true, "Cleaner",
			`permitted by role "Cleaner" (/v2/accounts/a1/roles/r3) permissions[0] DELETE /v2/applications/*`},
		{"deny in a role without the permit changes nothing", roles(denyOnly, editor), "DELETE", "/v2/applications/dev1/actions/x", true, "Editor", ""},
		{"a deny-only role grants nothing", roles(denyOnly), "DELETE", "/v2/applications/a1", false, "",
			`no permission of the 1 applicable role matches DELETE /v2/applications/a1`},
		{"blocked and unmatched roles", roles(editor, denyOnly), "DELETE", "/v2/applications/prod1", false, "",
			`role "Editor" (/v2/accounts/a1/roles/r2) would permit but its deny permissions[5] DELETE /v2/applications/prod** matches; no permission of the other 1 applicable role matches DELETE /v2/applications/prod1`},
		{"nil roles are skipped", roles(nil, editor, nil), "GET", "/v2/applications", true, "Editor", ""},
		{"non-canonical path is never decided", roles(editor), "GET", "/v2/applications/../accounts/a1", false, "",
			`request path "/v2/applications/../accounts/a1": dot segment (..) (at offset 17)`},
	}
	for _, c := range cases {
		d := Decide(c.roles, c.method, c.path)
		if d.Allowed != c.allowed || d.RoleName != c.role {
			t.Errorf("%s: allowed %v by %q, want %v by %q (%s)", c.name, d.Allowed, d.RoleName, c.allowed, c.role, d.Explain())
		}
		if c.reason != "" && d.Explain() != c.reason {
			t.Errorf("%s: Explain()\n got %s\nwant %s", c.name, d.Explain(), c.reason)
		}
		if d.Reason != "" {
			t.Errorf("%s: Decide filled Reason", c.name)
		}
		wantStatus := map[bool]int{true: 200, false: 403}[c.allowed]
		if strings.Contains(c.path, "..") {
			wantStatus = 400
		}
		if d.Status != wantStatus {
			t.Errorf("%s: status %d, want %d", c.name, d.Status, wantStatus)
		}
	}

	// The granting permit and the blocking deny are reported exactly.
	d := Decide(roles(editor, cleaner), "DELETE", "/v2/applications/prod1")
	if d.Permission == nil || *d.Permission != (Match{Role: "/v2/accounts/a1/roles/r3", RoleName: "Cleaner", Permission: 0, Spec: 0, Method: "DELETE", Pattern: "/v2/applications/*", Effect: "permit"}) {
		t.Errorf("Permission = %+v", d.Permission)
	}
	if len(d.Denied) != 1 || d.Denied[0] != (Match{Role: "/v2/accounts/a1/roles/r2", RoleName: "Editor", Permission: 5, Spec: 0, Method: "DELETE", Pattern: "/v2/applications/prod**", Effect: "deny"}) {
		t.Errorf("Denied = %+v", d.Denied)
	}
	if d.Role != "/v2/accounts/a1/roles/r3" || d.Considered != 2 {
		t.Errorf("Role %q, Considered %d", d.Role, d.Considered)
	}
}

// The first permit in role order is the one reported, whether it sits in a
// segment bucket or in the catch-all list of the index.
func TestDecideReportsFirstPermit(t *testing.T) {
	r := mustCompile(t, Role{ID: "r1", AccountID: "a1", Name: "R", Permissions: []Permission{
		perm("GET", "permit", "/v2/tests/*"),
		perm("GET", "permit", "/v2/**", "/v2/applications/*"),
		perm("GET", "permit", "/v2/applications/a1"),
	}})
	d := Decide([]*CompiledRole{r}, "GET", "/v2/applications/a1")
	if d.Permission == nil || d.Permission.Permission != 1 || d.Permission.Spec != 0 {
		t.Errorf("got %+v", d.Permission)
	}
	r = mustCompile(t, Role{ID: "r1", AccountID: "a1", Name: "R", Permissions: []Permission{
		perm("GET", "permit", "/v2/applications/a1"),
		perm("GET", "permit", "/v2/**"),
	}})
	d = Decide([]*CompiledRole{r}, "GET", "/v2/applications/a1")
	if d.Permission == nil || d.Permission.Permission != 0 {
		t.Errorf("got %+v", d.Permission)
	}
}

func TestCompile(t *testing.T) {
	for _, r := range []Role{
		{ID: "", AccountID: "a1"},
		{ID: "r1", AccountID: ""},
		{ID: "r/1", AccountID: "a1"},
		{ID: "r1", AccountID: ".."},
		{ID: "r1", AccountID: "a%2F"},
	} {
		if _, err := Compile(r); err == nil {
			t.Errorf("Compile(%+v) accepted", r)
		}
	}
	_, err := Compile(Role{ID: "r1", AccountID: "a1", Permissions: []Permission{perm("GET", "permit", "/v2/x"), perm("GET", "permit", "/v2/{x}")}})
	if err == nil || !strings.Contains(err.Error(), `authz: compile role "/v2/accounts/a1/roles/r1": permissions[1].spec[0]: "/v2/{x}": braces`) {
		t.Errorf("got %v", err)
	}
	in := Role{ID: "r1", AccountID: "a1", Name: "N", Inheritable: true, Permissions: []Permission{perm("GET", "permit", "/applications/*")}}
	c := mustCompile(t, in)
	if in.Permissions[0].Spec[0] != "/applications/*" {
		t.Error("Compile modified its input")
	}
	got := c.Role()
	got.Permissions[0].Spec[0] = "changed"
	if c.Role().Permissions[0].Spec[0] != "/v2/applications/*" {
		t.Error("Role() is not a deep copy")
	}
	if c.Href() != "/v2/accounts/a1/roles/r1" || c.ID() != "r1" || c.AccountID() != "a1" || c.Name() != "N" || !c.Inheritable() || in.Href() != c.Href() {
		t.Errorf("accessors: %+v", c.Role())
	}
}

func TestExplainIsOneSafeLine(t *testing.T) {
	r := mustCompile(t, Role{ID: "r1", AccountID: "a1", Name: "R", Permissions: []Permission{perm("GET", "permit", "/v2/x")}})
	for _, d := range []Decision{
		Decide([]*CompiledRole{r}, "GET\nX-Forged: 1", "/v2/x"),
		Decide([]*CompiledRole{r}, "GET", "/v2/x\n/../y"),
		Decide(nil, "", ""),
		{},
	} {
		if e := d.Explain(); e == "" || strings.ContainsAny(e, "\n\r\x00") {
			t.Errorf("Explain() = %q", e)
		}
	}
}

func TestExplainQuotesUntrustedText(t *testing.T) {
	d := Decision{Method: "GET", Path: "/v2/x\n/y"}
	if e := d.Explain(); strings.ContainsAny(e, "\n") || !strings.Contains(e, `"/v2/x\n/y"`) {
		t.Errorf("Explain() = %q", e)
	}
}
