package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cads/shared/ddb"
	"cads/shared/domain"
	"cads/shared/store"
)

// appWithAliases creates application id of account holding aliases.
func appWithAliases(st *store.Store, account, id string, aliases ...string) error {
	now := st.Now()
	return st.Applications.CreateApplication(context.Background(), domain.Application{ID: id, Account: account, State: domain.AppStopped,
		Config: `{"name":"x"}`, Aliases: aliases, Version: 1, Created: now, Updated: now}, domain.Quota{})
}

func owner(t *testing.T, st *store.Store, alias string) string {
	t.Helper()
	app, _, err := st.Applications.AliasOwner(context.Background(), alias)
	if errors.Is(err, domain.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return app
}

func isAliasTaken(err error, alias string) bool {
	return domain.ErrorCode(err) == domain.Conflict && strings.Contains(domain.ErrorMessage(err), `"`+alias+`"`) && strings.Contains(domain.ErrorMessage(err), "another application")
}

// Creates of one alias racing in two accounts: exactly one wins, every
// other is the conflict naming the alias, and the losers left nothing.
func TestAliasCreatesRaceExactlyOneWins(t *testing.T) {
	st, _ := newStore(t)
	ensureAccount(t, st, "acct1")
	ensureAccount(t, st, "acct2")
	const racers = 12
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			// Spelled differently each time: the claim is case-insensitive.
			alias := "shop.example.com"
			if i%3 == 0 {
				alias = "SHOP.Example.com"
			}
			errs[i] = appWithAliases(st, fmt.Sprintf("acct%d", 1+i%2), fmt.Sprintf("racer%d", i), alias, fmt.Sprintf("own%d.example.com", i))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("racers %d and %d both created an application with the alias", winner, i)
		case err == nil:
			winner = i
		case !isAliasTaken(err, "shop.example.com"):
			t.Fatalf("racer %d: %v, want the alias conflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no racer won")
	}
	if got := owner(t, st, "shop.example.com"); got != fmt.Sprintf("racer%d", winner) {
		t.Fatalf("the alias belongs to %q, want racer%d", got, winner)
	}
	for i := range racers {
		acct := fmt.Sprintf("acct%d", 1+i%2)
		_, err := st.Applications.GetApplication(context.Background(), acct, fmt.Sprintf("racer%d", i))
		own := owner(t, st, fmt.Sprintf("own%d.example.com", i))
		if i == winner {
			if err != nil || own != "racer"+fmt.Sprint(i) {
				t.Fatalf("winner: %v, own alias held by %q", err, own)
			}
			continue
		}
		// A loser's transaction wrote nothing: no application, no claim.
		if !errors.Is(err, domain.ErrNotFound) || own != "" {
			t.Fatalf("loser %d left its application (%v) or its other alias (held by %q)", i, err, own)
		}
	}
}

