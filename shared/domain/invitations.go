package domain

import (
	"strings"
	"time"
)

// Invitation kinds: to a role, or to a group.
const (
	InvitationRole  = "role"
	InvitationGroup = "group"
)

// Invitation states (docs/api.md#invitations): queued -> sent ->
// accepted|declined.
const (
	InvitationQueued   = "queued"
	InvitationSent     = "sent"
	InvitationAccepted = "accepted"
	InvitationDeclined = "declined"
)

// Invitation is a role invitation or a group invitation of an account.
//
// It lives in the account's invitations partition. Once delivered (state
// sent, or accepted at creation for a service user) it is also indexed
// under the invitee's email in GSI1: that is the invitee's inbox, read by
// GET /v2/users/self/invitations. A queued invitation is not in it, so
// nobody can answer an invitation before it was sent.
type Invitation struct {
	AccountID string `dynamodbav:"account"`
	ID        string `dynamodbav:"id"`
	Kind      string `dynamodbav:"kind"`
	Email     string `dynamodbav:"user_email"`
	// Target is the id of the role (Kind role) or group (Kind group), of
	// the same account.
	Target    string     `dynamodbav:"target"`
	State     string     `dynamodbav:"state"`
	GrantedBy string     `dynamodbav:"granted_by,omitempty"` // the inviter's principal id
	Principal string     `dynamodbav:"principal,omitempty"`  // who accepted: whose grant to revoke
	Created   time.Time  `dynamodbav:"created"`
	Sent      *time.Time `dynamodbav:"sent,omitempty"`
	Accepted  *time.Time `dynamodbav:"accepted,omitempty"`
	Updated   time.Time  `dynamodbav:"updated"`
	// Version grows by one on every change (its ETag); 0 on an invitation
	// written before invitations had one.
	Version int `dynamodbav:"version"`
}

// InvitationRef names an invitation.
type InvitationRef struct{ Account, Kind, ID string }

// Ref is inv's reference.
func (inv Invitation) Ref() InvitationRef {
	return InvitationRef{Account: inv.AccountID, Kind: inv.Kind, ID: inv.ID}
}

// Href is the invitation's API reference; grants record it as Via.
func (r InvitationRef) Href() string {
	coll := "/invitations/"
	if r.Kind == InvitationGroup {
		coll = "/group-invitations/"
	}
	return "/v2/accounts/" + r.Account + coll + r.ID
}

// InvitationTargetHref is the API reference of what an invitation of kind
// grants: a role of account, or a group of it.
func InvitationTargetHref(kind, account, target string) string {
	coll := "/roles/"
	if kind == InvitationGroup {
		coll = "/groups/"
	}
	return "/v2/accounts/" + account + coll + target
}

// TargetHref is the API reference of the role or group inv grants.
func (inv Invitation) TargetHref() string {
	return InvitationTargetHref(inv.Kind, inv.AccountID, inv.Target)
}

// ParseInvitationHref is Href's inverse; ok is false for anything else
// (a grant made by the bootstrap, for instance).
func ParseInvitationHref(href string) (InvitationRef, bool) {
	rest, ok := strings.CutPrefix(href, "/v2/accounts/")
	if !ok {
		return InvitationRef{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return InvitationRef{}, false
	}
	r := InvitationRef{Account: parts[0], ID: parts[2]}
	switch parts[1] {
	case "invitations":
		r.Kind = InvitationRole
	case "group-invitations":
		r.Kind = InvitationGroup
	default:
		return InvitationRef{}, false
	}
	return r, true
}

// Grant is what accepting the invitation gives principal.
func (inv Invitation) Grant(principal string, now time.Time) Grant {
	g := Grant{PrincipalID: principal, AccountID: inv.AccountID, Via: inv.Ref().Href(), Created: now}
	if inv.Kind == InvitationGroup {
		g.Group = inv.Target
	} else {
		g.RoleID = inv.Target
	}
	return g
}
