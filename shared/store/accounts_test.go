package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/store"
)

func subAccount(parent domain.AccountRecord, id, name string) domain.AccountRecord {
	anc := append(append([]string{}, parent.Ancestors...), parent.ID)
	now := time.Now().UTC().Truncate(time.Millisecond)
	return domain.AccountRecord{Account: domain.Account{ID: id, Name: name, Keyword: domain.Keyword(name), Parent: parent.ID, Ancestors: anc, Created: now, Updated: now}}
}

func rootAccount(t *testing.T, st *store.Store) domain.AccountRecord {
	t.Helper()
	root := domain.AccountRecord{Account: domain.Account{ID: "root", Name: "Root"}}
	if err := st.Accounts.CreateAccount(context.Background(), root.Account, nil); err != nil {
		t.Fatal(err)
	}
	return root
}

// indexed writes a bare item under a GSI1 partition, as the families that
// own applications and address sets do.
func indexed(t *testing.T, d testenv.Dynamo, pk, sk, gsi string) {
	t.Helper()
	_, err := d.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(d.Table), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk},
		"GSI1PK": &types.AttributeValueMemberS{Value: gsi}, "GSI1SK": &types.AttributeValueMemberS{Value: pk},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCreateSubAccountChecksNameParentAndDepth(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	root := rootAccount(t, st)
	role := domain.Role{AccountID: "a1", ID: "r1", Name: "Account owner", Control: true, Version: 1}
	a1 := subAccount(root, "a1", "Acme")
	if err := st.Accounts.CreateSubAccount(ctx, a1, []domain.Role{role}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Accounts.GetAccountRecord(ctx, "a1")
	if err != nil || got.Parent != "root" || strings.Join(got.Ancestors, ",") != "root" {
		t.Fatalf("GetAccountRecord = %+v, %v", got, err)
	}
	if _, err := st.Roles.GetRole(ctx, "a1", "r1"); err != nil {
		t.Fatalf("the control role was not written with the account: %v", err)
	}

	dup := subAccount(root, "a2", "ACME")
	if err := st.Accounts.CreateSubAccount(ctx, dup, nil); domain.ErrorCode(err) != domain.Conflict || !strings.Contains(domain.ErrorMessage(err), "already exists") {
		t.Fatalf("duplicate name (other case): %v", err)
	}
	if _, err := st.Accounts.GetAccountRecord(ctx, "a2"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("refused account was half-written: %v", err)
	}
	orphan := subAccount(domain.AccountRecord{Account: domain.Account{ID: "gone", Ancestors: []string{"root"}}}, "a3", "Orphan")
	if err := st.Accounts.CreateSubAccount(ctx, orphan, nil); domain.ErrorCode(err) != domain.Conflict || !strings.Contains(domain.ErrorMessage(err), "no longer exists") {
		t.Fatalf("missing parent: %v", err)
	}
	if _, err := st.Accounts.GetAccountRecord(ctx, "a3"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("account with a missing parent was written: %v", err)
	}

	// Past the item limit: refused before any round trip.
	deep := subAccount(a1, "deep", "Deep")
	deep.Ancestors = make([]string, store.MaxAccountDepth()+1)
	for i := range deep.Ancestors {
		deep.Ancestors[i] = fmt.Sprintf("%016d", i)
	}
	deep.Parent = deep.Ancestors[len(deep.Ancestors)-1]
	d.Counter.Reset()
	if err := st.Accounts.CreateSubAccount(ctx, deep, nil); domain.ErrorCode(err) != domain.Conflict || !strings.Contains(domain.ErrorMessage(err), "deepest") {
		t.Fatalf("too deep: %v", err)
	}
	if n := d.Counter.Total(); n != 0 {
		t.Fatalf("too deep cost %d round trips, want 0", n)
	}
}

// At MaxAccountDepth the account item and a key bound to it are real
// items that DynamoDB (here minidyn, with the store's client-side limits)
// accepts.
func TestAccountAtMaxDepthIsWritable(t *testing.T) {
	if testing.Short() {
		t.Skip("writes two 400 KB items")
	}
	st, _ := newStore(t)
	ctx := context.Background()
	max := store.MaxAccountDepth()
	anc := make([]string, max-1)
	for i := range anc {
		anc[i] = fmt.Sprintf("%016d", i)
	}
	parent := domain.AccountRecord{Account: domain.Account{ID: "p", Name: "Parent", Parent: anc[len(anc)-1], Ancestors: anc}}
	if err := st.Accounts.CreateAccount(ctx, parent.Account, nil); err != nil {
		t.Fatal(err)
	}
	leaf := subAccount(parent, strings.Repeat("l", 16), strings.Repeat("\U0001F600", domain.AccountNameMaxRunes))
	if len(leaf.Ancestors) != max {
		t.Fatalf("leaf depth %d, want %d", len(leaf.Ancestors), max)
	}
	if err := st.Accounts.CreateSubAccount(ctx, leaf, nil); err != nil {
		t.Fatalf("account at the maximum depth: %v", err)
	}
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u", Kind: domain.KindUser, Email: "u@example.com"}); err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour)
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k", PrincipalID: "u", Type: "bearer", Durability: domain.DurabilitySession,
		Account: leaf.ID, AccountAncestors: leaf.Ancestors, SecretHash: strings.Repeat("f", 64), Expiry: &exp}); err != nil {
		t.Fatalf("key bound to the deepest account: %v", err)
	}
}

