package domain_test

import (
	"strings"
	"testing"
	"time"

	"cads/shared/domain"
)

// A quota kind is limited to its default without an active entitlement,
// to the sum of its active entitlements otherwise (lower or higher than
// the default), and back to the default when they expire; a metered kind
// with no entitlement stays unmetered.
func TestAllowanceOfAQuota(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	past := now.Add(-time.Hour)
	ent := func(kind string, n int, expiry *time.Time) domain.Entitlement {
		return domain.Entitlement{Resource: kind, Quantity: n, Started: now.Add(-24 * time.Hour), Expiry: expiry}
	}
	for _, c := range []struct {
		name    string
		es      []domain.Entitlement
		kind    string
		limit   int
		limited bool
	}{
		{"roles, no entitlement", nil, domain.ResourceRoles, 1000, true},
		{"groups, lowered", []domain.Entitlement{ent(domain.ResourceGroups, 3, nil)}, domain.ResourceGroups, 3, true},
		{"roles, raised by two", []domain.Entitlement{ent(domain.ResourceRoles, 1500, nil), ent(domain.ResourceRoles, 500, nil)}, domain.ResourceRoles, 2000, true},
		{"roles, expired", []domain.Entitlement{ent(domain.ResourceRoles, 3, &past)}, domain.ResourceRoles, 1000, true},
		{"actions, other kinds only", []domain.Entitlement{ent(domain.ResourceRoles, 3, nil)}, domain.ResourceActions, 100, true},
		{"applications, none", nil, domain.ResourceApplications, 0, false},
		{"applications, expired", []domain.Entitlement{ent(domain.ResourceApplications, 3, &past)}, domain.ResourceApplications, 0, true},
	} {
		if limit, limited := domain.Allowance(c.es, c.kind, now); limit != c.limit || limited != c.limited {
			t.Errorf("%s: Allowance = %d, %v; want %d, %v", c.name, limit, limited, c.limit, c.limited)
		}
	}
	for _, d := range domain.QuotaDefaults() {
		if d.Default <= 0 {
			t.Errorf("quota %s has no default", d.Kind)
		}
		found := false
		for _, k := range domain.ResourceKinds() {
			found = found || k == d.Kind
		}
		if !found {
			t.Errorf("quota %s is not an entitlement resource kind", d.Kind)
		}
	}
}

func TestQuotaReachedNamesTheQuota(t *testing.T) {
	err := domain.QuotaReached("acct1", domain.Quota{Kind: domain.ResourceActions, Limit: 3, Limited: true}, "3")
	if err.Code != domain.Conflict || !strings.Contains(err.Message, `quota "actions" reached`) || !strings.Contains(err.Message, "an application of account acct1 may have 3 actions") {
		t.Errorf("QuotaReached = %s %q", err.Code, err.Message)
	}
}

// Runs are allowed per period by the entitlements of that period only;
// an expired one limits its period to none.
func TestRunAllowance(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	past := now.Add(-time.Hour)
	es := []domain.Entitlement{
		{Resource: domain.ResourceApplicationTests, Period: domain.PeriodMonth, Quantity: 3, Started: past},
		{Resource: domain.ResourceApplicationTests, Period: domain.PeriodMonth, Quantity: 2, Started: past},
		{Resource: domain.ResourceApplicationTests, Period: domain.PeriodYear, Quantity: 7, Started: past, Expiry: &past},
		{Resource: domain.ResourceApplications, Period: domain.PeriodYear, Quantity: 9, Started: past},
	}
	if l, ok := domain.RunAllowance(es, domain.PeriodMonth, now); l != 5 || !ok {
		t.Errorf("month: %d %v, want 5 limited", l, ok)
	}
	if l, ok := domain.RunAllowance(es, domain.PeriodYear, now); l != 0 || !ok {
		t.Errorf("year (its entitlement expired): %d %v, want 0 limited", l, ok)
	}
	if _, ok := domain.RunAllowance(es[3:], domain.PeriodMonth, now); ok {
		t.Error("an account without application_tests entitlements is metered")
	}
	if domain.RunPeriodKey(domain.PeriodMonth, now) != "2026-11" || domain.RunPeriodKey(domain.PeriodYear, now) != "2026" {
		t.Errorf("period keys %q %q", domain.RunPeriodKey(domain.PeriodMonth, now), domain.RunPeriodKey(domain.PeriodYear, now))
	}
}
