package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cads/shared/domain"
)

func TestMetricPrototypesBelongToTheirAccount(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	root := rootAccount(t, st)
	a1 := subAccount(root, "a1", "Acme")
	if err := st.Accounts.CreateSubAccount(ctx, a1, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	filter := "elapsed > 100"
	p := domain.MetricPrototype{ID: "p1", Account: "a1", DefaultName: "slow", Display: "slow", Expression: "count()", Filter: &filter,
		LogType: "proxy-logs", DefaultFrequency: 60, CreatedBy: "/v2/users/u1", Created: now}
	if err := st.Metrics.CreateMetricPrototype(ctx, p); err != nil {
		t.Fatal(err)
	}
	var c *domain.Error
	if err := st.Metrics.CreateMetricPrototype(ctx, p); !errors.As(err, &c) || c.Code != domain.Conflict {
		t.Errorf("same id again: %v, want a conflict", err)
	}
	orphan := p
	orphan.ID, orphan.Account = "p2", "nosuchaccount"
	if err := st.Metrics.CreateMetricPrototype(ctx, orphan); !errors.As(err, &c) || c.Code != domain.Conflict || !strings.Contains(c.Message, "no longer exists") {
		t.Errorf("in a missing account: %v, want a conflict", err)
	}
	got, err := st.Metrics.GetMetricPrototype(ctx, "a1", "p1")
	if err != nil || got.Filter == nil || *got.Filter != filter || got.Expression != "count()" || !got.Created.Equal(now) {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := st.Metrics.GetMetricPrototype(ctx, "root", "p1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another account's: %v, want ErrNotFound", err)
	}
	if _, err := st.Metrics.DeleteMetricPrototype(ctx, "root", "p1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("delete from another account: %v, want ErrNotFound", err)
	}

	// The account cannot be deleted while it has one.
	if _, err := st.Accounts.DeleteAccount(ctx, "a1"); !errors.As(err, &c) || c.Code != domain.Conflict || !strings.Contains(c.Message, "metric prototypes") {
		t.Errorf("delete the account: %v, want a conflict naming metric prototypes", err)
	}
	del, err := st.Metrics.DeleteMetricPrototype(ctx, "a1", "p1")
	if err != nil || del.ID != "p1" || del.DefaultName != "slow" {
		t.Fatalf("delete: %+v %v", del, err)
	}
	if _, err := st.Metrics.GetMetricPrototype(ctx, "a1", "p1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if _, err := st.Accounts.DeleteAccount(ctx, "a1"); err != nil {
		t.Errorf("delete the emptied account: %v", err)
	}
}

func TestPageMetricPrototypesInCreationOrder(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	rootAccount(t, st)
	base := time.Now().UTC().Truncate(time.Millisecond)
	for i := range 5 {
		p := domain.MetricPrototype{ID: fmt.Sprintf("p%d", i), Account: "root", DefaultName: "m", Display: "m", Expression: "count()",
			LogType: "pageviews", DefaultFrequency: 60, Created: base.Add(time.Duration(i) * time.Second)}
		if err := st.Metrics.CreateMetricPrototype(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	after := ""
	for range 10 {
		ps, pos, more, err := st.Metrics.PageMetricPrototypes(ctx, "root", after, false, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range ps {
			got, after = append(got, p.ID), pos[i]
		}
		if !more || len(ps) == 0 {
			break
		}
	}
	if strings.Join(got, ",") != "p0,p1,p2,p3,p4" {
		t.Errorf("pages: %v", got)
	}
	ps, _, _, err := st.Metrics.PageMetricPrototypes(ctx, "root", "", true, 1)
	if err != nil || len(ps) != 1 || ps[0].ID != "p4" {
		t.Errorf("newest first: %+v %v", ps, err)
	}
}
