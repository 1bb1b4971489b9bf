package roles

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/store"
)

// groupDoc is a group's editable configuration (POST body, PATCH document).
type groupDoc struct {
	Name  *string   `json:"name"`
	Roles *[]string `json:"roles"`
}

var groupReadOnly = []string{"id", "href", "created", "updated"}

func docOfGroup(g domain.Group) groupDoc {
	out := groupOut(g)
	return groupDoc{Name: &g.Name, Roles: &out.Roles}
}

// buildGroup validates a group configuration as a whole: a name, and role
// hrefs of roles of the group's own account, each once. Whether the roles
// exist is checked by the write itself.
func buildGroup(account string, in groupDoc) (domain.Group, error) {
	if in.Name == nil {
		return domain.Group{}, domain.Errorf(domain.Invalid, "name is required")
	}
	name, err := validText("name", *in.Name, maxNameLen, true)
	if err != nil {
		return domain.Group{}, err
	}
	g := domain.Group{AccountID: account, Name: name}
	if in.Roles == nil {
		return g, nil
	}
	if len(*in.Roles) > domain.MaxGroupRoles {
		return domain.Group{}, domain.Errorf(domain.Invalid, "a group holds at most %d roles (got %d)", domain.MaxGroupRoles, len(*in.Roles))
	}
	seen := map[string]bool{}
	for i, href := range *in.Roles {
		a, id, ok := parseRoleHref(href)
		switch {
		case !ok:
			return domain.Group{}, domain.Errorf(domain.Invalid, "roles[%d]: %q is not a role href like /v2/accounts/%s/roles/<id>", i, href, account)
		case a != account:
			return domain.Group{}, domain.Errorf(domain.Invalid, "roles[%d]: %s is a role of account %s; a group holds roles of its own account (%s)", i, href, a, account)
		case seen[id]:
			return domain.Group{}, domain.Errorf(domain.Invalid, "roles[%d]: %s is listed twice", i, href)
		}
		seen[id] = true
		g.Roles = append(g.Roles, id)
	}
	return g, nil
}

// parseRoleHref splits /v2/accounts/<account>/roles/<id>.
func parseRoleHref(href string) (account, id string, ok bool) {
	return parseMemberHref(href, "roles")
}

func parseMemberHref(href, collection string) (account, id string, ok bool) {
	rest, found := strings.CutPrefix(href, "/v2/accounts/")
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[1] != collection || !ids.Valid(parts[0]) || !ids.Valid(parts[2]) {
		return "", "", false
	}
	return parts[0], parts[2], true
}

func missingRole(err error, account string) error {
	var m *store.MissingRoleError
	if errors.As(err, &m) {
		return domain.Errorf(domain.Invalid, "role %s does not exist", roleHref(account, m.RoleID))
	}
	return err
}

func groupIDs(r *http.Request) (acct, id string, err error) { return memberIDs(r, "group_id", "group") }

func (h *handler) listGroups(r *http.Request, p caller.Principal) (int, any, error) {
	return listIn(h, r, p, apigw.Lister[domain.Group, Group]{
		Name: "groups",
		Out:  func(x domain.Group) (Group, error) { return groupOut(x), nil },
		Sort: sortNamed(Group.named, func(x Group) string { return x.ID }),
	}, h.st.Roles.PageGroups, func(x domain.Group) string { return groupHref(x.AccountID, x.ID) })
}

func (h *handler) getGroup(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, id, err := groupIDs(r)
	if err != nil {
		return 0, nil, err
	}
	g, err := h.st.Roles.GetGroup(r.Context(), acct, id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no group %q in account %s", id, acct)
	}
	return http.StatusOK, groupTagged(g), nil
}

// groupTagged is a group's body with its ETag.
func groupTagged(g domain.Group) *apigw.Tagged {
	return apigw.WithETag(groupOut(g), groupETag(g))
}

func groupETag(g domain.Group) string { return etag.Of("group", g.AccountID+"/"+g.ID, g.Version) }

func (h *handler) createGroup(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	var in groupDoc
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	g, err := buildGroup(acct, in)
	if err != nil {
		return 0, nil, err
	}
	now := h.st.Now()
	g.ID, g.Version, g.Created, g.Updated = ids.New(), 1, now, now
	if err := h.st.Roles.CreateGroup(r.Context(), g); err != nil {
		return 0, nil, missingRole(domain.IfNotFound(err, "no account %s", acct), acct)
	}
	return http.StatusOK, groupTagged(g), nil
}

// patchGroup edits a group like patchRole edits a role. Its members hold
// the new list of roles from their next request on.
func (h *handler) patchGroup(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, id, err := groupIDs(r)
	if err != nil {
		return 0, nil, err
	}
	body, err := readPatch(r)
	if err != nil {
		return 0, nil, err
	}
	var g domain.Group
	read := func(ctx context.Context) (domain.Group, error) {
		prev, err := h.st.Roles.GetGroup(ctx, acct, id)
		return prev, domain.IfNotFound(err, "no group %q in account %s", id, acct)
	}
	err = store.Edit(r.Context(), apigw.IfMatch(r), read, groupETag, func(ctx context.Context, prev domain.Group) error {
		var in groupDoc
		if err := applyPatch(body, mustJSON(docOfGroup(prev)), &in, groupReadOnly...); err != nil {
			return err
		}
		if g, err = buildGroup(acct, in); err != nil {
			return err
		}
		g.ID, g.Version, g.Created, g.Updated = prev.ID, prev.Version+1, prev.Created, h.st.Now()
		return missingRole(h.st.Roles.PutGroup(ctx, g), acct)
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, groupTagged(g), nil
}

// deleteGroup deletes a group of the account the caller is authenticated
// into (docs/api.md#groups): from a parent account, even with a permit, it is a 403.
func (h *handler) deleteGroup(r *http.Request, p caller.Principal) (int, any, error) {
	acct, id, err := groupIDs(r)
	if err != nil {
		return 0, nil, err
	}
	if acct != p.AccountID {
		return 0, nil, domain.Errorf(domain.Forbidden, "a group can be deleted only from the account it belongs to: authenticate into account %s (POST /v2/users/self/authorization) to delete its groups", acct)
	}
	pre := apigw.IfMatch(r)
	var g domain.Group
	err = store.ReapplyIf(r.Context(), pre.Set(), func(ctx context.Context) (err error) {
		g, err = h.st.Roles.DeleteGroup(ctx, acct, id, func(cur domain.Group) error { return pre.Check(groupETag(cur)) })
		return err
	})
	var ce *store.CleanupError
	if err != nil && !errors.As(err, &ce) {
		return 0, nil, domain.IfNotFound(err, "no group %q in account %s", id, acct)
	}
	return http.StatusOK, groupOut(g), err
}
