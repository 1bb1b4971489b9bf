package roles_test

import (
	"context"
	"strings"
	"testing"

	"cads/shared/domain"
)

// docs/api.md#invitations: invite, accept, allowed; revoke, denied. The invitation
// goes queued -> sent (by the notifier, through the queue) -> accepted.
func TestInviteAcceptRevoke(t *testing.T) {
	e := newEnv(t)
	root := e.rootAccount()
	base := "/v2/accounts/" + e.root
	target := base + "/service-users"

	r := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "Robot keeper",
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{target}}}}), 200, "create role")
	role := r.str("href")
	dev, devP := e.user("dev@example.com", root)

	if e.allowed(dev, "GET", target) {
		t.Fatal("allowed before any invitation")
	}
	// Bad invitations.
	for _, c := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"user_email": "dev@example.com"}, "required"},
		{map[string]any{"user_email": "not an email", "role": role}, "not a valid address"},
		{map[string]any{"user_email": "dev@example.com", "role": "/v2/accounts/" + e.root + "/roles/nosuch"}, "does not exist"},
		{map[string]any{"user_email": "dev@example.com", "role": "/v2/roles/x"}, "role href"},
		{map[string]any{"user_email": "dev@example.com", "role": role, "group": "x"}, `unknown field "group"`},
	} {
		if r := e.call(e.op, "POST", base+"/invitations", c.body); r.Status != 400 || !strings.Contains(r.msg(), c.msg) {
			t.Errorf("POST invitation %v: %d %s; want 400 with %q", c.body, r.Status, r.Raw, c.msg)
		}
	}
	sub, subRoles := e.account("Sub", e.root)
	r = e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "dev@example.com", "role": "/v2/accounts/" + sub.ID + "/roles/" + subRoles["Reader"].ID})
	if r.Status != 400 || !strings.Contains(r.msg(), "of account "+sub.ID) {
		t.Fatalf("invitation to a role of another account: %d %s", r.Status, r.Raw)
	}

	// Invite (the email is matched case-insensitively): queued, invisible to the invitee.
	r = e.must(e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "Dev@Example.com", "role": role}), 200, "invite")
	inv, invID := r.str("href"), r.str("id")
	if r.str("state") != "queued" || r.str("user_email") != "dev@example.com" || r.str("role") != role || r.str("granted_by") != "/v2/users/"+e.boot.Operator {
		t.Fatalf("new invitation: %s", r.Raw)
	}
	if r := e.must(e.call(dev, "GET", "/v2/users/self/invitations", nil), 200, "inbox"); len(r.List) != 0 {
		t.Fatalf("queued invitation visible to the invitee: %s", r.Raw)
	}
	if r := e.call(dev, "PATCH", "/v2/users/self/invitations/"+invID, map[string]any{"state": "accepted"}); r.Status != 404 {
		t.Fatalf("accepting a queued invitation: %d %s", r.Status, r.Raw)
	}

	// The notifier delivers it: sent, with a log line, in the inbox.
	if n := e.deliver(); n != 1 {
		t.Fatalf("delivered %d messages, want 1", n)
	}
	if !strings.Contains(e.logs.String(), `"msg":"invitation delivered"`) {
		t.Fatal("no delivery log line")
	}
	r = e.must(e.call(e.op, "GET", inv, nil), 200, "get invitation")
	if r.str("state") != "sent" || r.Body["sent"] == nil {
		t.Fatalf("after delivery: %s", r.Raw)
	}
	r = e.must(e.call(dev, "GET", "/v2/users/self/invitations", nil), 200, "inbox")
	if len(r.List) != 1 || r.List[0]["href"] != inv {
		t.Fatalf("inbox: %s", r.Raw)
	}
	e.must(e.call(dev, "GET", "/v2/users/"+devP.ID+"/invitations/"+invID, nil), 200, "inbox item by own id")
	if e.allowed(dev, "GET", target) {
		t.Fatal("allowed before accepting")
	}

	// Answers: only the invitee, only accepted|declined.
	if r := e.call(dev, "PATCH", "/v2/users/self/invitations/"+invID, map[string]any{"state": "sent"}); r.Status != 400 {
		t.Fatalf("state sent: %d %s", r.Status, r.Raw)
	}
	other, _ := e.user("other@example.com", root)
	if r := e.call(other, "PATCH", "/v2/users/self/invitations/"+invID, map[string]any{"state": "accepted"}); r.Status != 404 {
		t.Fatalf("someone else accepting: %d %s", r.Status, r.Raw)
	}
	r = e.must(e.call(dev, "PATCH", "/v2/users/self/invitations/"+invID, map[string]any{"state": "accepted"}), 200, "accept")
	if r.str("state") != "accepted" || r.Body["accepted"] == nil {
		t.Fatalf("accepted: %s", r.Raw)
	}
	e.must(e.call(dev, "PATCH", "/v2/users/self/invitations/"+invID, map[string]any{"state": "accepted"}), 200, "accept again")
	if r := e.call(dev, "PATCH", "/v2/users/self/invitations/"+invID, map[string]any{"state": "declined"}); r.Status != 409 {
		t.Fatalf("declining an accepted invitation: %d %s", r.Status, r.Raw)
	}
	if !e.allowed(dev, "GET", target) {
		t.Fatal("denied after accepting")
	}
	r = e.must(e.call(dev, "GET", "/v2/users/self/roles", nil), 200, "held roles")
	if len(r.List) != 1 || r.List[0]["href"] != role {
		t.Fatalf("held roles: %s", r.Raw)
	}
	// One held role, read by its id: what the list shows.
	heldID, listed := role[strings.LastIndex(role, "/")+1:], r.List[0]
	if r := e.must(e.call(dev, "GET", "/v2/users/self/roles/"+heldID, nil), 200, "held role"); r.str("href") != role || r.Body["name"] != listed["name"] {
		t.Fatalf("held role: %s, listed as %v", r.Raw, listed)
	}
	if r := e.call(other, "GET", "/v2/users/self/roles/"+heldID, nil); r.Status != 404 {
		t.Fatalf("a role someone else holds: %d %s", r.Status, r.Raw)
	}
	if r := e.call(dev, "GET", "/v2/users/self/roles/NotAnId", nil); r.Status != 404 {
		t.Fatalf("a role id that cannot be: %d %s", r.Status, r.Raw)
	}
	// Re-sending an answered invitation: 409.
	if r := e.call(e.op, "PATCH", inv, map[string]any{"state": "queued"}); r.Status != 409 {
		t.Fatalf("re-send accepted: %d %s", r.Status, r.Raw)
	}

	// Revoke: denied at once.
	r = e.must(e.call(e.op, "DELETE", inv, nil), 200, "revoke")
	if r.str("state") != "accepted" {
		t.Fatalf("revoked invitation: %s", r.Raw)
	}
	if e.allowed(dev, "GET", target) {
		t.Fatal("still allowed after revocation")
	}
	if r := e.must(e.call(dev, "GET", "/v2/users/self/roles", nil), 200, "held roles"); len(r.List) != 0 {
		t.Fatalf("role still held: %s", r.Raw)
	}
	if r := e.call(dev, "GET", "/v2/users/self/roles/"+heldID, nil); r.Status != 404 {
		t.Fatalf("revoked role still readable as held: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "GET", inv, nil); r.Status != 404 {
		t.Fatalf("revoked invitation still there: %d", r.Status)
	}

	// Decline, and leaving a role: the invitation says declined and the
	// access ends.
	r = e.must(e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "dev@example.com", "role": role}), 200, "invite again")
	inv2, id2 := r.str("href"), r.str("id")
	r = e.must(e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "dev@example.com", "role": role}), 200, "invite twice")
	id3 := r.str("id")
	e.deliver()
	e.must(e.call(dev, "PATCH", "/v2/users/self/invitations/"+id3, map[string]any{"state": "declined"}), 200, "decline")
	e.must(e.call(dev, "PATCH", "/v2/users/self/invitations/"+id2, map[string]any{"state": "accepted"}), 200, "accept 2")
	if !e.allowed(dev, "GET", target) {
		t.Fatal("denied after accepting again")
	}
	roleID := role[strings.LastIndex(role, "/")+1:]
	e.must(e.call(dev, "DELETE", "/v2/users/self/roles/"+roleID, nil), 200, "leave role")
	if e.allowed(dev, "GET", target) {
		t.Fatal("allowed after leaving the role")
	}
	if r := e.must(e.call(e.op, "GET", inv2, nil), 200, "get"); r.str("state") != "declined" {
		t.Fatalf("left role's invitation: %s", r.Raw)
	}
	if r := e.call(dev, "DELETE", "/v2/users/self/roles/"+roleID, nil); r.Status != 404 {
		t.Fatalf("leaving twice: %d %s", r.Status, r.Raw)
	}

	// Re-send: queued again, delivered again.
	r = e.must(e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "late@example.com", "role": role}), 200, "invite")
	inv4 := r.str("href")
	e.deliver()
	r = e.must(e.call(e.op, "PATCH", inv4, map[string]any{}), 200, "re-send")
	if r.str("state") != "queued" {
		t.Fatalf("re-sent: %s", r.Raw)
	}
	if e.deliver() != 1 {
		t.Fatal("re-sent invitation not delivered")
	}
	if r := e.must(e.call(e.op, "GET", inv4, nil), 200, "get"); r.str("state") != "sent" {
		t.Fatalf("after re-send: %s", r.Raw)
	}
	if r := e.call(e.op, "PATCH", inv4, map[string]any{"state": "accepted"}); r.Status != 400 {
		t.Fatalf("administrator accepting: %d %s", r.Status, r.Raw)
	}

	// A message for a revoked invitation does nothing.
	r = e.must(e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "gone@example.com", "role": role}), 200, "invite")
	e.must(e.call(e.op, "DELETE", r.str("href"), nil), 200, "revoke before sending")
	if e.deliver() != 1 {
		t.Fatal("message of a revoked invitation not consumed")
	}

	// The account's list, filtered by what the caller may GET.
	r = e.must(e.call(e.op, "GET", base+"/invitations?order=-created", nil), 200, "list")
	if len(r.List) != 3 {
		t.Fatalf("invitations: %s", r.Raw)
	}
	if _, err := e.st.Invitations.GetInvitation(context.Background(), e.root, domain.InvitationRole, id2); err != nil {
		t.Fatal(err)
	}
}

