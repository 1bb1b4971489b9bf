package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/domain"
	"cads/shared/store"
)

// ensureAccount creates the account an application needs.
func ensureAccount(t *testing.T, st *store.Store, id string) {
	t.Helper()
	err := st.Accounts.CreateAccount(context.Background(), domain.Account{ID: id, Name: "account " + id, Ancestors: []string{}}, nil)
	if err != nil && domain.ErrorCode(err) != domain.Conflict {
		t.Fatal(err)
	}
}

func newApp(t *testing.T, st *store.Store, account, id string) domain.Application {
	t.Helper()
	ensureAccount(t, st, account)
	now := st.Now()
	a := domain.Application{ID: id, Account: account, State: domain.AppStopped, Config: `{"name":"x"}`, Version: 1, Created: now, Updated: now}
	if err := st.Applications.CreateApplication(context.Background(), a, domain.Quota{}); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestApplicationLifecycle(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	newApp(t, st, "acct1", "app1")
	newApp(t, st, "acct1", "app2")
	newApp(t, st, "acct2", "app3")
	if err := st.Applications.CreateApplication(ctx, domain.Application{ID: "app1", Account: "acct2", State: domain.AppStopped}, domain.Quota{}); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("duplicate id: %v", err)
	}
	if err := st.Applications.CreateApplication(ctx, domain.Application{ID: "app9", Account: "nosuchaccount", State: domain.AppStopped}, domain.Quota{}); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("application in a missing account: %v", err)
	}

	// Another account's application does not exist for the caller.
	if _, err := st.Applications.GetApplication(ctx, "acct2", "app1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("cross-account get: %v", err)
	}
	apps, err := st.Applications.ListApplications(ctx, "acct1")
	if err != nil || len(apps) != 2 {
		t.Fatalf("list = %+v, %v", apps, err)
	}

	// Optimistic configuration writes.
	d.Counter.Reset()
	a, err := st.Applications.UpdateApplicationConfig(ctx, "acct1", "app1", 1, `{"name":"y"}`)
	if err != nil || a.Version != 2 || a.Config != `{"name":"y"}` || d.Counter.Without("PutItem").Total() != 1 {
		t.Fatalf("update = %+v, %v (%d calls)", a, err, d.Counter.Total())
	}
	if _, err := st.Applications.UpdateApplicationConfig(ctx, "acct1", "app1", 1, `{"name":"z"}`); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("stale update: %v", err)
	}
	if _, err := st.Applications.UpdateApplicationConfig(ctx, "acct2", "app1", 2, `{"name":"z"}`); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("cross-account update: %v", err)
	}

	// Transitions are conditional on the observed state and exclusive.
	if err := st.Applications.BeginTransition(ctx, "acct1", "app1", domain.AppStopped, domain.AppStarting, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := st.Applications.BeginTransition(ctx, "acct1", "app1", domain.AppStopped, domain.AppStarting, "t2"); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("second transition: %v", err)
	}
	// Not stopped: DELETE is a conflict and nothing is deleted.
	if _, err := st.Applications.DeleteApplication(ctx, "acct1", "app1"); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("delete while starting: %v", err)
	}
	a, _ = st.Applications.GetApplication(ctx, "acct1", "app1")
	if a.State != domain.AppStarting || a.TransitionTask != "t1" || a.TransitionFrom != domain.AppStopped || a.Version != 2 {
		t.Fatalf("after begin: %+v", a)
	}

	// Children go with the application.
	if err := st.Applications.CreateAction(ctx, "acct1", domain.Action{App: "app2", ID: "flush", URL: "http://127.0.0.1/x", HTTPMethod: "POST", Version: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Applications.DeleteApplication(ctx, "acct2", "app2"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("cross-account delete: %v", err)
	}
	if _, err := st.Applications.DeleteApplication(ctx, "acct1", "app2"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Applications.GetAction(ctx, "acct1", "app2", "flush"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("action of a deleted application: %v", err)
	}
	if _, err := st.Applications.DeleteApplication(ctx, "acct1", "app2"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestActions(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	newApp(t, st, "acct1", "app1")
	act := domain.Action{App: "app1", ID: "purge", URL: "https://example.com/purge", HTTPMethod: "POST", SecretKey: "c2VjcmV0", Version: 1}
	if err := st.Applications.CreateAction(ctx, "acct2", act); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("create in another account's application: %v", err)
	}
	d.Counter.Reset()
	// The allowance Query (actions quota), then the transaction.
	if err := st.Applications.CreateAction(ctx, "acct1", act); err != nil || d.Counter.Total() != 2 {
		t.Fatalf("create: %v (%d calls)", err, d.Counter.Total())
	}
	if err := st.Applications.CreateAction(ctx, "acct1", act); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("duplicate: %v", err)
	}
	d.Counter.Reset()
	got, err := st.Applications.GetAction(ctx, "acct1", "app1", "purge")
	if err != nil || got.SecretKey != "c2VjcmV0" || d.Counter.Total() != 1 {
		t.Fatalf("get = %+v, %v (%d calls)", got, err, d.Counter.Total())
	}
	if _, err := st.Applications.GetAction(ctx, "acct2", "app1", "purge"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("cross-account get: %v", err)
	}
	got.Name, got.Version = "Purge", 2
	if err := st.Applications.ReplaceAction(ctx, "acct1", got, 1); err != nil {
		t.Fatal(err)
	}
	if err := st.Applications.ReplaceAction(ctx, "acct1", got, 1); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("stale replace: %v", err)
	}
	list, _, more, err := st.Applications.PageActions(ctx, "app1", "", false, 10)
	if err != nil || len(list) != 1 || list[0].Name != "Purge" || more {
		t.Fatalf("list = %+v, %v, %v", list, more, err)
	}
	if err := st.Applications.ApplicationInAccount(ctx, "acct2", "app1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("cross-account list: %v", err)
	}
	if err := st.Applications.DeleteAction(ctx, "acct1", "app1", "purge", 2); err != nil {
		t.Fatal(err)
	}
	if err := st.Applications.DeleteAction(ctx, "acct1", "app1", "purge", 2); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestPageControlsKeepHistory(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	newApp(t, st, "acct1", "app1")
	if _, err := st.Applications.NextPageControlID(ctx, "acct2", "app1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("sequence of another account's application: %v", err)
	}
	var ids []int
	for range 11 {
		id, err := st.Applications.NextPageControlID(ctx, "acct1", "app1")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if err := st.Applications.CreatePageControl(ctx, "acct1", domain.PageControl{App: "app1", ID: id, Name: "c", Actions: "[]", Version: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if ids[0] != 1 || ids[10] != 11 {
		t.Fatalf("ids %v", ids)
	}
	v1, err := st.Applications.GetPageControl(ctx, "acct1", "app1", 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 3; i++ {
		next := v1.Current
		next.Version, next.Name = i, "v"
		if err := st.Applications.UpdatePageControl(ctx, "acct1", v1.Current, next); err != nil {
			t.Fatal(err)
		}
		if err := st.Applications.UpdatePageControl(ctx, "acct1", v1.Current, next); !errors.Is(err, domain.ErrChanged) {
			t.Fatalf("stale update: %v", err)
		}
		v1.Current = next
	}
	got, err := st.Applications.GetPageControl(ctx, "acct1", "app1", 1)
	if err != nil || got.Current.Version != 3 || len(got.History) != 2 || got.History[0].Version != 1 {
		t.Fatalf("get = %+v, %v", got, err)
	}
	// Control 10 is not mistaken for control 1's history.
	ten, err := st.Applications.GetPageControl(ctx, "acct1", "app1", 10)
	if err != nil || ten.Current.ID != 10 || len(ten.History) != 0 {
		t.Fatalf("control 10 = %+v, %v", ten, err)
	}
	// Pages of 3 walk the 11 controls once each, every one whole with its
	// history, however the Query's items fall.
	var all []domain.PageControlVersions
	after := ""
	for range 5 {
		page, pos, more, err := st.Applications.PagePageControls(ctx, "acct1", "app1", after, false, 3, true)
		if err != nil || len(page) != len(pos) || len(page) > 3 {
			t.Fatalf("page after %q: %d, %v", after, len(page), err)
		}
		all = append(all, page...)
		if !more {
			break
		}
		after = pos[len(pos)-1]
		if !store.ValidPageControlPosition(after) {
			t.Fatalf("position %q", after)
		}
	}
	if len(all) != 11 || all[0].Current.ID != 1 || len(all[0].History) != 2 || all[10].Current.ID != 11 {
		t.Fatalf("list: %d controls %+v", len(all), all)
	}
	if err := st.Applications.DeletePageControl(ctx, "acct1", got); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Applications.GetPageControl(ctx, "acct1", "app1", 1); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("deleted control: %v", err)
	}
}

// The page-control list reads current versions and history in one Query
// of the page's Limit, both ways, every control whole with its history
// whatever the page size; a control the Limit cuts waits for the next
// read, unless it is the first, which one more Query completes; history
// without its control (an interrupted delete) is a member without a
// current version, passed over.
func TestPagePageControlsInOneQuery(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	newApp(t, st, "acct1", "app1")
	// Controls 1-6; control 2 at version 4, control 5 at version 2;
	// control 4 deleted but for its history.
	versions := map[int]int{1: 1, 2: 4, 3: 1, 4: 3, 5: 2, 6: 1}
	for id := 1; id <= 6; id++ {
		if _, err := st.Applications.NextPageControlID(ctx, "acct1", "app1"); err != nil {
			t.Fatal(err)
		}
		cur := domain.PageControl{App: "app1", ID: id, Name: fmt.Sprint("c", id), Actions: "[]", Version: 1}
		if err := st.Applications.CreatePageControl(ctx, "acct1", cur); err != nil {
			t.Fatal(err)
		}
		for v := 2; v <= versions[id]; v++ {
			next := cur
			next.Version = v
			if err := st.Applications.UpdatePageControl(ctx, "acct1", cur, next); err != nil {
				t.Fatal(err)
			}
			cur = next
		}
	}
	four, err := st.Applications.GetPageControl(ctx, "acct1", "app1", 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.Table), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "APP#app1"}, "SK": &types.AttributeValueMemberS{Value: "PAGECONTROL#0000000004"}}}); err != nil {
		t.Fatal(err)
	}
	if len(four.History) != 2 {
		t.Fatalf("control 4: %+v", four)
	}
	// What a walk shows: "id:version:history versions", an orphan "-".
	show := func(v domain.PageControlVersions) string {
		if v.Current.ID == 0 {
			return "-"
		}
		s := fmt.Sprintf("%d:%d:", v.Current.ID, v.Current.Version)
		for _, h := range v.History {
			if h.ID != v.Current.ID {
				t.Errorf("history of %d holds %d", v.Current.ID, h.ID)
			}
			s += fmt.Sprint(h.Version)
		}
		return s
	}
	for _, c := range []struct {
		desc, hist bool
		want       string
	}{
		{false, true, "1:1: 2:4:123 3:1: - 5:2:1 6:1:"},
		{true, true, "6:1: 5:2:1 - 3:1: 2:4:123 1:1:"},
		{false, false, "1:1: 2:4: 3:1: - 5:2: 6:1:"},
		{true, false, "6:1: 5:2: - 3:1: 2:4: 1:1:"},
	} {
		for n := 1; n <= 16; n++ {
			var got []string
			after, reads, queries := "", 0, 0
			for more := true; more; reads++ {
				if reads > 20 {
					t.Fatalf("desc %v, %d a read: no end", c.desc, n)
				}
				d.Counter.Reset()
				vs, pos, m, err := st.Applications.PagePageControls(ctx, "acct1", "app1", after, c.desc, n, c.hist)
				if err != nil || len(vs) != len(pos) || len(vs) > n {
					t.Fatalf("read of %d after %q: %d members, %d positions, %v", n, after, len(vs), len(pos), err)
				}
				if ops := d.Counter.ByOperation(); ops["Query"] > 2 || ops["GetItem"] != 1 {
					t.Fatalf("read of %d after %q: %v", n, after, ops)
				}
				queries += d.Counter.ByOperation()["Query"]
				if len(vs) == 0 && m {
					t.Fatalf("read of %d after %q: nothing, but more", n, after)
				}
				for i, v := range vs {
					got = append(got, show(v))
					if !store.ValidPageControlPosition(pos[i]) {
						t.Fatalf("position %q", pos[i])
					}
				}
				if len(pos) > 0 {
					after = pos[len(pos)-1]
				}
				more = m
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("desc %v, history %v, reads of %d:\n got %s\nwant %s", c.desc, c.hist, n, strings.Join(got, " "), c.want)
			}
			// 13 items: one Query of 16 reads them all.
			if n == 16 && queries != 1 {
				t.Errorf("desc %v, reads of 16: %d Queries, want 1", c.desc, queries)
			}
		}
	}
}
