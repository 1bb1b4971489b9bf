package roles_test

import (
	"strings"
	"testing"
)

// invite makes an invitation, delivers it and has the invitee accept it.
func (e *env) invite(inviter, invitee, collection, account, field, href, email string) reply {
	e.t.Helper()
	r := e.must(e.call(inviter, "POST", "/v2/accounts/"+account+"/"+collection, map[string]any{"user_email": email, field: href}), 200, "invite")
	e.deliver()
	return e.must(e.call(invitee, "PATCH", "/v2/users/self/"+collection+"/"+r.str("id"), map[string]any{"state": "accepted"}), 200, "accept")
}

func permit(method string, spec ...string) map[string]any {
	return map[string]any{"method": method, "effect": "permit", "spec": spec}
}

func deny(method string, spec ...string) map[string]any {
	return map[string]any{"method": method, "effect": "deny", "spec": spec}
}

// docs/api.md#decision: a deny applies only inside its role; a permit in another
// role of the same user still grants.
func TestDenyInOneRolePermitInAnother(t *testing.T) {
	e := newEnv(t)
	root := e.rootAccount()
	base := "/v2/accounts/" + e.root
	users := base + "/service-users"
	u, _ := e.user("u@example.com", root)

	strict := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "Strict", "permissions": []map[string]any{
		permit("GET", base+"/**"), deny("GET", users)}}), 200, "Strict")
	e.invite(e.op, u, "invitations", e.root, "role", strict.str("href"), "u@example.com")
	if e.allowed(u, "GET", users) {
		t.Fatal("the role's own deny did not apply")
	}
	if !e.allowed(u, "GET", base+"/roles") {
		t.Fatal("the role's permit did not apply")
	}
	if r := e.call(u, "GET", users, nil); r.Status != 403 || !strings.Contains(r.Raw, "deny") {
		t.Fatalf("403 without the deny's explanation: %d %s", r.Status, r.Raw)
	}

	lenient := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "Lenient", "permissions": []map[string]any{
		permit("GET", users)}}), 200, "Lenient")
	e.invite(e.op, u, "invitations", e.root, "role", lenient.str("href"), "u@example.com")
	if !e.allowed(u, "GET", users) {
		t.Fatal("a permit in another role did not grant")
	}
	e.must(e.call(u, "GET", users, nil), 200, "list service users through Lenient")

	// A role's change applies to the holder's next request.
	e.must(e.call(e.op, "PATCH", lenient.str("href"), map[string]any{"permissions": []any{}}), 200, "empty Lenient")
	if e.allowed(u, "GET", users) {
		t.Fatal("allowed after the granting permit was removed")
	}
}

