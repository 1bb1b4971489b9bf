package domain

import (
	"cads/shared/authz"
	"time"
)

// Account is one node of the account tree. Ancestors (root first) is stored
// on the item so that any request is decided with one read of it, whatever
// the depth; an account never moves, so the list never goes stale.
type Account struct {
	ID        string    `dynamodbav:"id"`
	Name      string    `dynamodbav:"name"`
	Keyword   string    `dynamodbav:"keyword"`
	Parent    string    `dynamodbav:"parent,omitempty"`
	Ancestors []string  `dynamodbav:"ancestors"`
	Owner     string    `dynamodbav:"owner,omitempty"`
	Created   time.Time `dynamodbav:"created"`
	Updated   time.Time `dynamodbav:"updated"`
	// NameKey is the form of Name that uniqueness compares (shared/names:
	// look-alike names have one key) and the account's name claim is
	// stored under. Whoever names an account sets it; an account written
	// before schema version 3 has none, and its claim is its lower-cased
	// name until the migration moves it.
	NameKey string `dynamodbav:"name_key,omitempty"`
	// NameSkeleton is Name's second key (shared/names.Skeleton: the UTS
	// #39 skeleton of the name as written, which sees a capital I as a
	// small l). Uniqueness compares both keys, and where it differs from
	// NameKey the account holds a second claim under it. Whoever names an
	// account sets it; an account written before schema version 4 has
	// none, and no second claim, until the migration gives it both.
	NameSkeleton string `dynamodbav:"name_skeleton,omitempty"`
}

// Role is an RBAC role of an account.
type Role struct {
	AccountID   string `dynamodbav:"account"`
	ID          string `dynamodbav:"id"`
	Name        string `dynamodbav:"name"`
	Description string `dynamodbav:"description,omitempty"`
	Inheritable bool   `dynamodbav:"inheritable"`
	Control     bool   `dynamodbav:"control"`
	// EntitlementAdministrator is set by the bootstrap on the operator's
	// entitlement administrator roles and by nothing else: the engine lets
	// only these roles grant account creation and entitlement writes.
	EntitlementAdministrator bool `dynamodbav:"entitlement_administrator,omitempty"`
	// Builtin and BuiltinRevision are set on the roles the platform makes
	// (control and entitlement administrator roles): which definition of
	// shared/builtin the role was made from, and the revision it was last
	// brought to. Deployments upgrade roles of older revisions.
	Builtin         string             `dynamodbav:"builtin,omitempty"`
	BuiltinRevision int                `dynamodbav:"builtin_revision,omitempty"`
	MFARequired     bool               `dynamodbav:"mfa_required"`
	MaxAuthAgeSecs  int                `dynamodbav:"maximum_auth_age_secs,omitempty"`
	Permissions     []authz.Permission `dynamodbav:"permissions"`
	// Version grows by one on every change, so compiled copies are keyed
	// by it and never outlive an edit.
	Version int       `dynamodbav:"version"`
	Created time.Time `dynamodbav:"created"`
	Updated time.Time `dynamodbav:"updated"`
}

// AuthzRole is the engine's view of r.
func (r Role) AuthzRole() authz.Role {
	return authz.Role{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Inheritable: r.Inheritable,
		EntitlementAdministrator: r.EntitlementAdministrator, Permissions: r.Permissions}
}

// Principal kinds.
const (
	KindUser        = "user"
	KindServiceUser = "service_user"
)

// Principal is a user or a service user.
type Principal struct {
	ID      string    `dynamodbav:"id"`
	Kind    string    `dynamodbav:"kind"`
	Email   string    `dynamodbav:"email"`
	Name    string    `dynamodbav:"name,omitempty"`
	Phone   string    `dynamodbav:"phone,omitempty"`   // users only
	Account string    `dynamodbav:"account,omitempty"` // service users belong to one account
	Created time.Time `dynamodbav:"created"`
	Updated time.Time `dynamodbav:"updated"`
	// Version grows by one on every change (its ETag); 0 on a principal
	// written before principals had one.
	Version int `dynamodbav:"version"`
}

// Key durabilities.
const (
	DurabilityPersistent = "persistent"
	DurabilitySession    = "session"
)

