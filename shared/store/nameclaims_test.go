package store

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"cads/shared/domain"
	"cads/shared/names"
)

// legacyAccount writes an account as code before schema version 3 did:
// no name key, its claim under the lower-cased name.
func legacyAccount(t *testing.T, s *Store, id, name string) {
	t.Helper()
	now := s.Now()
	if err := s.Accounts.CreateAccount(context.Background(), domain.Account{ID: id, Name: name, Keyword: id, Ancestors: []string{}, Created: now, Updated: now}, nil); err != nil {
		t.Fatal(err)
	}
	if s.raw(t, legacyAccountNamePK(name), skAccountName) == nil {
		t.Fatalf("no legacy claim for %q", name)
	}
}

// claimHolder is the account holding the name claim under pk ("" none).
func claimHolder(t *testing.T, s *Store, pk string) string {
	t.Helper()
	return str(s.raw(t, pk, skAccountName)["account"])
}

func nameKeyPK(name string) string { return "ACCOUNTNAME#" + names.Key(name) }

// Version 3 moves a legacy claim to the name key and records the key on
// the account, once; an account whose name reads as another's keeps its
// old claim and is reported.
func TestMigrationMovesNameClaims(t *testing.T) {
	s := rawStore(t)
	ctx := context.Background()
	legacyAccount(t, s, "a1", "Modern Ltd") // key "rnodern ltd": the claim moves
	legacyAccount(t, s, "a2", "Beta")       // key "beta": the claim stays, the key is set
	legacyAccount(t, s, "a3", "Rnodern")    // key "rnodern"
	legacyAccount(t, s, "a4", "MODERN")     // reads as a3: keeps its old claim
	if nameKeyPK("Modern Ltd") == legacyAccountNamePK("Modern Ltd") || nameKeyPK("Beta") != legacyAccountNamePK("Beta") {
		t.Fatal("the names no longer test what they should: choose others")
	}

	var fixed, skipped int
	var taken []string
	for after := ""; ; {
		p, err := s.Installation.MigratePage(ctx, after, "", 100, names.Key)
		if err != nil {
			t.Fatal(err)
		}
		fixed += p.Fixed[FixedNameClaim]
		skipped += p.Skipped
		taken = append(taken, p.NamesTaken...)
		if p.Done {
			break
		}
		after = p.AfterPK
	}
	if fixed != 3 || skipped != 0 || len(taken) != 1 || taken[0] != `a4 "MODERN"` {
		t.Fatalf("name claims moved %d, skipped %d, taken %q; want 3, 0 and a4", fixed, skipped, taken)
	}
	for _, c := range []struct{ id, name string }{{"a1", "Modern Ltd"}, {"a2", "Beta"}, {"a3", "Rnodern"}} {
		if h := claimHolder(t, s, nameKeyPK(c.name)); h != c.id {
			t.Errorf("claim of %q held by %q, want %s", c.name, h, c.id)
		}
		a, err := s.Accounts.GetAccount(ctx, c.id)
		if err != nil || a.NameKey != names.Key(c.name) {
			t.Errorf("%s: name key %q (%v), want %q", c.id, a.NameKey, err, names.Key(c.name))
		}
	}
	if s.raw(t, legacyAccountNamePK("Modern Ltd"), skAccountName) != nil {
		t.Error("the legacy claim of a moved name is left behind")
	}
	if a4, _ := s.Accounts.GetAccount(ctx, "a4"); a4.NameKey != "" || claimHolder(t, s, legacyAccountNamePK("MODERN")) != "a4" {
		t.Errorf("a4, taken, was changed: key %q, old claim held by %q", a4.NameKey, claimHolder(t, s, legacyAccountNamePK("MODERN")))
	}

	// The claims work as the API uses them: a look-alike of a moved name
	// is taken; a4 renamed frees its old claim and takes a new one.
	now := s.Now()
	if err := s.Accounts.CreateAccount(ctx, domain.Account{ID: "a5", Name: "Мodern Ltd", NameKey: names.Key("Мodern Ltd"), Ancestors: []string{}, Created: now, Updated: now}, nil); domain.ErrorCode(err) != domain.Conflict {
		t.Errorf("a Cyrillic look-alike of a migrated name: %v, want a conflict", err)
	}
	a4, err := s.Accounts.GetAccountRecord(ctx, "a4")
	if err != nil {
		t.Fatal(err)
	}
	next := a4
	next.Name, next.NameKey, next.Updated = "Other", names.Key("Other"), s.Now()
	if err := s.Accounts.UpdateAccount(ctx, a4, next); err != nil {
		t.Fatal(err)
	}
	if s.raw(t, legacyAccountNamePK("MODERN"), skAccountName) != nil || claimHolder(t, s, nameKeyPK("Other")) != "a4" {
		t.Error("a rename of an account with a legacy claim did not move it")
	}

	// A second pass writes nothing.
	p, err := s.Installation.MigratePage(ctx, "", "", 100, names.Key)
	if err != nil || p.Fixed[FixedNameClaim] != 0 || p.Skipped != 0 || len(p.NamesTaken) != 0 || !p.Done {
		t.Errorf("second pass: %+v %v", p, err)
	}
}

