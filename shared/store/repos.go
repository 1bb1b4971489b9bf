package store

// The table's repositories, one per entity family (docs/data-model.md): each
// is the table (*Table: keys, transactions, pages, retries, the consistency
// rules) with the reads and writes of its entities. A function's handler
// declares the methods it calls of each repository it uses; a write that
// spans families (a role's usage count, an invitation's outbox entry) is
// one transaction built by the repository of the entity it is about.

// Store is the table's repositories. It is safe for concurrent use.
type Store struct {
	*Table
	Accounts     *Accounts     // the account tree, billing
	Entitlements *Entitlements // entitlements, quotas and usage counts
	Roles        *Roles        // roles, groups, grants and their holders
	Principals   *Principals   // users, service users, access keys, credentials
	Invitations  *Invitations  // invitations and group invitations
	Applications *Applications // applications, aliases, actions, page and web controls
	Tasks        *Tasks        // tasks, certificate authorities, the outbox
	AddressSets  *AddressSets  // address sets, their entries and expiry sweeps
	Metrics      *Metrics      // metric buckets, progress, prototypes
	Logs         *Logs         // log chunks and archives
	Tests        *Tests        // load tests and their runs
	Audit        *Audit        // the audit trail
	Installation *Installation // the installation record, role upgrades, schema migrations
}

// Accounts is the account tree and its billing.
type Accounts struct{ *Table }

// Entitlements is entitlements, quotas and the usage counts they bound.
type Entitlements struct{ *Table }

// Roles is roles, groups, grants and their holders.
type Roles struct{ *Table }

// Principals is users, service users, their access keys and credentials.
type Principals struct{ *Table }

// Invitations is invitations and group invitations.
type Invitations struct{ *Table }

// Applications is applications, their aliases, actions and page and web
// controls.
type Applications struct{ *Table }

// Tasks is tasks, the certificate authorities they issue from and the
// outbox's due entries.
type Tasks struct{ *Table }

// AddressSets is address sets, their entries and the expiry sweep.
type AddressSets struct{ *Table }

// Metrics is metric buckets, aggregation progress and metric prototypes.
type Metrics struct{ *Table }

// Logs is log chunks and log archives.
type Logs struct{ *Table }

// Tests is load tests, their archives and runs.
type Tests struct{ *Table }

// Audit is the audit trail's events.
type Audit struct{ *Table }

// Installation is the installation record, built-in role upgrades and
// schema migrations.
type Installation struct{ *Table }
