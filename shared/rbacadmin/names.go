package rbacadmin

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"cads/shared/builtin"
	"cads/shared/domain"
)

// builtinNames are the names of the built-in roles: the control roles
// (Account owner, Editor, Reader) and the entitlement administrator. No
// other role may take a name that reads as one of them (readsAs), and no
// built-in role may lose its name, so a role's name and account identify
// the Account owner role for the invitation rule, and no tenant's role can pass for one in a
// list of roles or an invitation.
type builtinNames struct {
	owner, admin string
	reserved     map[string]string // readsAs(name) → name
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
		n.reserved[readsAs(d.Name)] = d.Name
	}
	return n, nil
}

// clash returns the built-in role name that name reads as, if any.
func (n builtinNames) clash(name string) (string, bool) {
	b, ok := n.reserved[readsAs(name)]
	return b, ok
}

// isBuiltin reports whether r is one of the built-in roles themselves: a
// control role, or an entitlement administrator role (by the flag the
// bootstrap sets, as the engine identifies it).
func (n builtinNames) isBuiltin(r domain.Role) bool {
	return r.Control || r.EntitlementAdministrator
}

// readsAs is the form in which two names that a reader cannot tell apart
// are equal: Unicode compatibility normalisation (NFKC: full-width and
// other compatibility forms, no-break and typographic spaces), case
// folding, removal of characters that render as nothing
// (Default_Ignorable_Code_Point: zero-width spaces and joiners, soft
// hyphens, variation selectors, ...), and any run of white space as one
// space, none at either end. Folding can leave text unnormalised, so NFKC
// runs again after it.
func readsAs(name string) string {
	s := norm.NFKC.String(cases.Fold().String(norm.NFKC.String(name)))
	s = strings.Map(func(r rune) rune {
		if defaultIgnorable(r) {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.Is(unicode.White_Space, r) }), " ")
}

// defaultIgnorable is Unicode's derived property Default_Ignorable_Code_Point,
// which the standard library does not carry as a table. It is derived here
// from the tables it does carry, by the property's own definition
// (DerivedCoreProperties.txt): Other_Default_Ignorable_Code_Point + Cf +
// Variation_Selector - White_Space - FFF9..FFFB (interlinear annotation) -
// 13430..13440 (Egyptian hieroglyph format controls) -
// Prepended_Concatenation_Mark. The two ranges are the only hand-written
// part: they are named ranges of the definition, not a property Go exports.
func defaultIgnorable(r rune) bool {
	if !unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector) {
		return false
	}
	switch {
	case unicode.In(r, unicode.White_Space, unicode.Prepended_Concatenation_Mark):
		return false
	case r >= 0xfff9 && r <= 0xfffb, r >= 0x13430 && r <= 0x13440:
		return false
	}
	return true
}