// finishConfig applies a configuration change through a task's finishing
// transaction, as the patch-application task does.
func finishConfig(t *testing.T, st *store.Store, task, account, app string, from int, fromAliases, aliases []string) error {
	t.Helper()
	ctx := context.Background()
	now := st.Now()
	newTask(t, st, task, account, now)
	if _, err := st.Tasks.ClaimTask(ctx, task, "w", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return st.Tasks.FinishTask(ctx, store.TaskFinish{ID: task, Owner: "w", State: domain.TaskSuccess,
		Config: &store.ConfigChange{Account: account, App: app, From: from, Config: `{"name":"x"}`, Aliases: aliases, FromAliases: fromAliases}})
}

// A configuration change claims the aliases it adds and releases those
// it drops, in its one transaction; an alias of another application
// fails the whole change; deleting an application frees its aliases.
func TestAliasesMoveWithPatchesAndDeletes(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	ensureAccount(t, st, "acctA")
	ensureAccount(t, st, "acctB")
	if err := appWithAliases(st, "acctB", "appB", "b.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := appWithAliases(st, "acctA", "appA", "a.example.com", "old.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := appWithAliases(st, "acctA", "appA2", "B.example.com"); !isAliasTaken(err, "b.example.com") {
		t.Fatalf("create with B's alias: %v", err)
	}

	// Taking B's alias in a patch: the task's transaction fails, nothing
	// changes (the configuration, the other alias's claims).
	err := finishConfig(t, st, "t1", "acctA", "appA", 1, []string{"a.example.com", "old.example.com"}, []string{"a.example.com", "b.example.com", "new.example.com"})
	if !isAliasTaken(err, "b.example.com") {
		t.Fatalf("patch adding B's alias: %v", err)
	}
	if a, _ := st.Applications.GetApplication(ctx, "acctA", "appA"); a.Version != 1 || owner(t, st, "new.example.com") != "" || owner(t, st, "b.example.com") != "appB" || owner(t, st, "old.example.com") != "appA" {
		t.Fatalf("a refused patch changed something: %+v", a)
	}

	// A patch that moves old -> new: new is claimed, old is free.
	if err := finishConfig(t, st, "t2", "acctA", "appA", 1, []string{"a.example.com", "old.example.com"}, []string{"a.example.com", "new.example.com"}); err != nil {
		t.Fatal(err)
	}
	a, _ := st.Applications.GetApplication(ctx, "acctA", "appA")
	if a.Version != 2 || strings.Join(a.Aliases, ",") != "a.example.com,new.example.com" {
		t.Fatalf("after the move: %+v", a)
	}
	if owner(t, st, "new.example.com") != "appA" || owner(t, st, "old.example.com") != "" || owner(t, st, "a.example.com") != "appA" {
		t.Fatal("claims do not follow the patch")
	}
	// The freed alias is anyone's.
	if err := appWithAliases(st, "acctB", "appB2", "old.example.com"); err != nil {
		t.Fatalf("create with a freed alias: %v", err)
	}

	// Deleting an application frees all its aliases in its transaction.
	if _, err := st.Applications.DeleteApplication(ctx, "acctB", "appB"); err != nil {
		t.Fatal(err)
	}
	if owner(t, st, "b.example.com") != "" {
		t.Fatal("the deleted application's alias is still claimed")
	}
	if err := appWithAliases(st, "acctA", "appA3", "b.example.com"); err != nil {
		t.Fatalf("create with a deleted application's alias: %v", err)
	}
}

// An application holds at most store.MaxAliasWrites aliases, and a
// change adds and removes at most as many together: both fit DynamoDB's
// 100 actions per transaction, which the store checks as AWS would.
func TestAliasTransactionBound(t *testing.T) {
	st, _ := newStore(t)
	ensureAccount(t, st, "acct1")
	many := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d.example.com", prefix, i))
		}
		return out
	}
	if store.MaxAliasWrites != ddb.MaxTransactItems-3 {
		t.Fatalf("MaxAliasWrites = %d", store.MaxAliasWrites)
	}
	if err := appWithAliases(st, "acct1", "full", many("a", store.MaxAliasWrites)...); err != nil {
		t.Fatalf("create with %d aliases: %v", store.MaxAliasWrites, err)
	}
	if err := appWithAliases(st, "acct1", "over", many("o", store.MaxAliasWrites+1)...); !errors.Is(err, store.ErrTooManyAliasChanges) {
		t.Fatalf("create with %d aliases: %v", store.MaxAliasWrites+1, err)
	}
	// Replace 48 of them: 96 claim actions with the task's three.
	from := many("a", store.MaxAliasWrites)
	to := append(many("b", 48), from[48:]...)
	if err := finishConfig(t, st, "t1", "acct1", "full", 1, from, to); err != nil {
		t.Fatalf("change of 96 aliases: %v", err)
	}
	if owner(t, st, "a0.example.com") != "" || owner(t, st, "b47.example.com") != "full" {
		t.Fatal("claims do not follow the change")
	}
	// All 97 replaced: 194 claim actions, refused before anything is sent.
	if err := finishConfig(t, st, "t2", "acct1", "full", 2, to, many("c", store.MaxAliasWrites)); !errors.Is(err, store.ErrTooManyAliasChanges) {
		t.Fatalf("change of 194 aliases: %v", err)
	}
	if _, err := st.Applications.DeleteApplication(context.Background(), "acct1", "full"); err != nil {
		t.Fatalf("delete with %d aliases: %v", store.MaxAliasWrites, err)
	}
	if owner(t, st, "b0.example.com") != "" || owner(t, st, "a96.example.com") != "" {
		t.Fatal("claims survive the delete")
	}
}