// The migration loses to a rename and a DELETE that read the account
// first, and a rename that read it before the migration is refused, so
// no claim is ever left without its account.
func TestNameClaimMigrationRaces(t *testing.T) {
	s := rawStore(t)
	ctx := context.Background()
	legacyAccount(t, s, "a1", "Modern")
	stale, err := s.Accounts.GetAccountRecord(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	read := s.raw(t, accountPK("a1"), skAccount)

	// A rename after the migration read the account: the migration's
	// write is refused.
	next := stale
	next.Name, next.NameKey, next.Updated = "Mod", names.Key("Mod"), s.Now()
	if err := s.Accounts.UpdateAccount(ctx, stale, next); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Installation.migrateNameClaim(ctx, stale, read["updated"], names.Key("Modern")); err != nil || res != claimRaced {
		t.Fatalf("migration after a rename: %v %v, want raced", res, err)
	}
	if claimHolder(t, s, nameKeyPK("Modern")) != "" || claimHolder(t, s, nameKeyPK("Mod")) != "a1" {
		t.Error("the raced migration wrote a claim")
	}

	// The migration first: a rename that read the account before it is
	// refused (domain.ErrChanged), not leaving the moved claim behind.
	legacyAccount(t, s, "a2", "Rnodern Two")
	stale, err = s.Accounts.GetAccountRecord(ctx, "a2")
	if err != nil {
		t.Fatal(err)
	}
	read = s.raw(t, accountPK("a2"), skAccount)
	if res, err := s.Installation.migrateNameClaim(ctx, stale, read["updated"], names.Key(stale.Name)); err != nil || res != claimMoved {
		t.Fatalf("migration: %v %v", res, err)
	}
	next = stale
	next.Name, next.NameKey, next.Updated = "Two", names.Key("Two"), s.Now()
	if err := s.Accounts.UpdateAccount(ctx, stale, next); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("a rename read before the migration: %v, want domain.ErrChanged", err)
	}

	// A DELETE under way: its mark refuses the migration, and the delete
	// removes the claim it read.
	legacyAccount(t, s, "a3", "Modern Three")
	read = s.raw(t, accountPK("a3"), skAccount)
	stale, err = s.Accounts.GetAccountRecord(ctx, "a3")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: key(accountPK("a3"), skAccount),
		UpdateExpression: aws.String("SET deleting = updated")}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Installation.migrateNameClaim(ctx, stale, read["updated"], names.Key(stale.Name)); err != nil || res != claimRaced {
		t.Fatalf("migration of an account being deleted: %v %v, want raced", res, err)
	}
	if claimHolder(t, s, nameKeyPK("Modern Three")) != "" || claimHolder(t, s, legacyAccountNamePK("Modern Three")) != "a3" {
		t.Error("the migration moved the claim of an account being deleted")
	}
}