// docs/api.md#groups: a member holds the group's roles, including roles added
// later and excluding roles removed, from its next request on.
func TestGroupWhoseRolesChange(t *testing.T) {
	e := newEnv(t)
	root := e.rootAccount()
	base := "/v2/accounts/" + e.root
	users, invs := base+"/service-users", base+"/invitations"
	m, mp := e.user("member@example.com", root)

	a := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "A", "permissions": []map[string]any{permit("GET", users)}}), 200, "A")
	b := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "B", "permissions": []map[string]any{permit("GET", invs)}}), 200, "B")

	// Bad groups.
	sub, subRoles := e.account("Sub", e.root)
	for _, c := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"roles": []string{a.str("href")}}, "name is required"},
		{map[string]any{"name": "g", "roles": []string{"/v2/accounts/" + sub.ID + "/roles/" + subRoles["Reader"].ID}}, "own account"},
		{map[string]any{"name": "g", "roles": []string{a.str("href"), a.str("href")}}, "twice"},
		{map[string]any{"name": "g", "roles": []string{base + "/roles/nosuch"}}, "does not exist"},
		{map[string]any{"name": "g", "roles": []string{"roles/x"}}, "role href"},
	} {
		if r := e.call(e.op, "POST", base+"/groups", c.body); r.Status != 400 || !strings.Contains(r.msg(), c.msg) {
			t.Errorf("POST group %v: %d %s; want 400 with %q", c.body, r.Status, r.Raw, c.msg)
		}
	}

	g := e.must(e.call(e.op, "POST", base+"/groups", map[string]any{"name": "Ops", "roles": []string{a.str("href")}}), 200, "group")
	ghref := g.str("href")
	if rs, _ := g.Body["roles"].([]any); len(rs) != 1 || rs[0] != a.str("href") {
		t.Fatalf("group: %s", g.Raw)
	}
	// Group invitation: the same flow as a role invitation.
	gi := e.invite(e.op, m, "group-invitations", e.root, "group", ghref, "member@example.com")
	if gi.str("group") != ghref || gi.str("state") != "accepted" {
		t.Fatalf("accepted group invitation: %s", gi.Raw)
	}
	if !e.allowed(m, "GET", users) || e.allowed(m, "GET", invs) {
		t.Fatal("member does not hold exactly role A")
	}
	r := e.must(e.call(m, "GET", "/v2/users/"+mp.ID+"/groups", nil), 200, "held groups")
	if len(r.List) != 1 || r.List[0]["href"] != ghref {
		t.Fatalf("held groups: %s", r.Raw)
	}
	gid := ghref[strings.LastIndex(ghref, "/")+1:]
	if r := e.must(e.call(m, "GET", "/v2/users/"+mp.ID+"/groups/"+gid, nil), 200, "held group"); r.str("href") != ghref || r.Body["name"] != "Ops" {
		t.Fatalf("held group: %s", r.Raw)
	}
	if r := e.call(m, "GET", "/v2/users/self/roles/"+gid, nil); r.Status != 404 {
		t.Fatalf("a group id read as a held role: %d %s", r.Status, r.Raw)
	}

	// Add B (JSON Patch), remove A (merge patch).
	e.must(e.call(e.op, "PATCH", ghref, `[{"op":"add","path":"/roles/-","value":"`+b.str("href")+`"}]`, "application/json-patch+json"), 200, "add B")
	if !e.allowed(m, "GET", users) || !e.allowed(m, "GET", invs) {
		t.Fatal("role added to the group does not apply")
	}
	e.must(e.call(e.op, "PATCH", ghref, map[string]any{"roles": []string{b.str("href")}}), 200, "remove A")
	if e.allowed(m, "GET", users) || !e.allowed(m, "GET", invs) {
		t.Fatal("role removed from the group still applies")
	}
	if r := e.call(e.op, "PATCH", ghref, map[string]any{"roles": []string{base + "/roles/nosuch"}}); r.Status != 400 {
		t.Fatalf("patch to a missing role: %d %s", r.Status, r.Raw)
	}
	// Deleting a role takes it out of its groups.
	e.must(e.call(e.op, "DELETE", b.str("href"), nil), 200, "delete B")
	if e.allowed(m, "GET", invs) {
		t.Fatal("deleted role still applies through the group")
	}
	if r := e.must(e.call(e.op, "GET", ghref, nil), 200, "group"); len(r.Body["roles"].([]any)) != 0 {
		t.Fatalf("deleted role still listed: %s", r.Raw)
	}

	// Deleting a group: only from the account it belongs to.
	sg := e.must(e.call(e.op, "POST", "/v2/accounts/"+sub.ID+"/groups", map[string]any{"name": "Sub group"}), 403, "create in sub-account from root")
	_ = sg
	subOwner, _ := e.user("subowner@example.com", sub, subRoles["Account owner"])
	sg = e.must(e.call(subOwner, "POST", "/v2/accounts/"+sub.ID+"/groups", map[string]any{"name": "Sub group",
		"roles": []string{"/v2/accounts/" + sub.ID + "/roles/" + subRoles["Reader"].ID}}), 200, "sub group")
	// An inheritable role of the root lets the operator delete groups below.
	janitor := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "Janitor", "inheritable": true,
		"permissions": []map[string]any{permit("DELETE", "/v2/accounts/*/groups/*")}}), 200, "Janitor")
	e.invite(e.op, e.op, "invitations", e.root, "role", janitor.str("href"), "operator@example.com")
	if !e.allowed(e.op, "DELETE", sg.str("href")) {
		t.Fatal("the authorizer refuses the delete; the check below would prove nothing")
	}
	r = e.call(e.op, "DELETE", sg.str("href"), nil)
	if r.Status != 403 || !strings.Contains(r.msg(), "authenticate into account "+sub.ID) {
		t.Fatalf("deleting a sub-account's group from the root account: %d %s", r.Status, r.Raw)
	}
	e.must(e.call(subOwner, "DELETE", sg.str("href"), nil), 200, "delete group in its account")

	e.must(e.call(e.op, "DELETE", ghref, nil), 200, "delete group")
	e.must(e.call(e.op, "PATCH", ghref, map[string]any{"name": "x"}), 404, "patch deleted group")
	if r := e.must(e.call(m, "GET", "/v2/users/self/groups", nil), 200, "held groups"); len(r.List) != 0 {
		t.Fatalf("deleted group still held: %s", r.Raw)
	}
	if r := e.call(m, "GET", "/v2/users/self/groups/"+gid, nil); r.Status != 404 {
		t.Fatalf("deleted group still readable as held: %d %s", r.Status, r.Raw)
	}
	if r := e.must(e.call(e.op, "GET", base+"/group-invitations", nil), 200, "group invitations"); len(r.List) != 0 {
		t.Fatalf("invitations to the deleted group remain: %s", r.Raw)
	}
}

