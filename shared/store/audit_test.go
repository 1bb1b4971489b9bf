package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cads/shared/audit"
	"cads/shared/domain"
	"cads/shared/store"
)

// auditRecord is the record apigw makes for a write request in account
// acct (ancestors anc), as the store receives it in the context.
func auditRecord(st *store.Store, id, acct string, anc ...string) *audit.Record {
	now := st.Now()
	return &audit.Record{Event: audit.Event{ID: id, Time: now, Method: "PATCH", Path: "/v2/users/u1",
		Actor: audit.Actor{Principal: "/v2/users/op", Kind: "user", Key: "/v2/users/op/access-keys/k"}},
		AccountID: acct, Ancestors: anc, Expires: now.Add(time.Hour)}
}

func auditIDs(t *testing.T, st *store.Store, acct string) []string {
	t.Helper()
	evs, _, _, err := st.Audit.PageAuditEvents(context.Background(), acct, time.Time{}, time.Time{}, "", true, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

// The fault test of the audit trail: the process ends right after the
// change committed (FinishAudit is never called) and the event is there,
// in the account's partition and each ancestor's; a write whose condition
// failed leaves none. The event goes with the change in one transaction,
// whether the store method wrote a transaction (an entitlement) or a
// single item (an UpdateItem asking for the new item back, a DeleteItem
// asking for the old one).
func TestAuditEventCommitsWithTheChange(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	now := st.Now()
	if err := st.Accounts.CreateAccount(ctx, domain.Account{ID: "acct", Name: "acct", Ancestors: []string{"root"}, Parent: "root", Created: now, Updated: now}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com", Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}

	// A single-item update that returns the item: made a transaction
	// with the event, the item still comes back.
	rec := auditRecord(st, "ev1", "acct", "root")
	name := "Ann"
	p, err := st.Principals.UpdatePrincipal(audit.With(ctx, rec), "u1", store.PrincipalChange{Name: &name})
	if err != nil || p.Name != "Ann" || !rec.Written() {
		t.Fatalf("UpdatePrincipal = %+v, %v (record written %v)", p, err, rec.Written())
	}
	// Crash: no FinishAudit. The event is listed in both partitions.
	for _, a := range []string{"acct", "root"} {
		if got := auditIDs(t, st, a); len(got) != 1 || got[0] != "ev1" {
			t.Fatalf("events under %s after a crash past the commit: %v, want [ev1]", a, got)
		}
	}
	evs, _, _, _ := st.Audit.PageAuditEvents(ctx, "root", time.Time{}, time.Time{}, "", true, 10)
	if e := evs[0]; e.Status != nil || e.Account != "/v2/accounts/acct" || e.AccountID != "acct" || len(e.Ancestors) != 1 {
		t.Fatalf("event as committed: %+v", e)
	}

	// A refused write records nothing.
	rec2 := auditRecord(st, "ev2", "acct", "root")
	if _, err := st.Principals.UpdatePrincipal(audit.With(ctx, rec2), "nobody", store.PrincipalChange{Name: &name}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("update of a missing principal: %v", err)
	}
	if rec2.Written() || len(auditIDs(t, st, "acct")) != 1 {
		t.Fatalf("a refused write left an event: %v", auditIDs(t, st, "acct"))
	}

	// A transaction: the event is among its items.
	e := domain.Entitlement{ID: "e1", Account: "acct", Resource: "applications", Quantity: 1, Period: domain.PeriodMonth, Started: now, Created: now, Updated: now, Version: 1}
	rec3 := auditRecord(st, "ev3", "acct", "root")
	if err := st.Entitlements.CreateEntitlement(audit.With(ctx, rec3), e); err != nil || !rec3.Written() {
		t.Fatalf("CreateEntitlement: %v (record written %v)", err, rec3.Written())
	}
	rec4 := auditRecord(st, "ev4", "acct", "root")
	if err := st.Entitlements.CreateEntitlement(audit.With(ctx, rec4), e); domain.ErrorCode(err) != domain.Conflict || rec4.Written() {
		t.Fatalf("second create: %v (record written %v)", err, rec4.Written())
	}
	// A delete that returns the old item.
	rec5 := auditRecord(st, "ev5", "acct", "root")
	old, err := st.Entitlements.DeleteEntitlement(audit.With(ctx, rec5), "acct", "e1")
	if err != nil || old.ID != "e1" || !rec5.Written() {
		t.Fatalf("DeleteEntitlement = %+v, %v", old, err)
	}
	if got := auditIDs(t, st, "root"); len(got) != 3 {
		t.Fatalf("events after three changes and two refusals: %v", got)
	}

	// Completing the event gives it its status; dropping removes it.
	status := 200
	rec5.Event.Status = &status
	if err := st.Audit.FinishAudit(ctx, rec5); err != nil {
		t.Fatal(err)
	}
	evs, _, _, _ = st.Audit.PageAuditEvents(ctx, "acct", time.Time{}, time.Time{}, "", true, 10)
	if evs[0].ID != "ev5" || evs[0].Status == nil || *evs[0].Status != 200 {
		t.Fatalf("newest event after FinishAudit: %+v", evs[0])
	}
	if err := st.Audit.DropAudit(ctx, rec3); err != nil {
		t.Fatal(err)
	}
	if got := auditIDs(t, st, "root"); len(got) != 2 {
		t.Fatalf("events after a drop: %v", got)
	}
}
