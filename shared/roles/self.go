package roles

import (
	"context"
	"errors"
	"net/http"

	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/store"
)

// The invitee's side: /v2/users/{id}/invitations, group-invitations, roles
// and groups. For the caller's own identity ("self" or its id) the
// authorizer allows them without a role (docs/api.md#self-service); another
// principal's can be read only where RBAC permits it, and only the
// principal itself answers its invitations or leaves its roles and groups.

// who is the principal a /v2/users/{id}/... request is about.
type who struct {
	id, email string
	self      bool
}

func (h *handler) whoIs(r *http.Request, p caller.Principal) (who, error) {
	id := r.PathValue("id")
	if id == "self" || id == p.ID {
		return who{id: p.ID, email: p.Email, self: true}, nil
	}
	if !ids.Valid(id) {
		return who{}, domain.Errorf(domain.NotFound, "no user %q", id)
	}
	u, err := h.st.Principals.GetPrincipal(r.Context(), id)
	if err != nil {
		return who{}, domain.IfNotFound(err, "no user %q", id)
	}
	return who{id: u.ID, email: u.Email}, nil
}

// onlySelf refuses changes to another principal's invitations or roles:
// an invitation is answered by its invitee, and access is taken away from
// someone else by revoking the invitation that gave it.
func onlySelf(w who, what string) error {
	if !w.self {
		return domain.Errorf(domain.Forbidden, "only the user itself may %s; to take access away, revoke the invitation (DELETE /v2/accounts/{id}/invitations/{invitation_id})", what)
	}
	return nil
}

func (h *handler) listInbox(k kind) endpoint {
	return func(r *http.Request, p caller.Principal) (int, any, error) {
		w, err := h.whoIs(r, p)
		if err != nil {
			return 0, nil, err
		}
		page, err := apigw.ParsePage(r.URL.Query(), "user_email", "state", "created")
		if err != nil {
			return 0, nil, err
		}
		list, err := apigw.List(r, page, apigw.Lister[domain.Invitation, Invitation]{
			Name: "inbox-" + k.name, Indexed: "created", ValidPosition: store.ValidPairPosition,
			Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.Invitation, []string, bool, error) {
				return h.st.Invitations.PageInbox(ctx, w.email, k.name, after, desc, n)
			},
			// The user's own inbox: every member is the user's (the route
			// decided who may read it).
			Allow: apigw.AllowAll[domain.Invitation],
			Out:   func(x domain.Invitation) (Invitation, error) { return invitationOut(x), nil },
			Sort:  sortInvitations,
		})
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, list, nil
	}
}

func (h *handler) getInbox(k kind) endpoint {
	return func(r *http.Request, p caller.Principal) (int, any, error) {
		w, err := h.whoIs(r, p)
		if err != nil {
			return 0, nil, err
		}
		id, err := pathID(r, "invitation_id", singular(k))
		if err != nil {
			return 0, nil, err
		}
		inv, err := h.st.Invitations.InboxInvitation(r.Context(), w.email, k.name, id)
		if err != nil {
			return 0, nil, domain.IfNotFound(err, "no %s %q for %s", singular(k), id, w.email)
		}
		return http.StatusOK, invitationTagged(inv), nil
	}
}

