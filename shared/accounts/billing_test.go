package accounts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cads/shared/domain"
)

// An account created two months ago with a monthly and a yearly
// entitlement and one payment: one record per month, newest first,
// invoices from the entitlements, the payment applied oldest first, and
// closed months frozen at their first read.
func TestBilling(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().UTC()
	cur := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	m2, m1 := cur.AddDate(0, -2, 0), cur.AddDate(0, -1, 0)
	created := m2.Add(36 * time.Hour)
	a := e.account(e.root(), "Billed", created)
	for _, en := range []domain.Entitlement{
		{ID: "monthly", Resource: domain.ResourceApplications, Quantity: 3, Period: domain.PeriodMonth, UnitPriceCents: 1000, PlanID: "pro", Started: created},
		{ID: "yearly", Resource: domain.ResourceAddressSets, Quantity: 1, Period: domain.PeriodYear, UnitPriceCents: 12000, Started: created},
		{ID: "ended", Resource: domain.ResourceApplicationTests, Quantity: 100, Period: domain.PeriodMonth, UnitPriceCents: 1, Started: created, Expiry: ptr(m2.AddDate(0, 0, 20))},
	} {
		en.Account, en.Version, en.Created = a.ID, 1, created
		if err := e.st.Entitlements.CreateEntitlement(ctx, en); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.st.Accounts.RecordPayment(ctx, domain.Payment{ID: "p1", Account: a.ID, AmountCents: 2500, Date: m1.AddDate(0, 0, 4).Format(time.DateOnly), Reference: "wire 42"}); err != nil {
		t.Fatal(err)
	}
	// Counted by the create transactions (the account's usage item).
	for _, app := range []string{"x1", "x2"} {
		if err := e.st.Applications.CreateApplication(ctx, domain.Application{ID: app, Account: a.ID, State: domain.AppStopped, Version: 1}, domain.Quota{Kind: domain.ResourceApplications}); err != nil {
			t.Fatal(err)
		}
	}
	path := "/v2/accounts/" + a.ID + "/billing"

	e.d.Counter.SetDelay(delay)
	e.d.Counter.Reset()
	r := e.call(e.op, "GET", path, "")
	e.d.Counter.SetDelay(0)
	if r.Status != 200 || len(r.List) != 3 {
		t.Fatalf("billing: %d %s", r.Status, r.Raw)
	}
	// The load (the account's partition, its usage count included), then
	// the two closed months frozen in parallel.
	if seq := e.d.Counter.Sequential(); seq != 2 {
		t.Errorf("first read: %d sequential round trips, want 2", seq)
	}
	per := func(m time.Time) string { return m.Format("2006-01") }
	due := func(m time.Time) string { return m.AddDate(0, 2, -1).Format(time.DateOnly) }
	want := []struct {
		period, state, due, total, remaining string
		lines, payments                      int
	}{
		{per(cur), "open", due(cur), "30.00", "30.00", 1, 0},
		{per(m1), "closed", due(m1), "30.00", "30.00", 1, 1},
		{per(m2), "closed", due(m2), "151.00", "126.00", 3, 0}, // 3 x 10.00 + 1 x 120.00 + 100 x 0.01, less the 25.00 paid
	}
	for i, w := range want {
		rec := r.List[i].(map[string]any)
		inv := rec["invoices"].([]any)[0].(map[string]any)
		got := []any{rec["period"], inv["period"], inv["state"], inv["due_date"], money(inv["total_amount"]), money(inv["remaining_amount_due"]), len(inv["lines"].([]any)), len(rec["payments"].([]any))}
		exp := []any{w.period, w.period, w.state, w.due, w.total, w.remaining, w.lines, w.payments}
		for j := range got {
			if got[j] != exp[j] {
				t.Fatalf("record %d: got %v, want %v\n%s", i, got, exp, r.Raw)
			}
		}
		if u := inv["usage"].(map[string]any); u["applications"] != 2.0 {
			t.Fatalf("usage %v", u)
		}
	}
	if !strings.Contains(r.Raw, `"payments":[{"id":"p1","amount":25.00,"date":"`+m1.AddDate(0, 0, 4).Format(time.DateOnly)+`","reference":"wire 42"}]`) {
		t.Fatalf("payment shape: %s", r.Raw)
	}
	if !strings.Contains(r.Raw, `{"entitlement":"/v2/accounts/`+a.ID+`/entitlements/monthly","resource":"applications","plan_id":"pro","quantity":3,"period":"month","unit_price":10.00,"amount":30.00}`) {
		t.Fatalf("line shape: %s", r.Raw)
	}

	// A change to the entitlements changes the open month only: issued
	// bills stay as they were. A second read writes nothing.
	if r := e.call(e.op, "PATCH", "/v2/accounts/"+a.ID+"/entitlements/monthly", `{"quantity":10}`); r.Status != 200 {
		t.Fatal(r.Raw)
	}
	e.d.Counter.SetDelay(delay)
	e.d.Counter.Reset()
	r = e.call(e.op, "GET", path, "")
	e.d.Counter.SetDelay(0)
	if ops := e.d.Counter.ByOperation(); ops["PutItem"] != 0 || e.d.Counter.Sequential() != 1 {
		t.Errorf("second read: %v, %d sequential", ops, e.d.Counter.Sequential())
	}
	totals := []string{}
	for _, rec := range r.List {
		inv := rec.(map[string]any)["invoices"].([]any)[0].(map[string]any)
		totals = append(totals, money(inv["total_amount"]))
	}
	if strings.Join(totals, " ") != "100.00 30.00 151.00" {
		t.Fatalf("totals after the change: %v", totals)
	}
	if r := e.call(e.op, "GET", path+"?limit=1&start=3", ""); len(r.List) != 1 || r.List[0].(map[string]any)["period"] != per(m2) {
		t.Fatalf("window: %s", r.Raw)
	}
	if r := e.call(e.op, "GET", "/v2/accounts/nosuchaccount/billing", ""); r.Status != 404 {
		t.Fatalf("unknown account: %d", r.Status)
	}
	// An account item without a creation time is billed from now, not
	// from year 1.
	if err := e.st.Accounts.CreateAccount(ctx, domain.Account{ID: "undated", Name: "Undated", Parent: e.boot.RootAccount, Ancestors: []string{e.boot.RootAccount}}, nil); err != nil {
		t.Fatal(err)
	}
	if r := e.call(e.op, "GET", "/v2/accounts/undated/billing", ""); r.Status != 200 || len(r.List) != 1 || r.List[0].(map[string]any)["period"] != per(cur) {
		t.Fatalf("undated account: %d %s", r.Status, r.Raw)
	}
}

func ptr[T any](v T) *T { return &v }

// money renders a decoded JSON number with two decimals.
func money(v any) string {
	f, _ := v.(float64)
	return fmt.Sprintf("%.2f", f)
}
