// Package builtin holds the roles every account starts with and the
// platform operator's entitlement administrator roles, as data (roles.json),
// so the permissions are written down in exactly one place.
//
// The definitions carry a revision, and roles.json keeps what each revision
// changed, so a role stored at an older revision can be brought up to the
// current one without undoing what the account's administrators changed
// in it since (Upgrade; docs/rbac.md, Built-in roles).
package builtin

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"cads/shared/authz"
)

// Keys name the built-in roles: a role stores the key of the definition
// it was made from, so it is recognised whatever it is called.
const (
	KeyAccountOwner                  = "account-owner"
	KeyEditor                        = "editor"
	KeyReader                        = "reader"
	KeyEntitlementAdministrator      = "entitlement-administrator"
	KeyEntitlementAdministratorBelow = "entitlement-administrator-sub-accounts"
)

//go:embed roles.json
var rolesJSON []byte

// Definition is a role before it is stored: no id, no timestamps.
type Definition struct {
	// Key says which built-in role this is (Key* constants).
	Key string
	// Revision is the revision of the definitions this one is of.
	Revision    int
	Name        string
	Description string
	Inheritable bool
	Control     bool
	// EntitlementAdministrator marks the operator's pair of roles.
	EntitlementAdministrator bool
	Permissions              []authz.Permission
}