func TestUpdateAccountMovesTheNameReservation(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	root := rootAccount(t, st)
	for _, a := range []domain.AccountRecord{subAccount(root, "a1", "One"), subAccount(root, "a2", "Two")} {
		if err := st.Accounts.CreateSubAccount(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
	}
	prev, _ := st.Accounts.GetAccountRecord(ctx, "a1")
	next := prev
	next.Name, next.Updated = "two", prev.Updated.Add(time.Millisecond)
	if err := st.Accounts.UpdateAccount(ctx, prev, next); domain.ErrorCode(err) != domain.Conflict || !strings.Contains(domain.ErrorMessage(err), "already exists") {
		t.Fatalf("rename onto a taken name: %v", err)
	}
	next.Name, next.Owner = "Uno", "u1"
	next.LogRetention = []domain.LogRetention{{Type: "events", OnlineDays: 7}}
	if err := st.Accounts.UpdateAccount(ctx, prev, next); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Accounts.GetAccountRecord(ctx, "a1")
	if got.Name != "Uno" || got.Owner != "u1" || len(got.LogRetention) != 1 || got.LogRetention[0].OnlineDays != 7 || strings.Join(got.Ancestors, ",") != "root" {
		t.Fatalf("after update: %+v", got)
	}
	// The old name is free again, the new one taken.
	if err := st.Accounts.CreateSubAccount(ctx, subAccount(root, "a3", "ONE"), nil); err != nil {
		t.Fatalf("old name not released: %v", err)
	}
	if err := st.Accounts.CreateSubAccount(ctx, subAccount(root, "a4", "uno"), nil); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("new name not reserved: %v", err)
	}
	// A stale read loses.
	if err := st.Accounts.UpdateAccount(ctx, prev, next); domain.ErrorCode(err) != domain.Conflict || !strings.Contains(domain.ErrorMessage(err), "changed meanwhile") {
		t.Fatalf("stale update: %v", err)
	}
	// Clearing owner and log retention.
	cur, _ := st.Accounts.GetAccountRecord(ctx, "a1")
	clear := cur
	clear.Owner, clear.LogRetention, clear.Updated = "", nil, cur.Updated.Add(time.Millisecond)
	if err := st.Accounts.UpdateAccount(ctx, cur, clear); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Accounts.GetAccountRecord(ctx, "a1"); got.Owner != "" || got.LogRetention != nil {
		t.Fatalf("not cleared: %+v", got)
	}
}

