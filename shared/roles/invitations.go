package roles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"strings"

	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/notifier"
	"cads/shared/retry"
	"cads/shared/store"
)

// kind is one of the two invitation families, which behave alike.
type kind struct {
	name       string // domain.InvitationRole or domain.InvitationGroup
	collection string // path segment
	target     string // body field naming the role or group
}

var (
	roleInvitations  = kind{name: domain.InvitationRole, collection: "invitations", target: "role"}
	groupInvitations = kind{name: domain.InvitationGroup, collection: "group-invitations", target: "group"}
)

type roleInvitationPost struct {
	UserEmail *string `json:"user_email"`
	Role      *string `json:"role"`
}

type groupInvitationPost struct {
	UserEmail *string `json:"user_email"`
	Group     *string `json:"group"`
}

// invitationPatch is the body of PATCH on an invitation: its state. An
// administrator may only ask for it to be sent again ("queued"); the
// invitee answers with "accepted" or "declined".
type invitationPatch struct {
	State *string `json:"state"`
}

// maxEmailLen is the reference document's limit.
const maxEmailLen = 255

func validEmail(s string) (string, error) {
	a, err := mail.ParseAddress(s)
	at := strings.LastIndexByte(s, '@')
	if err != nil || a.Address != s || len(s) > maxEmailLen || at < 1 || !strings.Contains(s[at+1:], ".") {
		return "", domain.Errorf(domain.Invalid, "user_email %q is not a valid address (like name@example.com)", s)
	}
	return strings.ToLower(s), nil
}

func invitationIDs(r *http.Request) (acct, id string, err error) {
	return memberIDs(r, "invitation_id", "invitation")
}

// decodeInvitationPost returns the invitee's email and the id of the role
// or group of account acct the invitation is to.
func decodeInvitationPost(r *http.Request, k kind, acct string) (email, target string, err error) {
	var em, href *string
	if k == roleInvitations {
		var in roleInvitationPost
		if err := apigw.DecodeJSON(r, &in); err != nil {
			return "", "", err
		}
		em, href = in.UserEmail, in.Role
	} else {
		var in groupInvitationPost
		if err := apigw.DecodeJSON(r, &in); err != nil {
			return "", "", err
		}
		em, href = in.UserEmail, in.Group
	}
	if em == nil || href == nil {
		return "", "", domain.Errorf(domain.Invalid, "user_email and %s are required", k.target)
	}
	if email, err = validEmail(*em); err != nil {
		return "", "", err
	}
	a, id, ok := parseMemberHref(*href, k.target+"s")
	if !ok {
		return "", "", domain.Errorf(domain.Invalid, "%s must be a %s href like /v2/accounts/%s/%ss/<id>, not %q", k.target, k.target, acct, k.target, *href)
	}
	if a != acct {
		return "", "", domain.Errorf(domain.Invalid, "%s is a %s of account %s: an invitation of account %s is to one of its own %ss",
			*href, k.target, a, acct, k.target)
	}
	return email, id, nil
}

