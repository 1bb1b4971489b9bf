package roles

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/builtin"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/jsontext"
	"cads/shared/names"
	"cads/shared/store"
)

// Limits of role fields (names as in the reference document).
const (
	maxNameLen        = 50
	maxDescriptionLen = 200
	// maxPermissions keeps every decision of a role's holders cheap.
	maxPermissions = 100
)

// roleDoc is a role's editable configuration: the body of POST, and the
// document PATCH applies a merge patch or a JSON Patch to.
type roleDoc struct {
	Name               *string             `json:"name"`
	Description        *string             `json:"description"`
	Inheritable        *bool               `json:"inheritable"`
	Permissions        *[]authz.Permission `json:"permissions"`
	MFARequired        *bool               `json:"mfa_required"`
	MaximumAuthAgeSecs *int                `json:"maximum_auth_age_secs"`
}

// roleReadOnly are fields of a Role that its configuration does not hold.
var roleReadOnly = []string{"id", "href", "control", "created", "updated"}

func docOfRole(r domain.Role) roleDoc {
	perms := r.Permissions
	if perms == nil {
		perms = []authz.Permission{}
	}
	d := roleDoc{Name: &r.Name, Description: &r.Description, Inheritable: &r.Inheritable, Permissions: &perms, MFARequired: &r.MFARequired}
	if r.MaxAuthAgeSecs > 0 {
		d.MaximumAuthAgeSecs = &r.MaxAuthAgeSecs
	}
	return d
}

func validText(field, s string, max int, required bool) (string, error) {
	s = strings.TrimSpace(s)
	if required && s == "" {
		return "", domain.Errorf(domain.Invalid, "%s must not be empty", field)
	}
	if err := jsontext.CheckText(field, s); err != nil {
		return "", err
	}
	if utf8.RuneCountInString(s) > max {
		return "", domain.Errorf(domain.Invalid, "%s must be valid UTF-8 of at most %d characters", field, max)
	}
	return s, nil
}

