package domain

import (
	"fmt"
	"time"
)

// Resource kinds an entitlement allocates.
const (
	// ResourceApplications: how many applications the account may have.
	ResourceApplications = "applications"
	// ResourceAddressSets: how many address sets the account may have.
	ResourceAddressSets = "address_sets"
	// ResourceApplicationTests: how many application tests the account may
	// run per period.
	ResourceApplicationTests = "application_tests"
)

// ResourceKinds lists the kinds, in the order error messages name them.
// The quota kinds (quotas.go) follow the metered ones.
func ResourceKinds() []string {
	out := []string{ResourceApplications, ResourceAddressSets, ResourceApplicationTests}
	for _, d := range quotaDefaults {
		out = append(out, d.Kind)
	}
	return out
}

// Entitlement periods: how often an entitlement is charged (and, for
// application tests, the window its quantity counts runs in).
const (
	PeriodMonth = "month"
	PeriodYear  = "year"
)

// Entitlement records resources allocated to an account (docs/api.md#entitlements): a
// quantity of one resource kind, charged unit price x quantity per period
// while it is active (from Started, until Expiry if set).
type Entitlement struct {
	ID             string     `dynamodbav:"id"`
	Account        string     `dynamodbav:"account"`
	PlanID         string     `dynamodbav:"plan_id,omitempty"`
	Resource       string     `dynamodbav:"resource"`
	Quantity       int        `dynamodbav:"quantity"`
	Period         string     `dynamodbav:"period"`
	UnitPriceCents int64      `dynamodbav:"unit_price_cents"`
	Started        time.Time  `dynamodbav:"started"`
	Expiry         *time.Time `dynamodbav:"expiry,omitempty"`
	// Version grows by one on every change, so that two concurrent edits
	// cannot silently overwrite each other.
	Version int       `dynamodbav:"version"`
	Created time.Time `dynamodbav:"created"`
	Updated time.Time `dynamodbav:"updated"`
}

// ActiveAt reports whether e allocates its resources at t.
func (e Entitlement) ActiveAt(t time.Time) bool {
	return !t.Before(e.Started) && (e.Expiry == nil || t.Before(*e.Expiry))
}

// RunAllowance is how many application test runs an account with
// entitlements es may start in the calendar period (PeriodMonth or
// PeriodYear, UTC) that holds now, and whether that period is limited at
// all: the sum of the quantities of its active application_tests
// entitlements of that period. As with Allowance, an account with no
// such entitlement is not metered for the period, and one whose
// entitlements of the period all expired may start none.
func RunAllowance(es []Entitlement, period string, now time.Time) (limit int, limited bool) {
	for _, e := range es {
		if e.Resource != ResourceApplicationTests || e.Period != period {
			continue
		}
		limited = true
		if e.ActiveAt(now) {
			limit += e.Quantity
		}
	}
	return limit, limited
}

// RunPeriodKey names the calendar period (PeriodMonth or PeriodYear)
// holding t, as runs are counted: "2026-11", "2026".
func RunPeriodKey(period string, t time.Time) string {
	if period == PeriodYear {
		return t.UTC().Format("2006")
	}
	return t.UTC().Format("2006-01")
}

// TestRunsReached is the conflict of a run past the account's
// application_tests entitlement of period.
func TestRunsReached(account, period string, limit int) *Error {
	return &Error{Code: Conflict, Message: fmt.Sprintf("account %s is entitled to %d application test runs per %s and has started them all this %s; wait for the next %s or ask the platform operator for a larger entitlement of \"application_tests\"",
		account, limit, period, period, period)}
}

// MaxEntitlementsPerAccount bounds the entitlement items of one account, so
// that reading them all (allowance checks, billing) stays one small Query.
const MaxEntitlementsPerAccount = 100

// Quota is an account's allowance of one kind of metered resource, as
// CheckAllowance read it. The create it precedes hands it to the store,
// whose transaction counts the new resource in the account's usage item
// and enforces the limit there: two creates racing past the check cannot
// both take the last unit.
type Quota struct {
	Kind    string
	Limit   int
	Limited bool
}