// docs/api.md#inheritable-roles: an inheritable role applies in every sub-account, not
// in its own account; revoking it removes the access below.
func TestInheritableRoleFromSubAccount(t *testing.T) {
	e := newEnv(t)
	parent, parentRoles := e.account("Parent", e.root)
	child, _ := e.account("Child", parent.ID)
	grandchild, _ := e.account("Grandchild", child.ID)
	owner, _ := e.user("owner@example.com", parent, parentRoles["Account owner"])

	r := e.must(e.call(owner, "POST", "/v2/accounts/"+parent.ID+"/roles", map[string]any{"name": "Support", "inheritable": true,
		"permissions": []map[string]any{permit("GET", "/v2/accounts/*/service-users")}}), 200, "inheritable role")
	if r.Body["inheritable"] != true {
		t.Fatalf("role: %s", r.Raw)
	}
	// One user, with keys in the child, the grandchild and the parent.
	inChild, up := e.user("support@example.com", child)
	inv := e.must(e.call(owner, "POST", "/v2/accounts/"+parent.ID+"/invitations", map[string]any{"user_email": "support@example.com", "role": r.str("href")}), 200, "invite")
	e.deliver()
	e.must(e.call(inChild, "PATCH", "/v2/users/self/invitations/"+inv.str("id"), map[string]any{"state": "accepted"}), 200, "accept")
	inGrandchild := e.keyFor(up.ID, grandchild)
	inParent := e.keyFor(up.ID, parent)

	if !e.allowed(inChild, "GET", "/v2/accounts/"+child.ID+"/service-users") {
		t.Fatal("inheritable role does not apply in the sub-account")
	}
	e.must(e.call(inGrandchild, "GET", "/v2/accounts/"+grandchild.ID+"/service-users", nil), 200, "at any depth")
	if e.allowed(inParent, "GET", "/v2/accounts/"+parent.ID+"/service-users") {
		t.Fatal("inheritable role applies in its own account")
	}
	// Switching into the child needs GET /v2/accounts/<child>: the role
	// does not give it, but the protected permit of the child's own roles
	// would; here the user holds none.
	e.must(e.call(owner, "DELETE", inv.str("href"), nil), 200, "revoke")
	if e.allowed(inChild, "GET", "/v2/accounts/"+child.ID+"/service-users") {
		t.Fatal("still allowed in the sub-account after revocation")
	}
}