func TestDeleteAccount(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	root := rootAccount(t, st)
	a1 := subAccount(root, "a1", "One")
	a2 := subAccount(a1, "a2", "Two")
	role := domain.Role{AccountID: "a1", ID: "r1", Name: "Account owner", Control: true, Version: 1}
	if err := st.Accounts.CreateSubAccount(ctx, a1, []domain.Role{role}); err != nil {
		t.Fatal(err)
	}
	if err := st.Accounts.CreateSubAccount(ctx, a2, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Accounts.DeleteAccount(ctx, "root"); domain.ErrorCode(err) != domain.Conflict || !strings.Contains(domain.ErrorMessage(err), "root") {
		t.Fatalf("delete root: %v", err)
	}
	indexed(t, d, "APP#x1", "APP", "APPS#a1")
	indexed(t, d, "ADDRSET#s1", "ADDRSET", "ADDRSETS#a1")
	_, err := st.Accounts.DeleteAccount(ctx, "a1")
	if domain.ErrorCode(err) != domain.Conflict || domain.ErrorMessage(err) != "account a1 still has sub-accounts, applications and address sets; delete them first" {
		t.Fatalf("delete a non-empty account: %v", err)
	}
	if a, err := st.Accounts.GetAccountRecord(ctx, "a1"); err != nil || a.Deleting != nil {
		t.Fatalf("a refused delete left the account marked or gone: %+v %v", a, err)
	}

	// Empty it (sub-account, then the other families' items).
	if _, err := st.Accounts.DeleteAccount(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	for _, k := range [][2]string{{"APP#x1", "APP"}, {"ADDRSET#s1", "ADDRSET"}} {
		if _, err := d.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.Table), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: k[0]}, "SK": &types.AttributeValueMemberS{Value: k[1]}}}); err != nil {
			t.Fatal(err)
		}
	}

	// Access to a1: keys bound to it, grants of its role; an entitlement.
	for _, u := range []string{"u1", "u2"} {
		if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: u, Kind: domain.KindUser, Email: u + "@example.com"}); err != nil {
			t.Fatal(err)
		}
		if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k" + u, PrincipalID: u, Type: "bearer", Account: "a1", AccountAncestors: []string{"root"}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: u, AccountID: "a1", RoleID: "r1", Via: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "kroot", PrincipalID: "u1", Type: "bearer", Account: "root"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Entitlements.CreateEntitlement(ctx, domain.Entitlement{ID: "e1", Account: "a1", Resource: domain.ResourceApplications, Quantity: 1, Period: domain.PeriodMonth, Version: 1}); err != nil {
		t.Fatal(err)
	}
	// What the roles family keeps per account: a group and a membership,
	// an invitation, a service user with its key.
	if err := st.Roles.CreateGroup(ctx, domain.Group{AccountID: "a1", ID: "g1", Name: "Ops", Roles: []string{"r1"}, Version: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u2", AccountID: "a1", Group: "g1", Via: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Invitations.CreateInvitation(ctx, domain.Invitation{AccountID: "a1", ID: "i1", Kind: domain.InvitationRole, Email: "x@example.com", Target: "r1", State: domain.InvitationSent}, nil); err != nil {
		t.Fatal(err)
	}
	suEmail := domain.ServiceUserEmail("a1", "su1")
	if err := st.Principals.CreateServiceUser(ctx, domain.ServiceUser{ID: "su1", Kind: domain.KindServiceUser, Email: suEmail, Account: "a1"},
		domain.AccessKey{ID: "ksu", PrincipalID: "su1", Type: "bearer", Account: "a1", AccountAncestors: []string{"root"}}); err != nil {
		t.Fatal(err)
	}

	got, err := st.Accounts.DeleteAccount(ctx, "a1")
	if err != nil || got.ID != "a1" || got.Name != "One" {
		t.Fatalf("DeleteAccount = %+v, %v", got, err)
	}
	if _, err := st.Accounts.GetAccountRecord(ctx, "a1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("account still there: %v", err)
	}
	for _, u := range []string{"u1", "u2"} {
		if _, err := st.Principals.GetKey(ctx, u, "k"+u); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("key of %s bound to the deleted account survives: %v", u, err)
		}
		if gs, _ := st.Roles.Grants(ctx, u); len(gs) != 0 {
			t.Errorf("grants of %s survive: %+v", u, gs)
		}
	}
	if _, err := st.Principals.GetKey(ctx, "u1", "kroot"); err != nil {
		t.Errorf("a key bound to another account was revoked: %v", err)
	}
	if _, err := st.Roles.GetRole(ctx, "a1", "r1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the account's role survives: %v", err)
	}
	if es, _ := st.Entitlements.ListEntitlements(ctx, "a1"); len(es) != 0 {
		t.Errorf("entitlements survive: %+v", es)
	}
	if _, err := st.Roles.GetGroup(ctx, "a1", "g1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the account's group survives: %v", err)
	}
	if invs, err := st.Invitations.ListInvitations(ctx, "a1", domain.InvitationRole); err != nil || len(invs) != 0 {
		t.Errorf("invitations survive: %+v %v", invs, err)
	}
	if _, err := st.Principals.GetPrincipal(ctx, "su1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the account's service user survives: %v", err)
	}
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "reuse", Kind: domain.KindUser, Email: suEmail}); err != nil {
		t.Errorf("the service user's email reservation survives: %v", err)
	}
	// The name is free again; a second delete is a 404.
	if err := st.Accounts.CreateSubAccount(ctx, subAccount(root, "a5", "one"), nil); err != nil {
		t.Fatalf("name of the deleted account not released: %v", err)
	}
	if _, err := st.Accounts.DeleteAccount(ctx, "a1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestEntitlementsAndAllowance(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	root := rootAccount(t, st)
	if err := st.Accounts.CreateSubAccount(ctx, subAccount(root, "a1", "One"), nil); err != nil {
		t.Fatal(err)
	}
	if _, limited, err := st.Entitlements.Allowance(ctx, "a1", domain.ResourceApplications); err != nil || limited {
		t.Fatalf("no entitlement: limited=%v, %v", limited, err)
	}
	if q, err := st.Entitlements.CheckAllowance(ctx, "a1", domain.ResourceApplications); err != nil || q.Limited {
		t.Fatalf("unmetered account: %+v, %v", q, err)
	}
	now := time.Now().UTC()
	past, future := now.Add(-time.Hour), now.Add(time.Hour)
	for _, e := range []domain.Entitlement{
		{ID: "e1", Resource: domain.ResourceApplications, Quantity: 2, Started: past},
		{ID: "e2", Resource: domain.ResourceApplications, Quantity: 5, Started: future},                // not started
		{ID: "e3", Resource: domain.ResourceApplications, Quantity: 7, Started: past, Expiry: &past},   // expired
		{ID: "e4", Resource: domain.ResourceAddressSets, Quantity: 0, Started: past},                   // none allowed
		{ID: "e5", Resource: domain.ResourceApplications, Quantity: 1, Started: past, Expiry: &future}, // active
	} {
		e.Account, e.Period, e.Version = "a1", domain.PeriodMonth, 1
		if err := st.Entitlements.CreateEntitlement(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if limit, limited, err := st.Entitlements.Allowance(ctx, "a1", domain.ResourceApplications); err != nil || !limited || limit != 3 {
		t.Fatalf("Allowance = %d %v %v, want 3 limited", limit, limited, err)
	}
	create := func(id string) error {
		q, err := st.Entitlements.CheckAllowance(ctx, "a1", domain.ResourceApplications)
		if err != nil {
			return err
		}
		return st.Applications.CreateApplication(ctx, domain.Application{ID: id, Account: "a1", State: domain.AppStopped, Version: 1}, q)
	}
	for _, id := range []string{"x1", "x2", "x3"} {
		if err := create(id); err != nil {
			t.Fatalf("application %s of 3 refused: %v", id, err)
		}
	}
	if err := create("x4"); domain.ErrorCode(err) != domain.Conflict || domain.ErrorMessage(err) != "account a1 is entitled to 3 applications and has 3; delete one or ask the platform operator for a larger entitlement" {
		t.Fatalf("4 of 3: %v", err)
	}
	// A create that passed an earlier check is refused by its transaction.
	stale := domain.Quota{Kind: domain.ResourceApplications, Limit: 3, Limited: true}
	if err := st.Applications.CreateApplication(ctx, domain.Application{ID: "x5", Account: "a1", State: domain.AppStopped, Version: 1}, stale); domain.ErrorCode(err) != domain.Conflict || !strings.Contains(domain.ErrorMessage(err), "entitled to 3 applications") {
		t.Fatalf("a create past a stale check: %v", err)
	}
	if _, err := st.Applications.GetApplication(ctx, "a1", "x5"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the refused application was written: %v", err)
	}
	// A delete frees its unit.
	if _, err := st.Applications.DeleteApplication(ctx, "a1", "x1"); err != nil {
		t.Fatal(err)
	}
	if err := create("x6"); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if _, err := st.Entitlements.CheckAllowance(ctx, "a1", domain.ResourceAddressSets); domain.ErrorCode(err) != domain.Conflict || !strings.Contains(domain.ErrorMessage(err), "0 address sets") {
		t.Fatalf("address sets at 0: %v", err)
	}
	// A limit of 0 refuses even the first create, when no count exists
	// yet (a create that passed a check made before the entitlement).
	if err := st.Accounts.CreateSubAccount(ctx, subAccount(root, "a0", "Zero"), nil); err != nil {
		t.Fatal(err)
	}
	zero := domain.Quota{Kind: domain.ResourceApplications, Limit: 0, Limited: true}
	if err := st.Applications.CreateApplication(ctx, domain.Application{ID: "z1", Account: "a0", State: domain.AppStopped, Version: 1}, zero); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("the first application against a limit of 0: %v", err)
	}

	// Versioned replace, delete, not found across accounts.
	e, err := st.Entitlements.GetEntitlement(ctx, "a1", "e1")
	if err != nil {
		t.Fatal(err)
	}
	e.Quantity, e.Version = 10, e.Version+1
	if err := st.Entitlements.PutEntitlement(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := st.Entitlements.PutEntitlement(ctx, e); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("stale put: %v", err)
	}
	if _, err := st.Entitlements.GetEntitlement(ctx, "root", "e1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another account's entitlement: %v", err)
	}
	if _, err := st.Entitlements.DeleteEntitlement(ctx, "root", "e1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("delete through another account: %v", err)
	}
	if got, err := st.Entitlements.DeleteEntitlement(ctx, "a1", "e1"); err != nil || got.Quantity != 10 {
		t.Fatalf("DeleteEntitlement = %+v, %v", got, err)
	}
	if err := st.Entitlements.CreateEntitlement(ctx, domain.Entitlement{ID: "x", Account: "nope", Resource: domain.ResourceApplications, Version: 1}); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("entitlement of a missing account: %v", err)
	}
}

