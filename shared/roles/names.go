package roles

import (
	"cads/shared/builtin"
	"cads/shared/domain"
	"cads/shared/names"
)

// builtinNames are the names of the built-in roles: the control roles
// (Account owner, Editor, Reader) and the entitlement administrator. No
// other role may take a name that reads as one of them (names.Same), and no
// built-in role may lose its name, so a role's name and account identify
// the Account owner role for the invitation rule, and no tenant's role can pass for one in a
// list of roles or an invitation.
type builtinNames struct {
	owner, admin string
	reserved     map[string]string // each of names.Keys(name) → name
}

func loadBuiltinNames() (builtinNames, error) {
	control, err := builtin.ControlRoles("a")
	if err != nil {
		return builtinNames{}, err
	}
	admin, err := builtin.EntitlementAdministrator("a")
	if err != nil {
		return builtinNames{}, err
	}
	n := builtinNames{owner: control[0].Name, admin: admin[0].Name, reserved: map[string]string{}}
	for _, d := range append(control, admin...) {
		for _, k := range names.Keys(d.Name) {
			n.reserved[k] = d.Name
		}
	}
	return n, nil
}

// clash returns the built-in role name that name reads as, if any.
func (n builtinNames) clash(name string) (string, bool) {
	for _, k := range names.Keys(name) {
		if b, ok := n.reserved[k]; ok {
			return b, true
		}
	}
	return "", false
}

// isBuiltin reports whether r is one of the built-in roles themselves: a
// control role, or an entitlement administrator role (by the flag the
// bootstrap sets, as the engine identifies it).
func (n builtinNames) isBuiltin(r domain.Role) bool {
	return r.Control || r.EntitlementAdministrator
}