// docs/api.md#who-may-invite: only account owners (or the entitlement
// administrator) invite. An Editor cannot, even with a permit for the
// invitation endpoint in another role.
func TestOnlyAccountOwnersInvite(t *testing.T) {
	e := newEnv(t)
	sub, subRoles := e.account("Customer", e.root)
	base := "/v2/accounts/" + sub.ID
	reader := base + "/roles/" + subRoles["Reader"].ID
	body := map[string]any{"user_email": "new@example.com", "role": reader}

	editor, editorP := e.user("editor@example.com", sub, subRoles["Editor"])
	r := e.call(editor, "POST", base+"/invitations", body)
	if r.Status != 403 {
		t.Fatalf("Editor inviting: %d %s", r.Status, r.Raw)
	}

	// Give the Editor a custom role permitting the invitation endpoints.
	owner, _ := e.user("owner@example.com", sub, subRoles["Account owner"])
	r = e.must(e.call(owner, "POST", base+"/roles", map[string]any{"name": "Inviter", "permissions": []map[string]any{
		{"method": "POST", "effect": "permit", "spec": []string{base + "/invitations", base + "/group-invitations"}},
		{"method": "PATCH", "effect": "permit", "spec": []string{base + "/invitations/*"}}}}), 200, "create Inviter")
	inviter, err := e.st.Roles.GetRole(context.Background(), sub.ID, r.str("id"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Roles.PutGrant(context.Background(), domain.Grant{PrincipalID: editorP.ID, AccountID: sub.ID, RoleID: inviter.ID, Via: "test"}); err != nil {
		t.Fatal(err)
	}
	if !e.allowed(editor, "POST", base+"/invitations") {
		t.Fatal("the custom permit does not reach the authorizer")
	}
	r = e.call(editor, "POST", base+"/invitations", body)
	if r.Status != 403 || !strings.Contains(r.msg(), "Account owner") {
		t.Fatalf("Editor with a permit inviting: %d %s", r.Status, r.Raw)
	}
	// The same for group invitations.
	g := e.must(e.call(owner, "POST", base+"/groups", map[string]any{"name": "Readers", "roles": []string{reader}}), 200, "group")
	if r := e.call(editor, "POST", base+"/group-invitations", map[string]any{"user_email": "new@example.com", "group": g.str("href")}); r.Status != 403 {
		t.Fatalf("Editor inviting to a group: %d %s", r.Status, r.Raw)
	}

	// The account's owner invites.
	r = e.must(e.call(owner, "POST", base+"/invitations", body), 200, "owner invites")
	// The Editor cannot re-send it either.
	if r := e.call(editor, "PATCH", r.str("href"), map[string]any{}); r.Status != 403 {
		t.Fatalf("Editor re-sending: %d %s", r.Status, r.Raw)
	}
	// The operator, from the root account, invites into the sub-account as
	// entitlement administrator (docs/api.md#entitlement-administrator).
	e.must(e.call(e.op, "POST", base+"/invitations", body), 200, "entitlement administrator invites")

	// The sub-account's owner cannot invite to its parent's roles, nor
	// into the parent account.
	rootReader := "/v2/accounts/" + e.root + "/roles/" + e.rootRoles()["Reader"].ID
	if r := e.call(owner, "POST", "/v2/accounts/"+e.root+"/invitations", map[string]any{"user_email": "x@example.com", "role": rootReader}); r.Status != 403 {
		t.Fatalf("sub-account owner inviting in the parent: %d %s", r.Status, r.Raw)
	}
}
