package builtin

import (
	"slices"
	"strings"
	"testing"

	"cads/shared/authz"
)

// Changing a definition without recording a revision would leave every
// stored role at the old one with nothing to bring it up: the digest of
// the definitions is recorded beside the revision that made them.
func TestDefinitionsChangeOnlyWithARevision(t *testing.T) {
	f, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if got := digest(f); got != f.Digest {
		t.Fatalf("roles.json's definitions changed (digest %s, recorded %s): bump revision, add what changed to history, then set digest to %s (and the template's BuiltinRolesRevision)", got, f.Digest, got)
	}
	last := 1
	for _, h := range f.History {
		if h.Revision != last+1 {
			t.Errorf("history revision %d follows %d", h.Revision, last)
		}
		last = h.Revision
		for key := range h.Added {
			if _, err := definitionOf(key, "a"); err != nil {
				t.Errorf("revision %d names %v", h.Revision, err)
			}
		}
	}
	if last != f.Revision {
		t.Errorf("revision %d, history ends at %d", f.Revision, last)
	}
}

// The first revision, as accounts made before metric prototypes hold it.
var revision1 = map[string][]authz.Permission{
	KeyAccountOwner: {
		{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts/a"}},
		{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts", "/v2/accounts/a", "/v2/accounts/a/**", "/v2/applications**", "/v2/address-sets**", "/v2/tests**", "/v2/tasks**"}},
		{Method: "PATCH", Effect: "permit", Spec: []string{"/v2/accounts/a", "/v2/accounts/a/roles/*", "/v2/accounts/a/invitations/*", "/v2/accounts/a/groups/*", "/v2/accounts/a/group-invitations/*", "/v2/accounts/a/service-users/*", "/v2/applications**", "/v2/address-sets**", "/v2/tests/*"}},
		{Method: "POST", Effect: "permit", Spec: []string{"/v2/accounts/a/roles", "/v2/accounts/a/invitations", "/v2/accounts/a/groups", "/v2/accounts/a/group-invitations", "/v2/accounts/a/service-users", "/v2/applications**", "/v2/address-sets", "/v2/tests", "/v2/tasks"}},
		{Method: "PUT", Effect: "permit", Spec: []string{"/v2/applications/*", "/v2/tests/*"}},
		{Method: "DELETE", Effect: "permit", Spec: []string{"/v2/accounts/a/roles/*", "/v2/accounts/a/invitations/*", "/v2/accounts/a/groups/*", "/v2/accounts/a/group-invitations/*", "/v2/accounts/a/service-users/*", "/v2/applications**", "/v2/address-sets/*", "/v2/tests/*"}},
	},
	KeyReader: {
		{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts/a"}},
		{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts", "/v2/accounts/a", "/v2/accounts/a/**", "/v2/applications**", "/v2/address-sets**", "/v2/tests**", "/v2/tasks**"}},
	},
}

func sorted(ps []authz.Permission) []string {
	var out []string
	for _, g := range grants(ps) {
		out = append(out, g.method+" "+g.effect+" "+g.spec)
	}
	slices.Sort(out)
	return out
}

func TestUpgradeBringsAnUntouchedRoleToTheDefinition(t *testing.T) {
	for key, old := range revision1 {
		cur, err := definitionOf(key, "a")
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []int{0, 1} {
			up, err := Upgrade(key, "a", from, old, "whatever it was")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sorted(up.Permissions), sorted(cur.Permissions); !slices.Equal(got, want) {
				t.Errorf("%s from %d:\n got %v\nwant %v", key, from, got, want)
			}
			if len(up.Added) == 0 || len(up.Removed) != 0 {
				t.Errorf("%s: added %v removed %v", key, up.Added, up.Removed)
			}
		}
		// At the current revision there is nothing to do.
		up, err := Upgrade(key, "a", Revision(), old, "")
		if err != nil || len(up.Added) != 0 || !slices.Equal(sorted(up.Permissions), sorted(old)) {
			t.Errorf("%s at the current revision: %v %+v", key, err, up)
		}
	}
}

// What the account's administrators changed stays: a permit they took
// away, one they added, a deny, a description they wrote.
func TestUpgradeKeepsTheAdministratorsEdits(t *testing.T) {
	old := slices.Clone(revision1[KeyReader])
	old[1].Spec = slices.DeleteFunc(slices.Clone(old[1].Spec), func(s string) bool { return s == "/v2/tasks**" })
	old = append(old, authz.Permission{Method: "GET", Effect: "deny", Spec: []string{"/v2/metric-prototypes/secret"}},
		authz.Permission{Method: "POST", Effect: "permit", Spec: []string{"/v2/tests"}})
	up, err := Upgrade(KeyReader, "a", 1, old, "Our auditors")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(sorted(up.Permissions), "\n")
	for _, want := range []string{"GET permit /v2/metric-prototypes**", "GET permit /v2/log-schemas", "GET permit /v2/archived-logs**", "GET deny /v2/metric-prototypes/secret", "POST permit /v2/tests"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "/v2/tasks**") {
		t.Errorf("a permit the administrators removed came back:\n%s", got)
	}
	if up.Description != "Our auditors" {
		t.Errorf("description %q", up.Description)
	}
	// A description still as revision 1 gave it follows the definition.
	up, err = Upgrade(KeyEditor, "a", 1, nil, "Reads everything; creates, updates and deletes applications, actions, address sets, tests and tasks")
	if err != nil {
		t.Fatal(err)
	}
	if cur, _ := definitionOf(KeyEditor, "a"); up.Description != cur.Description {
		t.Errorf("description %q", up.Description)
	}
}

func TestKeyOfRecognisesBuiltinRolesByIdentity(t *testing.T) {
	for _, c := range []struct {
		key                  string
		control, ea, inherit bool
		name, want           string
	}{
		{"", true, false, false, "Reader", KeyReader},
		{"", true, false, false, "Account owner", KeyAccountOwner},
		{"editor", true, false, false, "Editor", KeyEditor},
		{"", false, true, true, "Entitlement administrator", KeyEntitlementAdministratorBelow},
		{"", false, true, false, "Entitlement administrator", KeyEntitlementAdministrator},
		// A tenant's role is never a built-in one, whatever its name.
		{"", false, false, false, "Reader", ""},
		{"reader", false, false, false, "Reader", ""},
	} {
		if got := KeyOf(c.key, c.control, c.ea, c.inherit, c.name); got != c.want {
			t.Errorf("%+v: %q", c, got)
		}
	}
}
