package authz

import "strings"

// Class says which roles can ever grant a request, whatever their patterns
// say. Patterns are written by tenants; the class is decided by the route
// alone, so no pattern of a tenant's role can reach a route that belongs to
// the platform operator (docs/rbac.md, "Route classes").
type Class uint8

const (
	// ClassAccount: the roles that apply in the request's account (the key's
	// account, or {id} of /v2/accounts/{id}/...), by the scope rules.
	ClassAccount Class = iota
	// ClassGlobal: the user routes, /v2/users and /v2/users/{id}/... for
	// any id other than the caller's own. Users are not inside any account:
	// only roles that apply in the root account can grant these, so a
	// role defined anywhere else is inert here.
	ClassGlobal
	// ClassAdmin: creating accounts and writing entitlements. Only an
	// entitlement administrator role (by identity: Role.EntitlementAdministrator,
	// set by the bootstrap and by nothing else) that applies to the
	// request can grant these; a custom role with the same patterns cannot.
	ClassAdmin
)

func (c Class) String() string {
	switch c {
	case ClassAccount:
		return "account"
	case ClassGlobal:
		return "global"
	case ClassAdmin:
		return "entitlement administrator"
	}
	return "Class(?)"
}

// ClassOf returns the class of a request. The path should have passed
// CheckPath; principalID is the caller's id ("self" is always the caller).
func ClassOf(method, path, principalID string) Class {
	if path == "/v2/users" {
		return ClassGlobal
	}
	if rest, ok := strings.CutPrefix(path, "/v2/users/"); ok {
		who, _, _ := strings.Cut(rest, "/")
		if who == "self" || (principalID != "" && who == principalID) {
			return ClassAccount
		}
		return ClassGlobal
	}
	if path == "/v2/accounts" {
		if method == "POST" {
			return ClassAdmin
		}
		return ClassAccount
	}
	if rest, ok := strings.CutPrefix(path, accountsPrefix); ok && method != "GET" {
		_, sub, _ := strings.Cut(rest, "/")
		if sub == "entitlements" || strings.HasPrefix(sub, "entitlements/") {
			return ClassAdmin
		}
	}
	return ClassAccount
}

// RootOf returns the root account of the tree an account belongs to, given
// that account's ancestors (root first): the first ancestor, or the account
// itself when it has none.
func RootOf(account string, ancestors []string) string {
	if len(ancestors) > 0 {
		return ancestors[0]
	}
	return account
}

const (
	msgGlobalInert = "user routes are decided only by roles that apply in the root account"
	msgAdminInert  = "creating accounts and writing entitlements is granted only by an entitlement administrator role"
)

// inert explains, after a refusal of a global or admin request, which held
// role would have permitted it if its patterns were all that counted, so a
// tenant's permit that can never work is reported as such rather than as a
// mystery. It runs on the refusal path only.
func inert(class Class, roles []*CompiledRole, method, path string) string {
	d := Decide(roles, method, path)
	if !d.Allowed {
		return ""
	}
	why := msgGlobalInert
	if class == ClassAdmin {
		why = msgAdminInert
	}
	return "; role " + quoteShort(d.RoleName) + " (" + d.Role + ") " + d.Permission.String() + " would permit it but is inert here: " + why
}

// onlyAdmin keeps the entitlement administrator roles of roles.
func onlyAdmin(roles []*CompiledRole) []*CompiledRole {
	out := roles[:0:0]
	for _, r := range roles {
		if r != nil && r.role.EntitlementAdministrator {
			out = append(out, r)
		}
	}
	return out
}
