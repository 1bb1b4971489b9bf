package access_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/domain"
	"cads/shared/store"
)

// lineageKey stores a key of principal in account, minted under origin
// with parent (nil, nil: a key of its own lineage), and returns its secret.
func lineageKey(t testing.TB, st *store.Store, principal, id string, account domain.Account, origin, parent *domain.KeyRef, expiry *time.Time) string {
	t.Helper()
	secret := access.NewSecret(principal, id)
	dur := domain.DurabilityPersistent
	if origin != nil {
		dur = domain.DurabilitySession
		if expiry == nil {
			e := time.Now().Add(time.Hour).UTC()
			expiry = &e
		}
	}
	k := domain.AccessKey{ID: id, PrincipalID: principal, Type: "bearer", Durability: dur, Account: account.ID, AccountAncestors: account.Ancestors,
		SecretHash: access.HashSecret(secret), Expiry: expiry, Origin: origin, Parent: parent, Created: time.Now().UTC()}
	if err := st.Principals.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return secret
}

// Deleting a key refuses every key minted under it from the very next
// request: the session keys minted with it, a session key minted with one
// of those and a key minted with a session key; a key rotated with the
// persistent key (minted with it, not under a session) stays.
func TestDeletingAKeyRevokesItsLineageAtOnce(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	chain := tree(t, st, 1)
	acct := chain[1]
	held := roles(t, st, acct.ID, 1, false)
	p0 := principalWithKey(t, st, acct, held) // u1/k1
	if err := st.Principals.CreatePrincipal(context.Background(), domain.Principal{ID: "u2", Kind: domain.KindUser, Email: "u2@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Roles.PutGrant(context.Background(), domain.Grant{PrincipalID: "u2", AccountID: acct.ID, RoleID: held[0].ID, Via: "test"}); err != nil {
		t.Fatal(err)
	}
	svc := access.New(access.NewStore(st), quiet)
	ctx := context.Background()
	k1, s1ref := &domain.KeyRef{Principal: "u1", ID: "k1"}, &domain.KeyRef{Principal: "u1", ID: "s1"}
	keys := map[string]string{
		"origin":                p0,
		"session":               lineageKey(t, st, "u1", "s1", acct, k1, k1, nil),
		"session of a session":  lineageKey(t, st, "u1", "s2", acct, k1, s1ref, nil),
		"minted with a session": lineageKey(t, st, "u1", "k3", acct, k1, s1ref, nil),
		"rotated":               lineageKey(t, st, "u1", "p4", acct, nil, nil, nil),
		// Minted by u1's session key for another user, as an operator may.
		"another user's": lineageKey(t, st, "u2", "k5", acct, k1, s1ref, nil),
	}
	allowed := func(name string) error {
		res, err := svc.Authorize(ctx, keys[name], "GET", "/v2/applications/x")
		if err == nil && !res.Decision.Allowed {
			t.Fatalf("%s: denied: %s", name, res.Decision.Reason)
		}
		return err
	}
	for name := range keys {
		if err := allowed(name); err != nil {
			t.Fatalf("%s before any deletion: %v", name, err)
		}
	}

	// The middle of the chain: what s1 minted goes, in any partition.
	if _, err := st.Principals.DeleteKey(ctx, "u1", "s1"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"session", "session of a session", "minted with a session", "another user's"} {
		if err := allowed(name); !errors.Is(err, access.ErrUnauthenticated) {
			t.Errorf("%s right after its parent's deletion: %v, want ErrUnauthenticated", name, err)
		}
	}
	for _, name := range []string{"origin", "rotated"} {
		if err := allowed(name); err != nil {
			t.Errorf("%s after deleting a session key: %v", name, err)
		}
	}

	// The origin, removed without touching anything else (as a sweep
	// that cannot reach another partition would): the authorizer alone
	// refuses its whole lineage, whatever the depth.
	keys["session"] = lineageKey(t, st, "u1", "s6", acct, k1, k1, nil)
	keys["session of a session"] = lineageKey(t, st, "u1", "s7", acct, k1, &domain.KeyRef{Principal: "u1", ID: "s6"}, nil)
	keys["deep"] = lineageKey(t, st, "u1", "s8", acct, k1, &domain.KeyRef{Principal: "u1", ID: "s7"}, nil)
	keys["another user's"] = lineageKey(t, st, "u2", "k9", acct, k1, &domain.KeyRef{Principal: "u1", ID: "s6"}, nil)
	for _, name := range []string{"session", "session of a session", "deep", "another user's"} {
		if err := allowed(name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := d.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.Table), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "PRINCIPAL#u1"}, "SK": &types.AttributeValueMemberS{Value: "KEY#k1"}}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"origin", "session", "session of a session", "deep", "another user's"} {
		if err := allowed(name); !errors.Is(err, access.ErrUnauthenticated) {
			t.Errorf("%s right after the origin's deletion: %v, want ErrUnauthenticated", name, err)
		}
	}
	if err := allowed("rotated"); err != nil {
		t.Errorf("a key rotated with the deleted one is independent: %v", err)
	}
}

// A lineage lasts no longer than its origin: a key minted under an
// expired key is refused even before its own expiry.
func TestAnExpiredOriginEndsItsLineage(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	chain := tree(t, st, 1)
	acct := chain[1]
	principalWithKey(t, st, acct, roles(t, st, acct.ID, 1, false))
	svc := access.New(access.NewStore(st), quiet)
	past := time.Now().Add(-time.Second).UTC()
	lineageKey(t, st, "u1", "old", acct, nil, nil, &past)
	old := &domain.KeyRef{Principal: "u1", ID: "old"}
	s := lineageKey(t, st, "u1", "s1", acct, old, old, nil)
	if _, err := svc.Authorize(context.Background(), s, "GET", "/v2/applications/x"); !errors.Is(err, access.ErrUnauthenticated) {
		t.Fatalf("session key of an expired origin: %v, want ErrUnauthenticated", err)
	}
	// And the authorizer tells the functions what a key minted with this
	// one inherits.
	k1 := &domain.KeyRef{Principal: "u1", ID: "k1"}
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	s2 := lineageKey(t, st, "u1", "s2", acct, k1, k1, &exp)
	res, err := svc.Authorize(context.Background(), s2, "GET", "/v2/applications/x")
	if err != nil {
		t.Fatal(err)
	}
	p := res.Principal
	if !p.Minted() || p.KeyDurability != domain.DurabilitySession || p.OriginPrincipal != "u1" || p.OriginKey != "k1" || p.KeyExpiry == nil || !p.KeyExpiry.Equal(exp) {
		t.Fatalf("principal %+v does not carry the key's lineage", p)
	}
}
