package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/store"
)

func newStore(t *testing.T) (*store.Store, testenv.Dynamo) {
	t.Helper()
	d := testenv.NewDynamo(t)
	return store.New(d.Client, d.Table), d
}

func TestKeyNamesMatchTemplate(t *testing.T) {
	tpl := testenv.Template(t)
	var tb = tpl.Tables["Table"]
	if len(tb.KeySchema) != 2 || tb.KeySchema[0].AttributeName != store.AttrPK || tb.KeySchema[1].AttributeName != store.AttrSK {
		t.Fatalf("table key schema %+v does not match store's %s/%s", tb.KeySchema, store.AttrPK, store.AttrSK)
	}
	want := [][3]string{
		{store.IndexGSI1, store.AttrGSI1PK, store.AttrGSI1SK},
		{store.IndexGSI2, store.AttrGSI2PK, store.AttrGSI2SK},
		{store.IndexGSI3, store.AttrGSI3PK, store.AttrGSI3SK},
	}
	if len(tb.GlobalSecondaryIndexes) != len(want) {
		t.Fatalf("want %d GSIs, got %+v", len(want), tb.GlobalSecondaryIndexes)
	}
	for i, g := range tb.GlobalSecondaryIndexes {
		if w := want[i]; g.IndexName != w[0] || g.KeySchema[0].AttributeName != w[1] || g.KeySchema[1].AttributeName != w[2] {
			t.Fatalf("GSI %+v does not match store's %s(%s,%s)", g, w[0], w[1], w[2])
		}
	}
	if tb.TTLAttribute != store.AttrTTL {
		t.Fatalf("TTL attribute %q, store writes %q", tb.TTLAttribute, store.AttrTTL)
	}
}

func TestPrincipalEmailIsUnique(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	now := st.Now()
	a := domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "ann@example.com", Created: now, Updated: now}
	if err := st.Principals.CreatePrincipal(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := a
	b.ID, b.Email = "u2", "ANN@example.com"
	if err := st.Principals.CreatePrincipal(ctx, b); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("second principal with the same email (other case): %v, want a conflict", err)
	}
	if _, err := st.Principals.GetPrincipal(ctx, "u2"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the refused principal was half-written: %v", err)
	}
	users, _, _, err := st.Principals.PageUsers(ctx, "", false, 10)
	if err != nil || len(users) != 1 || users[0].ID != "u1" {
		t.Fatalf("PageUsers = %+v, %v", users, err)
	}
	ann, phone := "Ann", "+44 20 7946 0958"
	p, err := st.Principals.UpdatePrincipal(ctx, "u1", store.PrincipalChange{Name: &ann, Phone: &phone})
	if err != nil || p.Name != "Ann" || p.Phone != phone || p.Email != a.Email {
		t.Fatalf("UpdatePrincipal = %+v, %v", p, err)
	}
	if p, err := st.Principals.UpdatePrincipal(ctx, "u1", store.PrincipalChange{Phone: new("")}); err != nil || p.Name != "Ann" || p.Phone != "" {
		t.Fatalf("UpdatePrincipal removing the phone = %+v, %v", p, err)
	}
	if _, err := st.Principals.UpdatePrincipal(ctx, "nobody", store.PrincipalChange{Name: &ann}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("update of a missing principal: %v", err)
	}
}

func TestAccessKeys(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	now := st.Now()
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k0", PrincipalID: "ghost", SecretHash: "h"}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("key for a missing principal: %v", err)
	}
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u@example.com", Created: now}); err != nil {
		t.Fatal(err)
	}
	exp := now.Add(time.Hour)
	k := domain.AccessKey{ID: "k1", PrincipalID: "u1", Type: "bearer", Durability: domain.DurabilitySession, Account: "a1", AccountAncestors: []string{"root"}, SecretHash: "h1", Expiry: &exp, Created: now}
	if err := st.Principals.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := st.Principals.GetKey(ctx, "u1", "k1")
	if err != nil || got.SecretHash != "h1" || got.Account != "a1" || got.TTL != exp.Add(24*time.Hour).Unix() {
		t.Fatalf("GetKey = %+v, %v", got, err)
	}
	// last_used is written at most once a minute.
	d.Counter.Reset()
	if err := st.Principals.TouchKey(ctx, "u1", "k1", now); err != nil {
		t.Fatal(err)
	}
	if err := st.Principals.TouchKey(ctx, "u1", "k1", now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Principals.GetKey(ctx, "u1", "k1")
	if got.LastUsed == nil || !got.LastUsed.Equal(now) {
		t.Fatalf("last_used = %v, want %v (the second touch is inside the minute)", got.LastUsed, now)
	}
	// Callers read the key first and skip the write until it is due.
	for _, c := range []struct {
		at   time.Time
		want bool
	}{{now.Add(30 * time.Second), false}, {now.Add(time.Minute), true}, {now.Add(2 * time.Minute), true}} {
		if stale := got.UseIsStale(c.at); stale != c.want {
			t.Errorf("UseIsStale(last_used + %v) = %v, want %v", c.at.Sub(now), stale, c.want)
		}
	}
	if !(domain.AccessKey{}).UseIsStale(now) {
		t.Error("a key never used is not due for a last_used write")
	}
	if err := st.Principals.TouchKey(ctx, "u1", "k1", now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Principals.GetKey(ctx, "u1", "k1"); !got.LastUsed.Equal(now.Add(2 * time.Minute)) {
		t.Fatalf("last_used = %v after a touch two minutes later", got.LastUsed)
	}
	if err := st.Principals.TouchKey(ctx, "u1", "gone", now); err != nil {
		t.Fatalf("touching a deleted key must not fail a request: %v", err)
	}
	keys, err := st.Principals.ListKeys(ctx, "u1")
	if err != nil || len(keys) != 1 {
		t.Fatalf("ListKeys = %+v, %v", keys, err)
	}
	if _, err := st.Principals.DeleteKey(ctx, "u1", "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Principals.DeleteKey(ctx, "u1", "k1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// Empty lists are not stored (minidyn would return another attribute in
// their place); they read back as nil.
func TestEmptyListsReadBackEmpty(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "a@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k1", PrincipalID: "u1", Account: "root", AccountAncestors: []string{}, SecretHash: "h"}); err != nil {
		t.Fatal(err)
	}
	k, err := st.Principals.LoadCredential(ctx, "u1", "k1", "", 0)
	if err != nil || k.Key.Account != "root" || len(k.Key.AccountAncestors) != 0 {
		t.Fatalf("LoadCredential = %+v, %v", k.Key, err)
	}
}

func TestCreateUserKeyRefusesServiceUsers(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "svc", Kind: domain.KindServiceUser, Email: "svc@x.invalid"}); err != nil {
		t.Fatal(err)
	}
	q := domain.Quota{Kind: domain.ResourceAccessKeys, Limit: 10, Limited: true}
	if err := st.Principals.CreateUserKey(ctx, domain.AccessKey{ID: "k1", PrincipalID: "svc", SecretHash: "h"}, q); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("user key for a service user: %v", err)
	}
	if _, err := st.Principals.GetKey(ctx, "svc", "k1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the refused key was written: %v", err)
	}
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Principals.CreateUserKey(ctx, domain.AccessKey{ID: "k2", PrincipalID: "u1", SecretHash: "h"}, q); err != nil {
		t.Fatalf("user key: %v", err)
	}
}
