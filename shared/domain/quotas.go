package domain

import "time"

// Collections an account grows through the API that no price meters: each
// is bounded by a quota so that one tenant cannot fill the table (one
// owner once created 10,405 roles in a minute). The entitlement
// administrator changes a quota with an entitlement of the collection's
// kind; without an active one the default below applies
// (docs/api.md#quotas).
const (
	// ResourceRoles: the account's custom roles (its three control roles
	// are not counted: they come with the account and cannot be deleted).
	ResourceRoles = "roles"
	// ResourceGroups: the account's groups.
	ResourceGroups = "groups"
	// ResourceServiceUsers: the account's service users.
	ResourceServiceUsers = "service_users"
	// ResourceInvitations, ResourceGroupInvitations: the account's role
	// and group invitations, in any state (an accepted one stays as the
	// record of what it granted).
	ResourceInvitations      = "invitations"
	ResourceGroupInvitations = "group_invitations"
	// ResourceActions: the actions of one application.
	ResourceActions = "actions"
	// ResourcePageControls: the page controls of one application.
	ResourcePageControls = "page_controls"
	// Web controls are the page controls in another shape (the same
	// items): page_controls bounds both.

	// ResourceTests: the account's stored application tests (their
	// archives: runs are application_tests). ResourceMetricPrototypes:
	// the account's metric prototypes.
	ResourceTests            = "tests"
	ResourceMetricPrototypes = "metric_prototypes"

	// ResourceAccessKeys, ResourceSessionKeys: the live (unexpired)
	// persistent and session keys of one user. Users belong to the
	// installation, not to an account, so the root account's entitlements
	// set these (docs/api.md#quotas). Service users have the one key they
	// are created with, bounded by service_users.
	ResourceAccessKeys  = "access_keys"
	ResourceSessionKeys = "session_keys"
)

// KeyQuota is the quota kind that counts keys of durability.
func KeyQuota(durability string) string {
	if durability == DurabilitySession {
		return ResourceSessionKeys
	}
	return ResourceAccessKeys
}

// Custom reports whether r is a role the account's administrators made,
// the roles the roles quota counts: the platform's own (control and
// entitlement administrator roles) come with the account or the
// installation.
func (r Role) Custom() bool { return !r.Control && !r.EntitlementAdministrator && r.Builtin == "" }

// QuotaDefault is one row of the quota table: the kind, its default, and
// whether it counts per application or per principal (user) rather than
// per account.
type QuotaDefault struct {
	Kind           string
	Default        int
	PerApplication bool
	PerPrincipal   bool
}

// quotaDefaults is the one table of default quotas (docs/api.md#quotas
// repeats it). Account-wide collections follow AWS IAM's per-account
// defaults where IAM has the like (1,000 roles, 300 groups); per-application
// collections are sized far above what an application's configuration
// uses, and bounded per application so that one application's list stays
// one short Query. Keys are bounded per user: AWS IAM allows 2 access keys
// per IAM user; 10 leaves room for rotation and per-tool keys. Session
// keys live 12 hours, and 100 live at once is far more than a person
// switching accounts uses while still bounding a script that mints them
// in a loop. A stored test holds its archive (3.5 MB at most) and its
// converted form (4 MB): 100 bound an account's tests at 750 MB. 500
// metric prototypes is five times CloudWatch Logs' 100 metric filters per
// log group, for all of an account's log types.
var quotaDefaults = []QuotaDefault{
	{Kind: ResourceRoles, Default: 1000},
	{Kind: ResourceGroups, Default: 300},
	{Kind: ResourceServiceUsers, Default: 1000},
	{Kind: ResourceInvitations, Default: 5000},
	{Kind: ResourceGroupInvitations, Default: 5000},
	{Kind: ResourceActions, Default: 100, PerApplication: true},
	{Kind: ResourcePageControls, Default: 200, PerApplication: true},
	{Kind: ResourceTests, Default: 100},
	{Kind: ResourceMetricPrototypes, Default: 500},
	{Kind: ResourceAccessKeys, Default: 10, PerPrincipal: true},
	{Kind: ResourceSessionKeys, Default: 100, PerPrincipal: true},
}

// InvitationQuota is the quota kind that counts invitations of kind
// (InvitationRole or InvitationGroup).
func InvitationQuota(kind string) string {
	if kind == InvitationGroup {
		return ResourceGroupInvitations
	}
	return ResourceInvitations
}

// QuotaDefaults returns the quota table, in the order documents list it.
func QuotaDefaults() []QuotaDefault { return append([]QuotaDefault(nil), quotaDefaults...) }

// Allowance is how many resources of kind an account with entitlements es
// may have at now, and whether it is limited at all (store.Allowance says
// why each case is as it is): the sum of the active quantities; a quota
// kind with no active entitlement has its default.
func Allowance(es []Entitlement, kind string, now time.Time) (limit int, limited bool) {
	active := false
	for _, e := range es {
		if e.Resource != kind {
			continue
		}
		limited = true
		if e.ActiveAt(now) {
			limit += e.Quantity
			active = true
		}
	}
	if d, ok := DefaultQuota(kind); ok && !active {
		return d.Default, true
	}
	return limit, limited
}

// DefaultQuota returns the default of a quota kind; ok is false for a kind
// that has none (applications, address sets: metered only by entitlements).
func DefaultQuota(kind string) (q QuotaDefault, ok bool) {
	for _, d := range quotaDefaults {
		if d.Kind == kind {
			return d, true
		}
	}
	return QuotaDefault{}, false
}