type file struct {
	Revision int `json:"revision"`
	Control  []struct {
		Key         string             `json:"key"`
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
	History []change `json:"history"`
	Digest  string   `json:"digest"`
}

// change is one revision's entry in the history: by role key, the permits
// it added and removed and the description it replaced.
type change struct {
	Revision          int                           `json:"revision"`
	Change            string                        `json:"change"`
	Added             map[string][]authz.Permission `json:"added"`
	Removed           map[string][]authz.Permission `json:"removed"`
	DescriptionBefore map[string]string             `json:"description_before"`
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
		d, err := define(account, c.Key, c.Name, c.Description, false, true, c.Permissions)
		if err != nil {
			return nil, err
		}
		d.Revision = f.Revision
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
	here, err := define(root, KeyEntitlementAdministrator, ea.Name, ea.Description, false, false, ea.Here)
	if err != nil {
		return nil, err
	}
	below, err := define(root, KeyEntitlementAdministratorBelow, ea.Name, ea.Description+" (sub-accounts)", true, false, ea.Below)
	if err != nil {
		return nil, err
	}
	here.EntitlementAdministrator, below.EntitlementAdministrator = true, true
	here.Revision, below.Revision = f.Revision, f.Revision
	return []Definition{here, below}, nil
}

// ProtectedPermission is the permit every role carries for its own account,
// so no holder is locked out of it (docs/api.md#protected-permit).
func ProtectedPermission(account string) authz.Permission {
	return authz.Permission{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts/" + account}}
}

func define(account, key, name, desc string, inheritable, control bool, ps []authz.Permission) (Definition, error) {
	out := make([]authz.Permission, 0, len(ps)+1)
	out = append(out, ProtectedPermission(account))
	out = append(out, forAccount(account, ps)...)
	valid, err := authz.ValidatePermissions(out)
	if err != nil {
		return Definition{}, fmt.Errorf("builtin role %q: %w", name, err)
	}
	return Definition{Key: key, Name: name, Description: desc, Inheritable: inheritable, Control: control, Permissions: valid}, nil
}

// forAccount replaces {account} in the patterns of ps.
func forAccount(account string, ps []authz.Permission) []authz.Permission {
	out := make([]authz.Permission, 0, len(ps))
	for _, p := range ps {
		spec := make([]string, len(p.Spec))
		for i, s := range p.Spec {
			spec[i] = strings.ReplaceAll(s, "{account}", account)
		}
		out = append(out, authz.Permission{Method: p.Method, Effect: p.Effect, Spec: spec})
	}
	return out
}

// Revision is the revision of the current definitions.
func Revision() int {
	f, err := load()
	if err != nil {
		return 0
	}
	return f.Revision
}

// KeyOf says which built-in role a stored role is, "" for a role an
// account's administrators made. Only the platform sets control and
// entitlement_administrator, so those flags, not the name, identify a
// built-in role; key is what the role stored (roles made before keys were
// stored have none: a control role's name cannot change, so it names the
// definition, and the inheritable flag tells the operator's two roles
// apart).
func KeyOf(key string, control, entitlementAdministrator, inheritable bool, name string) string {
	switch {
	case !control && !entitlementAdministrator:
		return ""
	case key != "":
		return key
	case entitlementAdministrator && inheritable:
		return KeyEntitlementAdministratorBelow
	case entitlementAdministrator:
		return KeyEntitlementAdministrator
	}
	f, err := load()
	if err != nil {
		return ""
	}
	for _, c := range f.Control {
		if c.Name == name {
			return c.Key
		}
	}
	return ""
}

// definitionOf is the current definition of the built-in role key in
// account.
func definitionOf(key, account string) (Definition, error) {
	var defs []Definition
	var err error
	if key == KeyEntitlementAdministrator || key == KeyEntitlementAdministratorBelow {
		defs, err = EntitlementAdministrator(account)
	} else {
		defs, err = ControlRoles(account)
	}
	if err != nil {
		return Definition{}, err
	}
	for _, d := range defs {
		if d.Key == key {
			return d, nil
		}
	}
	return Definition{}, fmt.Errorf("builtin: no role %q", key)
}

// grant is one (method, effect, pattern) of a permission list: the unit
// an upgrade adds or removes.
type grant struct{ method, effect, spec string }

func grants(ps []authz.Permission) []grant {
	var out []grant
	for _, p := range ps {
		for _, s := range p.Spec {
			out = append(out, grant{p.Method, p.Effect, s})
		}
	}
	return out
}

// Upgraded is a stored built-in role brought to the current revision.
type Upgraded struct {
	Description string
	Permissions []authz.Permission
	// Added and Removed are the patterns the upgrade changed, as
	// "METHOD effect pattern", for the log.
	Added, Removed []string
}

// Upgrade brings a built-in role (key, of account) stored at revision
// from, with the permissions and description it has now, to the current
// revision. It applies only what the definitions changed since from: a
// permit the account's administrators removed from the role, or added to
// it, stays as they left it unless a later revision added or removed that
// very permit; the description is replaced only if it is still the one
// revision from gave. A role stored before revisions were recorded is at
// revision 1.
func Upgrade(key, account string, from int, perms []authz.Permission, desc string) (Upgraded, error) {
	f, err := load()
	if err != nil {
		return Upgraded{}, err
	}
	cur, err := definitionOf(key, account)
	if err != nil {
		return Upgraded{}, err
	}
	from = max(from, 1)
	out := Upgraded{Description: desc, Permissions: slices.Clone(perms)}
	// The history, newest first, back to revision from: the description
	// that revision gave is the one the first later change replaced.
	wasDesc := cur.Description
	var added, removed []grant
	for i := len(f.History) - 1; i >= 0; i-- {
		h := f.History[i]
		if h.Revision <= from {
			break
		}
		if d, ok := h.DescriptionBefore[key]; ok {
			wasDesc = d
		}
		added = append(added, grants(forAccount(account, h.Added[key]))...)
		removed = append(removed, grants(forAccount(account, h.Removed[key]))...)
	}
	if desc == wasDesc {
		out.Description = cur.Description
	}
	now := grants(cur.Permissions)
	for _, g := range removed {
		if !slices.Contains(now, g) && remove(&out.Permissions, g) {
			out.Removed = append(out.Removed, g.method+" "+g.effect+" "+g.spec)
		}
	}
	for _, g := range added {
		if slices.Contains(now, g) && !slices.Contains(grants(out.Permissions), g) {
			add(&out.Permissions, g)
			out.Added = append(out.Added, g.method+" "+g.effect+" "+g.spec)
		}
	}
	valid, err := authz.ValidatePermissions(out.Permissions)
	if err != nil {
		return Upgraded{}, fmt.Errorf("builtin: upgrade role %q: %w", key, err)
	}
	out.Permissions = valid
	return out, nil
}

// add puts g into the first permission of its method and effect, or into
// a new one at the end.
func add(ps *[]authz.Permission, g grant) {
	for i, p := range *ps {
		if p.Method == g.method && p.Effect == g.effect {
			(*ps)[i].Spec = append(slices.Clone(p.Spec), g.spec)
			return
		}
	}
	*ps = append(*ps, authz.Permission{Method: g.method, Effect: g.effect, Spec: []string{g.spec}})
}

// remove takes g out of every permission of its method and effect,
// dropping a permission left with no pattern.
func remove(ps *[]authz.Permission, g grant) bool {
	found := false
	out := (*ps)[:0:0]
	for _, p := range *ps {
		if p.Method == g.method && p.Effect == g.effect && slices.Contains(p.Spec, g.spec) {
			found = true
			p.Spec = slices.DeleteFunc(slices.Clone(p.Spec), func(s string) bool { return s == g.spec })
			if len(p.Spec) == 0 {
				continue
			}
		}
		out = append(out, p)
	}
	*ps = out
	return found
}

// digest fingerprints the current definitions: roles.json records it, and
// a test fails when the definitions change without a new revision.
func digest(f file) string {
	b, _ := json.Marshal(struct {
		Control                  any
		EntitlementAdministrator any
	}{f.Control, f.EntitlementAdministrator})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
