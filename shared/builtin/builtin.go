// Package builtin holds the roles every account starts with and the
// platform operator's entitlement administrator roles, as data (roles.json),
// so the permissions are written down in exactly one place.
package builtin

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"cads/shared/authz"
)

//go:embed roles.json
var rolesJSON []byte

// Definition is a role before it is stored: no id, no timestamps.
type Definition struct {
	Name        string
	Description string
	Inheritable bool
	Control     bool
	// EntitlementAdministrator marks the operator's pair of roles.
	EntitlementAdministrator bool
	Permissions              []authz.Permission
}

type file struct {
	Control []struct {
		Name        string             `json:"name"`
		Description string             `json:"description"`
		Permissions []authz.Permission `json:"permissions"`
	} `json:"control"`
	EntitlementAdministrator struct {
		Name        string             `json:"name"`
		Description string             `json:"description"`
		Here        []authz.Permission `json:"here"`
		Below       []authz.Permission `json:"below"`
	} `json:"entitlement_administrator"`
}

func load() (file, error) {
	var f file
	if err := json.Unmarshal(rolesJSON, &f); err != nil {
		return f, fmt.Errorf("builtin roles: %w", err)
	}
	return f, nil
}

// ControlRoles returns the Account owner, Editor and Reader roles of an
// account (docs/api.md#control-roles), validated and with the protected permit added.
func ControlRoles(account string) ([]Definition, error) {
	f, err := load()
	if err != nil {
		return nil, err
	}
	var out []Definition
	for _, c := range f.Control {
		d, err := define(account, c.Name, c.Description, false, true, c.Permissions)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// EntitlementAdministrator returns the operator's pair of roles defined in
// the root account: one applying in the root account, one (inheritable)
// applying in every sub-account (docs/api.md#entitlement-administrator).
func EntitlementAdministrator(root string) ([]Definition, error) {
	f, err := load()
	if err != nil {
		return nil, err
	}
	ea := f.EntitlementAdministrator
	here, err := define(root, ea.Name, ea.Description, false, false, ea.Here)
	if err != nil {
		return nil, err
	}
	below, err := define(root, ea.Name, ea.Description+" (sub-accounts)", true, false, ea.Below)
	if err != nil {
		return nil, err
	}
	here.EntitlementAdministrator, below.EntitlementAdministrator = true, true
	return []Definition{here, below}, nil
}

// ProtectedPermission is the permit every role carries for its own account,
// so no holder is locked out of it (docs/api.md#protected-permit).
func ProtectedPermission(account string) authz.Permission {
	return authz.Permission{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts/" + account}}
}

func define(account, name, desc string, inheritable, control bool, ps []authz.Permission) (Definition, error) {
	out := make([]authz.Permission, 0, len(ps)+1)
	out = append(out, ProtectedPermission(account))
	for _, p := range ps {
		spec := make([]string, len(p.Spec))
		for i, s := range p.Spec {
			spec[i] = strings.ReplaceAll(s, "{account}", account)
		}
		out = append(out, authz.Permission{Method: p.Method, Effect: p.Effect, Spec: spec})
	}
	valid, err := authz.ValidatePermissions(out)
	if err != nil {
		return Definition{}, fmt.Errorf("builtin role %q: %w", name, err)
	}
	return Definition{Name: name, Description: desc, Inheritable: inheritable, Control: control, Permissions: valid}, nil
}