// answerInvitation is the invitee's PATCH: {"state": "accepted"} makes it
// hold the role (or join the group) from its next request on; "declined"
// refuses it. Answering again with the same answer changes nothing.
func (h *handler) answerInvitation(k kind) endpoint {
	return func(r *http.Request, p caller.Principal) (int, any, error) {
		w, err := h.whoIs(r, p)
		if err != nil {
			return 0, nil, err
		}
		if err := onlySelf(w, "answer its invitations"); err != nil {
			return 0, nil, err
		}
		id, err := pathID(r, "invitation_id", singular(k))
		if err != nil {
			return 0, nil, err
		}
		var in invitationPatch
		if err := apigw.DecodeJSON(r, &in); err != nil {
			return 0, nil, err
		}
		if in.State == nil || (*in.State != domain.InvitationAccepted && *in.State != domain.InvitationDeclined) {
			return 0, nil, domain.Errorf(domain.Invalid, "state is required: \"accepted\" or \"declined\"")
		}
		ctx := r.Context()
		pre := apigw.IfMatch(r)
		// The inbox is an index, which may lag: a state an If-Match names
		// that the index does not show yet is looked for in the table
		// before the answer is a 412.
		read := func(ctx context.Context) (domain.Invitation, error) {
			inv, err := h.st.Invitations.InboxInvitation(ctx, w.email, k.name, id)
			if err != nil {
				return inv, domain.IfNotFound(err, "no %s %q for %s", singular(k), id, w.email)
			}
			if pre.Check(invitationETag(inv)) != nil {
				if cur, err := h.st.Invitations.GetInvitation(ctx, inv.AccountID, k.name, id); err == nil {
					inv = cur
				}
			}
			return inv, nil
		}
		var (
			inv  domain.Invitation
			done bool // answered the same way before: nothing to write
		)
		err = store.Edit(ctx, pre, read, invitationETag, func(ctx context.Context, cur domain.Invitation) (err error) {
			inv = cur
			want := *in.State
			switch {
			case inv.State == want && (want == domain.InvitationDeclined || inv.Principal == p.ID):
				done = true
				return nil
			case inv.State == domain.InvitationAccepted:
				return domain.Errorf(domain.Conflict, "the invitation was accepted already; to give up what it granted, DELETE /v2/users/self/%ss/%s", k.target, inv.Target)
			case inv.State == domain.InvitationDeclined:
				return domain.Errorf(domain.Conflict, "the invitation was declined already; ask for a new one")
			}
			if want == domain.InvitationDeclined {
				inv, err = h.st.Invitations.DeclineInvitation(ctx, inv, store.Pinned(pre, inv.Version)...)
			} else {
				inv, err = h.st.Invitations.AcceptInvitation(ctx, inv, p.ID, store.Pinned(pre, inv.Version)...)
			}
			return err
		})
		if done {
			return http.StatusOK, invitationTagged(inv), nil
		}
		switch {
		case errors.Is(err, store.ErrStateChanged):
			return 0, nil, domain.Errorf(domain.Conflict, "the invitation was answered or revoked meanwhile")
		case errors.Is(err, store.ErrAlreadyHeld):
			return 0, nil, domain.Errorf(domain.Conflict, "you hold %s %s already", k.target, targetHref(k, inv.AccountID, inv.Target))
		case errors.Is(err, domain.ErrNotFound):
			return 0, nil, domain.Errorf(domain.Conflict, "%s %s no longer exists", k.target, targetHref(k, inv.AccountID, inv.Target))
		case err != nil:
			return 0, nil, err
		}
		return http.StatusOK, invitationTagged(inv), nil
	}
}

// listHeldRoles lists the roles held directly (accepted role invitations),
// in the order they were granted; those held through groups are listed
// with the groups.
func (h *handler) listHeldRoles(r *http.Request, p caller.Principal) (int, any, error) {
	return listHeld(h, r, p, "held-roles", h.st.Roles.PageHeldRoles, func(x domain.Role) string { return x.ID },
		roleOut, Role.named, func(x Role) string { return x.Href })
}

// listHeldGroups lists the groups the user is a member of, in the order
// they were joined.
func (h *handler) listHeldGroups(r *http.Request, p caller.Principal) (int, any, error) {
	return listHeld(h, r, p, "held-groups", h.st.Roles.PageHeldGroups, func(x domain.Group) string { return x.ID },
		groupOut, Group.named, func(x Group) string { return x.Href })
}

// listHeld lists what the user holds (roles or groups) in the order it
// was granted; id reads a member's id, empty for a grant whose role or
// group is gone, which is no member. Another order breaks ties by href.
func listHeld[T, O any](h *handler, r *http.Request, p caller.Principal, name string,
	read func(ctx context.Context, principal, after string, desc bool, n int) ([]T, []string, bool, error),
	id func(T) string, out func(T) O, of func(O) named, href func(O) string) (int, any, error) {
	w, err := h.whoIs(r, p)
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(r.URL.Query(), "name", "created", "updated")
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[T, O]{
		Name: name, Indexed: "granted", ValidPosition: store.ValidPairPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]T, []string, bool, error) {
			return read(ctx, w.id, after, desc, n)
		},
		Allow: func(context.Context) (func(T) (bool, error), error) {
			return func(x T) (bool, error) { return id(x) != "", nil }, nil
		},
		Out:  func(x T) (O, error) { return out(x), nil },
		Sort: sortNamed(of, href),
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

