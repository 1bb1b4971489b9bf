package store

import (
	"context"
	"errors"
	"slices"
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

// v3Account writes an account as code of schema version 3 did: its name
// key and claim, no skeleton.
func v3Account(t *testing.T, s *Store, id, name string) {
	t.Helper()
	now := s.Now()
	if err := s.Accounts.CreateAccount(context.Background(), domain.Account{ID: id, Name: name, NameKey: names.Key(name), Keyword: id, Ancestors: []string{}, Created: now, Updated: now}, nil); err != nil {
		t.Fatal(err)
	}
}

func nameKeyPK(name string) string      { return "ACCOUNTNAME#" + names.Key(name) }
func nameSkeletonPK(name string) string { return "ACCOUNTNAME#" + names.Skeleton(name) }

// Versions 3 and 4 move a legacy claim to the name key, add the claim of
// a skeleton that differs, and record both keys on the account, once; an
// account whose name reads as another's keeps its old claim and is
// reported.
func TestMigrationMovesNameClaims(t *testing.T) {
	s := rawStore(t)
	ctx := context.Background()
	legacyAccount(t, s, "a1", "modern Ltd") // keys "rnodern ltd": the claim moves
	legacyAccount(t, s, "a2", "Beta")       // key "beta": the claim stays, the key is set
	legacyAccount(t, s, "a3", "Rnodern")    // key "rnodern"
	legacyAccount(t, s, "a4", "MODERN")     // reads as a3: keeps its old claim
	v3Account(t, s, "a6", "AppIe Corp")     // capital I: a second claim, "apple corp"
	v3Account(t, s, "a7", "PayPal")         // skeleton "paypal", its key: the key is set
	v3Account(t, s, "a8", "PayPaI")         // skeleton "paypal" is a7's: keeps its one claim
	if nameKeyPK("modern Ltd") == legacyAccountNamePK("modern Ltd") || nameSkeletonPK("modern Ltd") == legacyAccountNamePK("modern Ltd") || nameKeyPK("Beta") != legacyAccountNamePK("Beta") ||
		nameSkeletonPK("AppIe Corp") == nameKeyPK("AppIe Corp") || nameSkeletonPK("PayPal") != nameKeyPK("PayPal") {
		t.Fatal("the names no longer test what they should: choose others")
	}

	var fixed, skipped int
	var taken []string
	for after := ""; ; {
		p, err := s.Installation.MigratePage(ctx, after, "", 100, names.KeyAndSkeleton)
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
	slices.Sort(taken)
	if fixed != 5 || skipped != 0 || !slices.Equal(taken, []string{`a4 "MODERN"`, `a8 "PayPaI"`}) {
		t.Fatalf("name claims moved %d, skipped %d, taken %q; want 5, 0, a4 and a8", fixed, skipped, taken)
	}
	for _, c := range []struct{ id, name string }{{"a1", "modern Ltd"}, {"a2", "Beta"}, {"a3", "Rnodern"}, {"a6", "AppIe Corp"}, {"a7", "PayPal"}} {
		if h := claimHolder(t, s, nameKeyPK(c.name)); h != c.id {
			t.Errorf("claim of %q held by %q, want %s", c.name, h, c.id)
		}
		if h := claimHolder(t, s, nameSkeletonPK(c.name)); h != c.id {
			t.Errorf("skeleton claim of %q held by %q, want %s", c.name, h, c.id)
		}
		a, err := s.Accounts.GetAccount(ctx, c.id)
		if err != nil || a.NameKey != names.Key(c.name) || a.NameSkeleton != names.Skeleton(c.name) {
			t.Errorf("%s: name keys %q %q (%v), want %q %q", c.id, a.NameKey, a.NameSkeleton, err, names.Key(c.name), names.Skeleton(c.name))
		}
	}
	if a8, _ := s.Accounts.GetAccount(ctx, "a8"); a8.NameSkeleton != "" || claimHolder(t, s, nameKeyPK("PayPaI")) != "a8" {
		t.Errorf("a8, taken, was changed: skeleton %q, claim held by %q", a8.NameSkeleton, claimHolder(t, s, nameKeyPK("PayPaI")))
	}
	if s.raw(t, legacyAccountNamePK("modern Ltd"), skAccountName) != nil {
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
	if err := s.Accounts.CreateAccount(ctx, domain.Account{ID: "a9", Name: "Apple Corp", NameKey: names.Key("Apple Corp"), NameSkeleton: names.Skeleton("Apple Corp"), Ancestors: []string{}, Created: now, Updated: now}, nil); domain.ErrorCode(err) != domain.Conflict {
		t.Errorf("the name a migrated skeleton reads as: %v, want a conflict", err)
	}
	a4, err := s.Accounts.GetAccountRecord(ctx, "a4")
	if err != nil {
		t.Fatal(err)
	}
	next := a4
	next.Name, next.NameKey, next.NameSkeleton, next.Updated = "Other", names.Key("Other"), names.Skeleton("Other"), s.Now()
	if err := s.Accounts.UpdateAccount(ctx, a4, next); err != nil {
		t.Fatal(err)
	}
	if s.raw(t, legacyAccountNamePK("MODERN"), skAccountName) != nil || claimHolder(t, s, nameKeyPK("Other")) != "a4" {
		t.Error("a rename of an account with a legacy claim did not move it")
	}

	// A second pass writes nothing.
	p, err := s.Installation.MigratePage(ctx, "", "", 100, names.KeyAndSkeleton)
	if err != nil || p.Fixed[FixedNameClaim] != 0 || p.Skipped != 0 || len(p.NamesTaken) != 1 || !p.Done {
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
	if res, err := s.Installation.migrateNameClaim(ctx, stale, read["updated"], names.Key("Modern"), names.Skeleton("Modern")); err != nil || res != claimRaced {
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
	if res, err := s.Installation.migrateNameClaim(ctx, stale, read["updated"], names.Key(stale.Name), names.Skeleton(stale.Name)); err != nil || res != claimMoved {
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
	if res, err := s.Installation.migrateNameClaim(ctx, stale, read["updated"], names.Key(stale.Name), names.Skeleton(stale.Name)); err != nil || res != claimRaced {
		t.Fatalf("migration of an account being deleted: %v %v, want raced", res, err)
	}
	if claimHolder(t, s, nameKeyPK("Modern Three")) != "" || claimHolder(t, s, legacyAccountNamePK("Modern Three")) != "a3" {
		t.Error("the migration moved the claim of an account being deleted")
	}
}

// An account whose name has two keys holds a claim under each: either
// refuses a look-alike, a rename moves both (or neither, when the new
// name is taken), and the account's deletion frees both.
func TestNameClaimsUnderBothKeys(t *testing.T) {
	s := rawStore(t)
	ctx := context.Background()
	now := s.Now()
	named := func(id, parent, name string) domain.AccountRecord {
		return domain.AccountRecord{Account: domain.Account{ID: id, Name: name, NameKey: names.Key(name), NameSkeleton: names.Skeleton(name), Keyword: id,
			Parent: parent, Ancestors: []string{parent}, Created: now, Updated: now}}
	}
	root := named("root", "", "Root")
	root.Ancestors = []string{}
	if err := s.Accounts.CreateAccount(ctx, root.Account, nil); err != nil {
		t.Fatal(err)
	}
	a1 := named("a1", "root", "AppIe Corp") // capital I: keys "appie corp" and "apple corp"
	if err := s.Accounts.CreateSubAccount(ctx, a1, nil); err != nil {
		t.Fatal(err)
	}
	if claimHolder(t, s, nameKeyPK(a1.Name)) != "a1" || claimHolder(t, s, nameSkeletonPK(a1.Name)) != "a1" || nameKeyPK(a1.Name) == nameSkeletonPK(a1.Name) {
		t.Fatalf("claims of %q: %q under its key, %q under its skeleton", a1.Name, claimHolder(t, s, nameKeyPK(a1.Name)), claimHolder(t, s, nameSkeletonPK(a1.Name)))
	}
	for _, name := range []string{"Apple Corp", "appie corp", "APPLE CORP"} {
		if err := s.Accounts.CreateSubAccount(ctx, named("x", "root", name), nil); domain.ErrorCode(err) != domain.Conflict {
			t.Errorf("create %q beside %q: %v, want a conflict", name, a1.Name, err)
		}
	}

	// A rename to a taken name moves neither claim.
	a2 := named("a2", "root", "Pear")
	if err := s.Accounts.CreateSubAccount(ctx, a2, nil); err != nil {
		t.Fatal(err)
	}
	prev, err := s.Accounts.GetAccountRecord(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	next := prev
	next.Name, next.NameKey, next.NameSkeleton, next.Updated = "PEAR", names.Key("PEAR"), names.Skeleton("PEAR"), s.Now()
	if err := s.Accounts.UpdateAccount(ctx, prev, next); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("rename to a taken name: %v, want a conflict", err)
	}
	if claimHolder(t, s, nameKeyPK(a1.Name)) != "a1" || claimHolder(t, s, nameSkeletonPK(a1.Name)) != "a1" {
		t.Fatal("a refused rename gave up a claim")
	}

	// A rename moves both.
	next.Name, next.NameKey, next.NameSkeleton = "Banana", names.Key("Banana"), names.Skeleton("Banana")
	if err := s.Accounts.UpdateAccount(ctx, prev, next); err != nil {
		t.Fatal(err)
	}
	if claimHolder(t, s, nameKeyPK(a1.Name)) != "" || claimHolder(t, s, nameSkeletonPK(a1.Name)) != "" || claimHolder(t, s, nameKeyPK("Banana")) != "a1" {
		t.Fatal("a rename left a claim of the old name or took none of the new")
	}
	apple := named("a3", "root", "Apple Corp")
	if err := s.Accounts.CreateSubAccount(ctx, apple, nil); err != nil {
		t.Fatalf("the name a renamed account gave up: %v", err)
	}

	// The deletion frees both claims.
	if _, err := s.Accounts.DeleteAccount(ctx, "a3"); err != nil {
		t.Fatal(err)
	}
	a4 := named("a4", "root", "AppIe Corp")
	if err := s.Accounts.CreateSubAccount(ctx, a4, nil); err != nil {
		t.Fatalf("the name of a deleted account: %v", err)
	}
	if _, err := s.Accounts.DeleteAccount(ctx, "a4"); err != nil {
		t.Fatal(err)
	}
	if claimHolder(t, s, nameKeyPK(a4.Name)) != "" || claimHolder(t, s, nameSkeletonPK(a4.Name)) != "" {
		t.Error("a deleted account's claims are left")
	}
}