func TestBillingStore(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	root := rootAccount(t, st)
	if err := st.Accounts.CreateSubAccount(ctx, subAccount(root, "a1", "One"), nil); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	for _, bad := range []domain.Payment{
		{ID: "p", Account: "a1", AmountCents: 0, Date: today},
		{ID: "p", Account: "a1", AmountCents: 1, Date: "2026-13-01"},
		{ID: "p", Account: "a1", AmountCents: 1, Date: time.Now().AddDate(0, 0, 2).Format(time.DateOnly)},
	} {
		if err := st.Accounts.RecordPayment(ctx, bad); err == nil {
			t.Errorf("payment %+v accepted", bad)
		}
	}
	if err := st.Accounts.RecordPayment(ctx, domain.Payment{ID: "p", Account: "nope", AmountCents: 1, Date: today}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("payment of a missing account: %v", err)
	}
	if err := st.Accounts.RecordPayment(ctx, domain.Payment{ID: "p1", Account: "a1", AmountCents: 1250, Date: today, Reference: "wire 42"}); err != nil {
		t.Fatal(err)
	}
	// The applications counted are the usage item the create and delete
	// transactions keep: six created at once, two deleted at once (each
	// by two racing deletes, of which one wins), four counted.
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			if err := st.Applications.CreateApplication(ctx, domain.Application{ID: fmt.Sprintf("app%d", i), Account: "a1", State: domain.AppStopped, Version: 1}, domain.Quota{Kind: domain.ResourceApplications}); err != nil {
				t.Errorf("create app%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	var deleted atomic.Int32
	for i := range 4 {
		wg.Go(func() {
			_, err := st.Applications.DeleteApplication(ctx, "a1", fmt.Sprintf("app%d", i%2))
			switch {
			case err == nil:
				deleted.Add(1)
			case domain.ErrorCode(err) != domain.Conflict && !errors.Is(err, domain.ErrNotFound):
				t.Errorf("delete app%d: %v", i%2, err)
			}
		})
	}
	wg.Wait()
	if deleted.Load() != 2 {
		t.Fatalf("%d deletes succeeded, want 2", deleted.Load())
	}
	// An application item the transactions did not count (written
	// straight to the table) is not read: billing reads no application.
	indexed(t, d, "APP#x1", "APP", "APPS#a1")
	first := domain.Invoice{Account: "a1", Period: "2020-01", TotalCents: 100, DueDate: "2020-02-29"}
	second := first
	second.TotalCents = 999
	got, err := st.Accounts.CloseInvoices(ctx, []domain.Invoice{first})
	if err != nil || got[0].TotalCents != 100 {
		t.Fatalf("CloseInvoices = %+v, %v", got, err)
	}
	if got, err := st.Accounts.CloseInvoices(ctx, []domain.Invoice{second}); err != nil || got[0].TotalCents != 100 {
		t.Fatalf("a closed invoice was rewritten: %+v, %v", got, err)
	}
	d.Counter.Reset()
	b, err := st.Accounts.LoadBilling(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if b.Account.ID != "a1" || len(b.Payments) != 1 || b.Payments[0].Reference != "wire 42" || len(b.Invoices) != 1 || b.Usage.Applications != 4 {
		t.Fatalf("LoadBilling = %+v", b)
	}
	if n := d.Counter.Total(); n != 1 {
		t.Fatalf("LoadBilling made %d calls, want 1 (the account's partition, usage item included)", n)
	}
	// An account that never had an application has no usage item: none.
	if b, err := st.Accounts.LoadBilling(ctx, root.ID); err != nil || b.Usage.Applications != 0 {
		t.Fatalf("billing of the root: %+v %v", b.Usage, err)
	}
	if _, err := st.Accounts.LoadBilling(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("billing of a missing account: %v", err)
	}
}

// Creates racing past the allowance check cannot exceed the entitlement:
// the last unit is taken in the create's transaction.
func TestConcurrentCreatesKeepTheEntitlement(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	root := rootAccount(t, st)
	if err := st.Accounts.CreateSubAccount(ctx, subAccount(root, "a1", "One"), nil); err != nil {
		t.Fatal(err)
	}
	past := time.Now().UTC().Add(-time.Hour)
	for _, e := range []domain.Entitlement{
		{ID: "apps", Resource: domain.ResourceApplications, Quantity: 3, Started: past},
		{ID: "sets", Resource: domain.ResourceAddressSets, Quantity: 2, Started: past},
	} {
		e.Account, e.Period, e.Version = "a1", domain.PeriodMonth, 1
		if err := st.Entitlements.CreateEntitlement(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Every create checks first, then all write at once: all pass the
	// check, as racing requests would.
	const racers = 12
	appQ := make([]domain.Quota, racers)
	setQ := make([]domain.Quota, racers)
	for i := range racers {
		var err error
		if appQ[i], err = st.Entitlements.CheckAllowance(ctx, "a1", domain.ResourceApplications); err != nil {
			t.Fatal(err)
		}
		if setQ[i], err = st.Entitlements.CheckAllowance(ctx, "a1", domain.ResourceAddressSets); err != nil {
			t.Fatal(err)
		}
	}
	var apps, sets atomic.Int32
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			err := st.Applications.CreateApplication(ctx, domain.Application{ID: fmt.Sprintf("app%d", i), Account: "a1", State: domain.AppStopped, Version: 1}, appQ[i])
			switch {
			case err == nil:
				apps.Add(1)
			case domain.ErrorCode(err) != domain.Conflict:
				t.Errorf("application %d: %v", i, err)
			}
		})
		wg.Go(func() {
			now := time.Now().UTC()
			err := st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Create: true, Quota: setQ[i],
				Set: domain.AddressSet{ID: fmt.Sprintf("set%d", i), Account: "a1", Name: fmt.Sprintf("set %d", i), Type: "manual", Version: 1, Created: now, Updated: now}})
			switch {
			case err == nil:
				sets.Add(1)
			case domain.ErrorCode(err) != domain.Conflict && !errors.Is(err, domain.ErrChanged):
				t.Errorf("address set %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if apps.Load() != 3 || sets.Load() != 2 {
		t.Fatalf("%d applications and %d address sets created, want 3 and 2", apps.Load(), sets.Load())
	}
	if got, _ := st.Applications.ListApplications(ctx, "a1"); len(got) != 3 {
		t.Fatalf("%d applications stored, want 3", len(got))
	}
}