func (h *handler) createInvitation(k kind) endpoint {
	return func(r *http.Request, p caller.Principal) (int, any, error) {
		acct, err := accountID(r)
		if err != nil {
			return 0, nil, err
		}
		email, target, err := decodeInvitationPost(r, k, acct)
		if err != nil {
			return 0, nil, err
		}
		// A service user's invitation is accepted at creation: it has no
		// mailbox, and it can only hold roles of its own account.
		svcAcct, svcID, isSvc := domain.ParseServiceUserEmail(email)
		// The role or group is not read here: CreateInvitation's transaction
		// checks it exists (ErrNotFound below).
		var svcErr error
		ctx := r.Context()
		a, err := h.account(r, p, acct,
			func() error {
				if isSvc {
					_, svcErr = h.st.Principals.GetServiceUser(ctx, svcAcct, svcID)
				}
				return ignoreNotFound(svcErr)
			})
		if err != nil {
			return 0, nil, domain.IfNotFound(err, "no account %s", acct)
		}
		if err := h.mayInviteHere(r, a); err != nil {
			return 0, nil, err
		}
		switch {
		case isSvc && svcErr != nil:
			return 0, nil, domain.Errorf(domain.Invalid, "no service user has the address %s", email)
		case isSvc && svcAcct != acct:
			return 0, nil, domain.Errorf(domain.Invalid, "%s is a service user of account %s: service users are bound to their account and hold only its roles", email, svcAcct)
		}
		now := h.st.Now()
		inv := domain.Invitation{AccountID: acct, ID: ids.New(), Kind: k.name, Email: email, Target: target,
			State: domain.InvitationQueued, GrantedBy: p.ID, Created: now, Updated: now, Version: 1}
		if isSvc {
			inv.State, inv.Accepted, inv.Principal = domain.InvitationAccepted, &now, svcID
		}
		var m *store.OutboxMarker
		if inv.State == domain.InvitationQueued {
			mk, err := h.marker(inv)
			if err != nil {
				return 0, nil, err
			}
			m = &mk
		}
		switch err := h.st.Invitations.CreateInvitation(ctx, inv, m); {
		case errors.Is(err, domain.ErrNotFound):
			return 0, nil, domain.Errorf(domain.Invalid, "%s %s does not exist", k.target, targetHref(k, acct, target))
		case errors.Is(err, store.ErrAlreadyHeld):
			return 0, nil, domain.Errorf(domain.Conflict, "%s holds %s %s already", email, k.target, targetHref(k, acct, target))
		case err != nil:
			return 0, nil, err
		}
		if m != nil {
			// Written with its marker, the invitation will be delivered: a
			// failed send is the outbox sweep's to repeat.
			_ = h.queue.Send(ctx, m)
		}
		return http.StatusOK, invitationTagged(inv), nil
	}
}

func ignoreNotFound(err error) error {
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	return err
}

func targetHref(k kind, acct, id string) string {
	return domain.InvitationTargetHref(k.name, acct, id)
}

// marker is the outbox marker of the message that asks the notifier to
// deliver inv. A missing queue is a deployment error (a 500), found
// before anything is written.
func (h *handler) marker(inv domain.Invitation) (store.OutboxMarker, error) {
	if h.queue == nil {
		return store.OutboxMarker{}, fmt.Errorf("no notification queue is configured: invitation %s cannot be sent", inv.Ref().Href())
	}
	body, err := json.Marshal(notifier.Message{Kind: inv.Kind, Account: inv.AccountID, ID: inv.ID})
	if err != nil {
		return store.OutboxMarker{}, fmt.Errorf("encode notification: %w", err)
	}
	return h.queue.Marker(string(body)), nil
}

func (h *handler) listInvitations(k kind) endpoint {
	return func(r *http.Request, p caller.Principal) (int, any, error) {
		acct, err := accountID(r)
		if err != nil {
			return 0, nil, err
		}
		page, err := apigw.ParsePage(r.URL.Query(), "user_email", "state", "created")
		if err != nil {
			return 0, nil, err
		}
		list, err := apigw.List(r, page, apigw.Lister[domain.Invitation, Invitation]{
			Name: k.name + "-invitations", Indexed: "created", ValidPosition: store.ValidPosition,
			Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.Invitation, []string, bool, error) {
				return h.st.Invitations.PageInvitations(ctx, acct, k.name, after, desc, n)
			},
			Allow: visibleIn(h, p, acct, func(x domain.Invitation) string { return invitationOut(x).Href }),
			Out:   func(x domain.Invitation) (Invitation, error) { return invitationOut(x), nil },
			Sort:  sortInvitations,
		})
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, list, nil
	}
}

func sortInvitations(out []Invitation, order []apigw.OrderKey) {
	apigw.Sort(out, order, func(x Invitation, field string) any {
		switch field {
		case "user_email":
			return x.UserEmail
		case "state":
			return x.State
		}
		return x.Created
	}, func(x Invitation) string { return x.ID }, apigw.OrderKey{Field: "created"})
}

func (h *handler) getInvitation(k kind) endpoint {
	return func(r *http.Request, _ caller.Principal) (int, any, error) {
		acct, id, err := invitationIDs(r)
		if err != nil {
			return 0, nil, err
		}
		inv, err := h.st.Invitations.GetInvitation(r.Context(), acct, k.name, id)
		if err != nil {
			return 0, nil, domain.IfNotFound(err, "no %s %q in account %s", singular(k), id, acct)
		}
		return http.StatusOK, invitationTagged(inv), nil
	}
}

// invitationTagged is an invitation's body with its ETag (the same on the
// account's side and in the invitee's inbox).
func invitationTagged(inv domain.Invitation) *apigw.Tagged {
	return apigw.WithETag(invitationOut(inv), invitationETag(inv))
}