// buildRole validates a role configuration as a whole and returns the role
// it describes: role id of account (no version or times). prev is the role
// being patched, nil for a new one.
//
// The permit for GET /v2/accounts/<account> (docs/api.md#protected-permit) is always kept:
// added first when the configuration lacks it, whatever removed it. A deny
// of the same role that would cancel it is a 400, so no configuration can
// lock the role's holders out of the account.
func (h *handler) buildRole(account, id string, in roleDoc, prev *domain.Role) (domain.Role, error) {
	if in.Name == nil {
		return domain.Role{}, domain.Errorf(domain.Invalid, "name is required")
	}
	name, err := validText("name", *in.Name, maxNameLen, true)
	if err != nil {
		return domain.Role{}, err
	}
	if err := names.Check("name", name); err != nil {
		return domain.Role{}, err
	}
	r := domain.Role{AccountID: account, ID: id, Name: name}
	if prev != nil {
		r.Control, r.EntitlementAdministrator = prev.Control, prev.EntitlementAdministrator
		r.Builtin, r.BuiltinRevision = prev.Builtin, prev.BuiltinRevision
	}
	if in.Description != nil {
		if r.Description, err = validText("description", *in.Description, maxDescriptionLen, false); err != nil {
			return domain.Role{}, err
		}
	}
	if in.Inheritable != nil {
		r.Inheritable = *in.Inheritable
	}
	if in.MFARequired != nil {
		r.MFARequired = *in.MFARequired
	}
	if in.MaximumAuthAgeSecs != nil {
		if *in.MaximumAuthAgeSecs < 1 {
			return domain.Role{}, domain.Errorf(domain.Invalid, "maximum_auth_age_secs must be a positive number of seconds")
		}
		r.MaxAuthAgeSecs = *in.MaximumAuthAgeSecs
	}
	renamed := prev == nil || prev.Name != r.Name
	builtinRole := prev != nil && h.names.isBuiltin(*prev)
	switch {
	case prev != nil && prev.Control && renamed:
		return domain.Role{}, domain.Errorf(domain.Invalid, "role %q is a control role: its name cannot change (its permissions can)", prev.Name)
	case prev != nil && prev.Control && prev.Inheritable != r.Inheritable:
		return domain.Role{}, domain.Errorf(domain.Invalid, "role %q is a control role: it applies in its own account, and inheritable cannot change", prev.Name)
	case builtinRole && renamed:
		return domain.Role{}, domain.Errorf(domain.Invalid, "role %q is a built-in role: its name cannot change", prev.Name)
	case !builtinRole:
		// Also when a patch keeps the name: a role named before this rule
		// must not keep passing for a built-in one through its edits.
		if b, ok := h.names.clash(r.Name); ok {
			return domain.Role{}, domain.Errorf(domain.Invalid, "name %q is reserved: it reads as the built-in role %q (%s); choose another", r.Name, b, domain.NamesCompared)
		}
	}
	var perms []authz.Permission
	if in.Permissions != nil {
		perms = *in.Permissions
	}
	if len(perms) > maxPermissions {
		return domain.Role{}, domain.Errorf(domain.Invalid, "a role holds at most %d permissions (got %d)", maxPermissions, len(perms))
	}
	valid, err := authz.ValidatePermissions(perms)
	if err != nil {
		return domain.Role{}, domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	protected := builtin.ProtectedPermission(account)
	added := 0
	if !slices.ContainsFunc(valid, func(p authz.Permission) bool { return samePermission(p, protected) }) {
		valid, added = append([]authz.Permission{protected}, valid...), 1
	}
	r.Permissions = valid
	// The engine itself says whether the role still grants it.
	c, err := authz.Compile(r.AuthzRole())
	if err != nil {
		return domain.Role{}, domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	if d := authz.Decide([]*authz.CompiledRole{c}, protected.Method, protected.Spec[0]); !d.Allowed {
		blocker := "a deny permission"
		if len(d.Denied) > 0 {
			// Indexed as the caller wrote them, before the permit was added.
			m := d.Denied[0]
			blocker = fmt.Sprintf("permissions[%d] (deny %s %s)", m.Permission-added, m.Method, m.Pattern)
		}
		return domain.Role{}, domain.Errorf(domain.Invalid, "%s would lock the role's holders out of the account: every role keeps the permit for GET %s", blocker, protected.Spec[0])
	}
	return r, nil
}

func samePermission(a, b authz.Permission) bool {
	return a.Method == b.Method && a.Effect == b.Effect && slices.Equal(a.Spec, b.Spec)
}

func (h *handler) listRoles(r *http.Request, p caller.Principal) (int, any, error) {
	return listIn(h, r, p, apigw.Lister[domain.Role, Role]{
		Name: "roles",
		Out:  func(x domain.Role) (Role, error) { return roleOut(x), nil },
		Sort: sortNamed(Role.named, func(x Role) string { return x.ID }),
	}, h.st.Roles.PageRoles, func(x domain.Role) string { return roleHref(x.AccountID, x.ID) })
}

func (h *handler) getRole(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, id, err := roleIDs(r)
	if err != nil {
		return 0, nil, err
	}
	role, err := h.st.Roles.GetRole(r.Context(), acct, id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no role %q in account %s", id, acct)
	}
	return http.StatusOK, roleTagged(role), nil
}

// roleTagged is a role's body with its ETag.
func roleTagged(r domain.Role) *apigw.Tagged {
	return apigw.WithETag(roleOut(r), roleETag(r))
}

func roleETag(r domain.Role) string { return etag.Of("role", r.AccountID+"/"+r.ID, r.Version) }

func roleIDs(r *http.Request) (acct, id string, err error) { return memberIDs(r, "role_id", "role") }

func (h *handler) createRole(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	var in roleDoc
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	role, err := h.buildRole(acct, ids.New(), in, nil)
	if err != nil {
		return 0, nil, err
	}
	now := h.st.Now()
	role.Version, role.Created, role.Updated = 1, now, now
	if err := h.st.Roles.CreateRole(r.Context(), role); err != nil {
		return 0, nil, domain.IfNotFound(err, "no account %s", acct)
	}
	return http.StatusOK, roleTagged(role), nil
}

// patchRole edits a role with a merge patch or a JSON Patch; the result is
// validated as a whole, as a new role would be, and written only if the
// role did not change meanwhile; if it did, the patch applies again to the
// role as it is then (store.Reapply). The change applies to every
// holder's next request: the authorizer reads roles on every request.
func (h *handler) patchRole(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, id, err := roleIDs(r)
	if err != nil {
		return 0, nil, err
	}
	body, err := readPatch(r)
	if err != nil {
		return 0, nil, err
	}
	var role domain.Role
	read := func(ctx context.Context) (domain.Role, error) {
		prev, err := h.st.Roles.GetRole(ctx, acct, id)
		return prev, domain.IfNotFound(err, "no role %q in account %s", id, acct)
	}
	err = store.Edit(r.Context(), apigw.IfMatch(r), read, roleETag, func(ctx context.Context, prev domain.Role) error {
		var in roleDoc
		if err := applyPatch(body, mustJSON(docOfRole(prev)), &in, roleReadOnly...); err != nil {
			return err
		}
		if role, err = h.buildRole(acct, id, in, &prev); err != nil {
			return err
		}
		role.Version, role.Created, role.Updated = prev.Version+1, prev.Created, h.st.Now()
		return h.st.Roles.PutRole(ctx, role)
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, roleTagged(role), nil
}

func (h *handler) deleteRole(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, id, err := roleIDs(r)
	if err != nil {
		return 0, nil, err
	}
	pre := apigw.IfMatch(r)
	var role domain.Role
	err = store.ReapplyIf(r.Context(), pre.Set(), func(ctx context.Context) (err error) {
		role, err = h.st.Roles.DeleteRole(ctx, acct, id, func(cur domain.Role) error { return pre.Check(roleETag(cur)) })
		return err
	})
	var ce *store.CleanupError
	if err != nil && !errors.As(err, &ce) {
		return 0, nil, domain.IfNotFound(err, "no role %q in account %s", id, acct)
	}
	return http.StatusOK, roleOut(role), err
}