// AccessKey is a bearer credential. Only the SHA-256 of the secret is kept.
type AccessKey struct {
	ID          string `dynamodbav:"id"`
	PrincipalID string `dynamodbav:"principal"`
	Type        string `dynamodbav:"type"`
	Durability  string `dynamodbav:"durability"`
	Account     string `dynamodbav:"account,omitempty"`
	// AccountAncestors copies the bound account's ancestors so the
	// authorizer needs no read of the account item for the common case.
	AccountAncestors []string   `dynamodbav:"account_ancestors,omitempty"`
	SecretHash       string     `dynamodbav:"secret_hash"`
	Expiry           *time.Time `dynamodbav:"expiry,omitempty"`
	LastUsed         *time.Time `dynamodbav:"last_used,omitempty"`
	Created          time.Time  `dynamodbav:"created"`
	// TTL (epoch seconds) lets DynamoDB delete expired keys a day after
	// they expire; the authorizer refuses them from the expiry on.
	TTL int64 `dynamodbav:"ttl,omitempty"`
	// Origin and Parent make the key's lineage (docs/rbac.md, "Key
	// lineage"): set on a key minted with a session key, or with a key that
	// itself has an origin. Origin is the persistent key at the root of the
	// chain, however long it is; Parent the key it was minted with. The
	// authorizer refuses the key once either of them is gone or expired,
	// so it reads two keys at most, whatever the chain's length.
	Origin *KeyRef `dynamodbav:"origin,omitempty"`
	Parent *KeyRef `dynamodbav:"parent,omitempty"`
}

// KeyRef names an access key. Minting keys for another user (the
// operator's POST /v2/users/{id}/access-keys) makes lineages that cross
// principals, so the principal is part of the name.
type KeyRef struct {
	Principal string `dynamodbav:"principal"`
	ID        string `dynamodbav:"id"`
}

// Ref names k.
func (k AccessKey) Ref() KeyRef { return KeyRef{Principal: k.PrincipalID, ID: k.ID} }

// Expired reports whether the key can no longer be used at now.
func (k AccessKey) Expired(now time.Time) bool { return k.Expiry != nil && !now.Before(*k.Expiry) }

// Lineage returns the keys k's validity depends on besides itself: its
// origin and its parent (once when they are the same key), none for a key
// that starts its own lineage.
func (k AccessKey) Lineage() []KeyRef {
	var out []KeyRef
	if k.Origin != nil {
		out = append(out, *k.Origin)
	}
	if k.Parent != nil && (k.Origin == nil || *k.Parent != *k.Origin) {
		out = append(out, *k.Parent)
	}
	return out
}

// Grant records that a principal holds a role: an accepted invitation (or
// the bootstrap). It lives in the principal's partition so the authorizer
// reads all of a principal's grants with one Query. A grant with Group set
// (and no RoleID) is a group membership, from an accepted group invitation:
// it holds every role the group lists when a request is decided.
type Grant struct {
	PrincipalID string    `dynamodbav:"principal"`
	AccountID   string    `dynamodbav:"role_account"`
	RoleID      string    `dynamodbav:"role"`
	Group       string    `dynamodbav:"group,omitempty"`
	Via         string    `dynamodbav:"via"` // href of the invitation, or "bootstrap"
	Created     time.Time `dynamodbav:"created"`
}

// Installation marks a bootstrapped table.
type Installation struct {
	RootAccount string    `dynamodbav:"root_account"`
	Operator    string    `dynamodbav:"operator"`
	Created     time.Time `dynamodbav:"created"`
}

// RolesUpgrade is the progress of bringing the built-in roles of every
// account to one revision of their definitions: a run that stops before
// the end leaves it, and the next run goes on from After.
type RolesUpgrade struct {
	Revision int `dynamodbav:"revision"`
	// After is the position in the installation's accounts (creation
	// order) up to which every account's roles are done.
	After    string    `dynamodbav:"after,omitempty"`
	Done     bool      `dynamodbav:"done"`
	Accounts int       `dynamodbav:"accounts"`
	Roles    int       `dynamodbav:"roles"`
	Started  time.Time `dynamodbav:"started"`
	Updated  time.Time `dynamodbav:"updated"`
}

// SchemaMigration is the progress of the schema migration (shared/store,
// migrate.go) at one version: a run that stops before the end leaves the
// table key its scan stopped after, and the next run goes on from there.
type SchemaMigration struct {
	Version int `dynamodbav:"version"`
	// AfterPK/AfterSK: the last table key scanned ("" before the first
	// page).
	AfterPK string `dynamodbav:"after_pk,omitempty"`
	AfterSK string `dynamodbav:"after_sk,omitempty"`
	Done    bool   `dynamodbav:"done"`
	Scanned int    `dynamodbav:"scanned"`
	// Fixed counts the items written, by entity (usage and alias for the
	// derived items).
	Fixed   map[string]int `dynamodbav:"fixed,omitempty"`
	Started time.Time      `dynamodbav:"started"`
	Updated time.Time      `dynamodbav:"updated"`
}
