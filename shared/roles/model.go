package roles

import (
	"time"

	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/domain"
	"cads/shared/users"
)

// Role is the wire shape of a role (the reference document's Role, plus
// id, description and the read-only control flag of the control roles).
type Role struct {
	ID                 string             `json:"id"`
	Href               string             `json:"href"`
	Name               string             `json:"name"`
	Description        string             `json:"description"`
	Inheritable        bool               `json:"inheritable"`
	Permissions        []authz.Permission `json:"permissions"`
	MFARequired        bool               `json:"mfa_required"`
	MaximumAuthAgeSecs *int               `json:"maximum_auth_age_secs,omitempty"`
	Control            bool               `json:"control,omitempty"`
	Created            time.Time          `json:"created"`
	Updated            time.Time          `json:"updated"`
}

// named is what the collections of roles, groups and service users are
// ordered by: `order` takes name, created and updated.
type named struct {
	name             string
	created, updated time.Time
}

func (r Role) named() named        { return named{r.Name, r.Created, r.Updated} }
func (g Group) named() named       { return named{g.Name, g.Created, g.Updated} }
func (u ServiceUser) named() named { return named{u.Name, u.Created, u.Updated} }

// sortNamed is the Sort of a collection of named members, for an `order`
// the store does not keep: created unless told, ties broken by id.
func sortNamed[T any](of func(T) named, id func(T) string) func([]T, []apigw.OrderKey) {
	return func(out []T, order []apigw.OrderKey) {
		apigw.Sort(out, order, func(x T, field string) any {
			n := of(x)
			switch field {
			case "name":
				return n.name
			case "updated":
				return n.updated
			}
			return n.created
		}, id, apigw.OrderKey{Field: "created"})
	}
}

func roleHref(account, id string) string { return accountHref(account) + "/roles/" + id }

func roleOut(r domain.Role) Role {
	out := Role{ID: r.ID, Href: roleHref(r.AccountID, r.ID), Name: r.Name, Description: r.Description,
		Inheritable: r.Inheritable, Permissions: r.Permissions, MFARequired: r.MFARequired, Control: r.Control,
		Created: r.Created, Updated: r.Updated}
	if out.Permissions == nil {
		out.Permissions = []authz.Permission{}
	}
	if r.MaxAuthAgeSecs > 0 {
		n := r.MaxAuthAgeSecs
		out.MaximumAuthAgeSecs = &n
	}
	return out
}

// Group is the wire shape of a group: its roles are role hrefs.
type Group struct {
	ID      string    `json:"id"`
	Href    string    `json:"href"`
	Name    string    `json:"name"`
	Roles   []string  `json:"roles"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

func groupHref(account, id string) string { return accountHref(account) + "/groups/" + id }

func groupOut(g domain.Group) Group {
	out := Group{ID: g.ID, Href: groupHref(g.AccountID, g.ID), Name: g.Name, Roles: make([]string, 0, len(g.Roles)),
		Created: g.Created, Updated: g.Updated}
	for _, r := range g.Roles {
		out.Roles = append(out.Roles, roleHref(g.AccountID, r))
	}
	return out
}

// Invitation is the wire shape of a role invitation (Role set) and of a
// group invitation (Group set).
type Invitation struct {
	ID        string     `json:"id"`
	Href      string     `json:"href"`
	UserEmail string     `json:"user_email"`
	Role      string     `json:"role,omitempty"`
	Group     string     `json:"group,omitempty"`
	State     string     `json:"state"`
	Created   time.Time  `json:"created"`
	Sent      *time.Time `json:"sent,omitempty"`
	Accepted  *time.Time `json:"accepted,omitempty"`
	GrantedBy string     `json:"granted_by,omitempty"`
}

func invitationOut(inv domain.Invitation) Invitation {
	out := Invitation{ID: inv.ID, Href: inv.Ref().Href(), UserEmail: inv.Email, State: inv.State,
		Created: inv.Created, Sent: inv.Sent, Accepted: inv.Accepted}
	if inv.Kind == domain.InvitationGroup {
		out.Group = groupHref(inv.AccountID, inv.Target)
	} else {
		out.Role = roleHref(inv.AccountID, inv.Target)
	}
	if inv.GrantedBy != "" {
		out.GrantedBy = userHref(inv.GrantedBy)
	}
	return out
}

// ServiceUser is the wire shape of a service user. AccessKeys never carry
// a secret, except in the response that creates the service user.
type ServiceUser struct {
	ID          string    `json:"id"`
	Href        string    `json:"href"`
	Email       string    `json:"email"`
	Account     string    `json:"account"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	AccessKeys  []any     `json:"access_keys"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
}

func serviceUserHref(account, id string) string { return accountHref(account) + "/service-users/" + id }

func serviceUserOut(u domain.ServiceUser, keys []domain.AccessKey, now time.Time) ServiceUser {
	out := ServiceUser{ID: u.ID, Href: serviceUserHref(u.Account, u.ID), Email: u.Email, Account: accountHref(u.Account),
		Name: u.Name, Description: u.Description, AccessKeys: []any{}, Created: u.Created, Updated: u.Updated}
	for _, k := range keys {
		if !k.Expired(now) {
			out.AccessKeys = append(out.AccessKeys, keyOut(k))
		}
	}
	return out
}

// keyOut is the users function's access key shape, so a key reads the
// same wherever it is shown.
func keyOut(k domain.AccessKey) users.AccessKey {
	out := users.AccessKey{ID: k.ID, Href: userHref(k.PrincipalID) + "/access-keys/" + k.ID, Type: k.Type,
		Durability: k.Durability, Expiry: k.Expiry, LastUsed: k.LastUsed, Created: k.Created}
	if k.Account != "" {
		h := accountHref(k.Account)
		out.Account = &h
	}
	return out
}