func invitationETag(inv domain.Invitation) string {
	return etag.Of("invitation", inv.AccountID+"/"+inv.Kind+"/"+inv.ID, inv.Version)
}

func singular(k kind) string {
	if k == groupInvitations {
		return "group invitation"
	}
	return "invitation"
}

// resendInvitation is an administrator's PATCH: it sends an unanswered
// invitation again (docs/api.md#invitations). Sending is inviting, so the invitation rule
// applies as for POST.
func (h *handler) resendInvitation(k kind) endpoint {
	return func(r *http.Request, p caller.Principal) (int, any, error) {
		acct, id, err := invitationIDs(r)
		if err != nil {
			return 0, nil, err
		}
		var in invitationPatch
		if err := apigw.DecodeJSON(r, &in); err != nil {
			return 0, nil, err
		}
		if in.State != nil && *in.State != domain.InvitationQueued {
			return 0, nil, domain.Errorf(domain.Invalid, "state %q: an administrator can only send an invitation again ({\"state\": \"queued\"}); the invitee accepts or declines it (PATCH /v2/users/self/%s/%s)", *in.State, k.collection, id)
		}
		var inv domain.Invitation
		ctx := r.Context()
		a, err := h.account(r, p, acct, func() (err error) { inv, err = h.st.Invitations.GetInvitation(ctx, acct, k.name, id); return err })
		if err != nil {
			return 0, nil, domain.IfNotFound(err, "no %s %q in account %s", singular(k), id, acct)
		}
		if err := h.mayInviteHere(r, a); err != nil {
			return 0, nil, err
		}
		var (
			m        store.OutboxMarker
			requeued domain.Invitation
		)
		pre := apigw.IfMatch(r)
		read := func(context.Context) (domain.Invitation, error) { return inv, nil } // a lost race is a 409: no second read
		err = store.Edit(ctx, pre, read, invitationETag, func(ctx context.Context, inv domain.Invitation) (err error) {
			if inv.State == domain.InvitationAccepted || inv.State == domain.InvitationDeclined {
				return domain.Errorf(domain.Conflict, "the invitation was %s already; invite again with POST /v2/accounts/%s/%s", inv.State, acct, k.collection)
			}
			if m, err = h.marker(inv); err != nil {
				return err
			}
			requeued, err = h.st.Invitations.RequeueInvitation(ctx, inv, &m, store.Pinned(pre, inv.Version)...)
			return err
		})
		if errors.Is(err, store.ErrStateChanged) {
			return 0, nil, domain.Errorf(domain.Conflict, "the invitation was answered or revoked meanwhile")
		}
		if err != nil {
			return 0, nil, err
		}
		// Queued with its marker: a failed send is the sweep's to repeat.
		_ = h.queue.Send(ctx, &m)
		return http.StatusOK, invitationTagged(requeued), nil
	}
}

// deleteInvitation revokes an invitation: if it was accepted, the access
// it granted ends with the invitee's next request (docs/api.md#revoking-access).
func (h *handler) deleteInvitation(k kind) endpoint {
	return func(r *http.Request, _ caller.Principal) (int, any, error) {
		acct, id, err := invitationIDs(r)
		if err != nil {
			return 0, nil, err
		}
		ctx := r.Context()
		// The invitee may answer between the read and the delete; the
		// delete then fails its condition and is tried again at once on a
		// fresh read, so an acceptance is never left behind.
		var inv domain.Invitation
		pre := apigw.IfMatch(r)
		read := func(ctx context.Context) (domain.Invitation, error) {
			inv, err := h.st.Invitations.GetInvitation(ctx, acct, k.name, id)
			return inv, domain.IfNotFound(err, "no %s %q in account %s", singular(k), id, acct)
		}
		err = retry.Do(ctx, retry.Policy{Retries: 2}, stateChanged, func(int) error {
			return store.Edit(ctx, pre, read, invitationETag, func(ctx context.Context, cur domain.Invitation) error {
				inv = cur
				return h.st.Invitations.DeleteInvitation(ctx, inv, store.Pinned(pre, inv.Version)...)
			})
		})
		if errors.Is(err, store.ErrStateChanged) {
			return 0, nil, domain.Errorf(domain.Conflict, "the invitation keeps changing; retry")
		}
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, invitationOut(inv), nil
	}
}

func stateChanged(err error) bool { return errors.Is(err, store.ErrStateChanged) }