// getHeldRole is GET /v2/users/{id}/roles/{role_id}: one role the user
// holds directly (an accepted role invitation), as listHeldRoles shows it.
func (h *handler) getHeldRole(r *http.Request, p caller.Principal) (int, any, error) {
	return h.getHeld(r, p, false)
}

// getHeldGroup is GET /v2/users/{id}/groups/{group_id}: one group the
// user is a member of.
func (h *handler) getHeldGroup(r *http.Request, p caller.Principal) (int, any, error) {
	return h.getHeld(r, p, true)
}

// heldParam is the path parameter of a held role or group, and its name.
func heldParam(group bool) (param, what string) {
	if group {
		return "group_id", "group"
	}
	return "role_id", "role"
}

// getHeld reads the user's grants and then only the one role or group it
// names: a role the user does not hold is a 404, whether it exists or not.
func (h *handler) getHeld(r *http.Request, p caller.Principal, group bool) (int, any, error) {
	w, err := h.whoIs(r, p)
	if err != nil {
		return 0, nil, err
	}
	param, what := heldParam(group)
	id, err := pathID(r, param, what)
	if err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	grants, err := h.st.Roles.Grants(ctx, w.id)
	if err != nil {
		return 0, nil, err
	}
	// Ids are unique across accounts, so the id alone names the grant.
	account := ""
	for _, g := range grants {
		if group && g.Group == id || !group && g.Group == "" && g.RoleID == id {
			account = g.AccountID
			break
		}
	}
	if account == "" {
		return 0, nil, domain.Errorf(domain.NotFound, "%s holds no %s %q", userHref(w.id), what, id)
	}
	if group {
		g, err := h.st.Roles.GetGroup(ctx, account, id)
		if err != nil {
			return 0, nil, domain.IfNotFound(err, "%s holds no %s %q", userHref(w.id), what, id)
		}
		return http.StatusOK, groupOut(g), nil
	}
	role, err := h.st.Roles.GetRole(ctx, account, id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "%s holds no %s %q", userHref(w.id), what, id)
	}
	return http.StatusOK, roleOut(role), nil
}

// leaveRole gives up a role held directly. The invitation that granted it
// becomes declined in the same transaction, so the account's list of
// invitations shows that the user no longer holds it.
func (h *handler) leaveRole(r *http.Request, p caller.Principal) (int, any, error) {
	return h.leave(r, p, false)
}

// leaveGroup gives up a group membership, like leaveRole.
func (h *handler) leaveGroup(r *http.Request, p caller.Principal) (int, any, error) {
	return h.leave(r, p, true)
}

func (h *handler) leave(r *http.Request, p caller.Principal, group bool) (int, any, error) {
	w, err := h.whoIs(r, p)
	if err != nil {
		return 0, nil, err
	}
	param, what := heldParam(group)
	if err := onlySelf(w, "leave its "+what+"s"); err != nil {
		return 0, nil, err
	}
	id, err := pathID(r, param, what)
	if err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	grants, err := h.st.Roles.Grants(ctx, w.id)
	if err != nil {
		return 0, nil, err
	}
	// Ids are unique across accounts, so the id alone names the grant.
	var g domain.Grant
	for _, x := range grants {
		if x.RoleID == id && !group && x.Group == "" || x.Group == id && group {
			g = x
		}
	}
	if g.AccountID == "" {
		return 0, nil, domain.Errorf(domain.NotFound, "you hold no %s %q", what, id)
	}
	// Delete the grant and read the one role or group to echo back, in
	// parallel (the answer does not depend on the delete).
	via, _ := domain.ParseInvitationHref(g.Via)
	var (
		role   domain.Role
		grp    domain.Group
		delErr error
	)
	err = parallel(
		func() error { delErr = h.st.Roles.DeleteGrant(ctx, g, via); return nil },
		func() (err error) {
			if group {
				grp, err = h.st.Roles.GetGroup(ctx, g.AccountID, id)
			} else {
				role, err = h.st.Roles.GetRole(ctx, g.AccountID, id)
			}
			return ignoreNotFound(err)
		})
	if delErr != nil {
		return 0, nil, domain.IfNotFound(delErr, "you hold no %s %q", what, id)
	}
	if err != nil {
		return 0, nil, err
	}
	if group {
		grp.AccountID, grp.ID = g.AccountID, id // kept when the group is gone
		return http.StatusOK, groupOut(grp), nil
	}
	role.AccountID, role.ID = g.AccountID, id
	return http.StatusOK, roleOut(role), nil
}
