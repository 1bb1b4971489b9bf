package access_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/authz"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/store"
)

// heldCopies gives u1 roles held0001 .. held<n-1> of account acct and
// their grants, copies of held0000 and of u1's grant of it (the same size,
// so the first grants cost the same whatever n), written straight into
// the table with BatchWriteItem: a thousand roles through the store's
// transactions would take minutes under -race.
func heldCopies(t *testing.T, d testenv.Dynamo, acct string, n int) {
	t.Helper()
	base := "held0000"
	copies(t, d, [][2]string{{"RBAC#" + acct, "ROLE#" + base}, {"PRINCIPAL#u1", "GRANT#" + acct + "#" + base}}, n,
		func(i int) *strings.Replacer { return strings.NewReplacer(base, fmt.Sprintf("held%04d", i)) })
}

// copies writes, for i in 1 .. n-1, a copy of the item at each key (PK, SK)
// with rename(i) applied to its string attributes, straight into the table
// with BatchWriteItem: fixtures of many like items, for tests of what
// reads them rather than of how the store writes them.
func copies(t testing.TB, d testenv.Dynamo, keys [][2]string, n int, rename func(i int) *strings.Replacer) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		out, err := d.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.Table), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: k[0]}, "SK": &types.AttributeValueMemberS{Value: k[1]}}})
		if err != nil || out.Item == nil {
			t.Fatalf("read %s %s: %v", k[0], k[1], err)
		}
		var batch []types.WriteRequest
		flush := func() {
			if len(batch) == 0 {
				return
			}
			req := map[string][]types.WriteRequest{d.Table: batch}
			for len(req) > 0 {
				res, err := d.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
				if err != nil {
					t.Fatal(err)
				}
				req = res.UnprocessedItems
			}
			batch = nil
		}
		for i := 1; i < n; i++ {
			r := rename(i)
			it := make(map[string]types.AttributeValue, len(out.Item))
			for name, v := range out.Item {
				if s, ok := v.(*types.AttributeValueMemberS); ok {
					v = &types.AttributeValueMemberS{Value: r.Replace(s.Value)}
				}
				it[name] = v
			}
			batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
			if len(batch) == 25 {
				flush()
			}
		}
		flush()
	}
}

// heldWorld makes account a1 under root, user u1 with a key there and n
// held roles of a1, each permitting GET /v2/applications/** (and 19
// permissions no request uses); it returns the store and the principal.
func heldWorld(t *testing.T, d testenv.Dynamo, n int) (*store.Store, caller.Principal) {
	t.Helper()
	st := store.New(d.Client, d.Table)
	acct := tree(t, st, 1)[1]
	r := roles(t, st, acct.ID, 1, false)[0] // held by no one
	r.ID = "held0000"
	if err := st.Roles.CreateRole(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	principalWithKey(t, st, acct, []domain.Role{r})
	heldCopies(t, d, acct.ID, n)
	return st, caller.Principal{ID: "u1", Kind: domain.KindUser, AccountID: acct.ID, KeyID: "k1"}
}

// A list page filtered by permission (a Decider, then one Allows per
// member) costs the function the same round trips, calls and capacity
// units whether the caller holds 10 roles or 1,000, all granting: the
// Decider reads the first grants and the roles they name, by key, as the
// authorizer does. A refusal then reads every held role, once: the next
// refusal of the same Decider reads nothing.
func TestDeciderListCostDoesNotGrowWithHeldRoles(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("one goroutine over a thousand held roles: run without the race detector (make test-unraced-light)")
	}
	ctx := context.Background()
	page := func(t *testing.T, svc *access.Service, p caller.Principal) {
		dec, err := svc.Decider(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if ok, err := dec.Allows(ctx, "GET", fmt.Sprintf("/v2/applications/app%d", i)); err != nil || !ok {
				t.Fatalf("member %d: %v %v, want allowed", i, ok, err)
			}
		}
	}
	var base cost
	for _, n := range []int{access.FirstGrants, 1000} {
		t.Run(fmt.Sprintf("held%d", n), func(t *testing.T) {
			d := testenv.NewDynamo(t)
			st, p := heldWorld(t, d, n)
			svc := access.New(access.NewStore(st), quiet)
			got := measure(t, d, func() { page(t, svc, p) })
			// The first grants' Query and the key account's GetItem, then
			// one BatchGetItem of the roles they name.
			if got.seq != 2 || got.calls != 3 {
				t.Errorf("list page: %+v (%v), want 2 sequential round trips and 3 calls", got, d.Counter.ByOperation())
			}
			if n == access.FirstGrants {
				base = got
			} else if got != base {
				t.Errorf("list page by a caller holding %d roles: %+v, want %+v as with %d", n, got, base, access.FirstGrants)
			}

			// A refusal is decided, and explained, with every held role.
			dec, err := svc.Decider(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			d.Counter.Reset()
			res, err := dec.Decide(ctx, "DELETE", "/v2/applications/x")
			if err != nil || res.Allowed || res.Considered != n {
				t.Fatalf("refusal: %+v %v, want one considering all %d held roles", res, err, n)
			}
			// With no more than the first grants held, at most a Query
			// finding no more grants (DynamoDB may say more could follow).
			if more, b := n > access.FirstGrants, d.Counter.ByOperation()["BatchGetItem"]; (b > 0) != more {
				t.Errorf("refusal with %d roles held: %v, want roles read only when more than the first %d grants are held", n, d.Counter.ByOperation(), access.FirstGrants)
			}
			d.Counter.Reset()
			if ok, err := dec.Allows(ctx, "PATCH", "/v2/applications/x"); err != nil || ok {
				t.Fatalf("second refusal: %v %v", ok, err)
			}
			if got := d.Counter.Total(); got != 0 {
				t.Errorf("second refusal of the same Decider: %d calls (%v), want 0", got, d.Counter.ByOperation())
			}
		})
	}
}

// What only a role beyond the first grants permits is allowed, by that
// role, once the Decider has read on: its decisions are those of a
// complete read, whichever method asks. Warm, the container keeps what
// was read on, within the staleness bound.
func TestDeciderReadsOnForARefusal(t *testing.T) {
	ctx := context.Background()
	d := testenv.NewDynamo(t)
	st, p := heldWorld(t, d, 3*access.FirstGrants)
	// The last role by id permits GET /v2/tests and is the a1 Account
	// owner (by name, as the invitation rule identifies it).
	last := domain.Role{AccountID: p.AccountID, ID: "zzz", Name: "Account owner", Version: 1,
		Permissions: []authz.Permission{{Method: "GET", Effect: "permit", Spec: []string{"/v2/tests/**"}}}}
	if err := st.Roles.CreateRole(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: last.AccountID, RoleID: last.ID, Via: "test"}); err != nil {
		t.Fatal(err)
	}
	acct, err := st.Accounts.GetAccount(ctx, p.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	owner := func(r authz.Role) bool { return r.Name == "Account owner" && r.AccountID == acct.ID }
	clk := &clock{t: time.Now().UTC()}
	svc := access.New(access.NewStore(st), quiet, access.WithStaleness(access.DefaultStaleness), access.WithClock(clk.now))

	for name, check := range map[string]func(*access.Decider) (bool, string, error){
		"Decide": func(dec *access.Decider) (bool, string, error) {
			res, err := dec.Decide(ctx, "GET", "/v2/tests/t1")
			return res.Allowed && res.Role == last.AuthzRole().Href(), res.Reason, err
		},
		"DecideFor": func(dec *access.Decider) (bool, string, error) {
			res, err := dec.DecideFor(ctx, "GET", "/v2/tests/t1", acct)
			return res.Allowed && res.Role == last.AuthzRole().Href(), res.Reason, err
		},
		"Allows": func(dec *access.Decider) (bool, string, error) {
			ok, err := dec.Allows(ctx, "GET", "/v2/tests/t1")
			return ok, "", err
		},
		"AllowsFor": func(dec *access.Decider) (bool, string, error) {
			ok, err := dec.AllowsFor(ctx, "GET", "/v2/tests/t1", acct)
			return ok, "", err
		},
		"AnyApplies": func(dec *access.Decider) (bool, string, error) {
			ok, err := dec.AnyApplies(ctx, "POST", "/v2/accounts/"+acct.ID+"/invitations", acct, owner)
			return ok, "", err
		},
	} {
		t.Run(name, func(t *testing.T) {
			clk.add(access.DefaultStaleness) // a cold Decider
			dec, err := svc.Decider(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			d.Counter.Reset()
			ok, why, err := check(dec)
			if err != nil || !ok {
				t.Fatalf("%v %q %v, want allowed by %s", ok, why, err, last.ID)
			}
			// The rest of the grants, then the roles they name.
			if ops := d.Counter.ByOperation(); ops["Query"] != 1 || ops["BatchGetItem"] != 1 {
				t.Errorf("reading on: %v, want the rest of the grants and one BatchGetItem of their roles", ops)
			}
			// The next Decider of the container decides with all of it.
			d.Counter.Reset()
			next, err := svc.Decider(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if ok, why, err := check(next); err != nil || !ok {
				t.Fatalf("warm: %v %q %v", ok, why, err)
			}
			res, err := next.Decide(ctx, "DELETE", "/v2/applications/x")
			if err != nil || res.Allowed || res.Considered != 3*access.FirstGrants+1 {
				t.Fatalf("warm refusal: %+v %v, want one considering the %d roles that apply", res, err, 3*access.FirstGrants+1)
			}
			// The grant was decided from the warm inputs, the refusal
			// from the table, read again consistently.
			if d.Counter.Total() == 0 || len(d.Counter.Eventual()) != 0 {
				t.Errorf("warm Decider's refusal: %v (%d eventually consistent), want read again consistently", d.Counter.ByOperation(), len(d.Counter.Eventual()))
			}
			d.Counter.Reset()
			if ok, why, err := check(next); err != nil || !ok {
				t.Fatalf("after the refusal: %v %q %v", ok, why, err)
			}
			if got := d.Counter.Total(); got != 0 {
				t.Errorf("a grant after the refusal's read: %d calls, want 0", got)
			}
		})
	}

	// A refusal the engine makes before looking at roles reads nothing.
	clk.add(access.DefaultStaleness)
	dec, err := svc.Decider(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	d.Counter.Reset()
	if ok, err := dec.Allows(ctx, "GET", "/v2//bad"); err != nil || ok {
		t.Fatalf("bad path: %v %v", ok, err)
	}
	if sw, err := dec.CanSwitch(ctx, domain.Account{ID: "no/such"}); err != nil || sw.Allowed {
		t.Fatalf("switch to a malformed id: %+v %v", sw, err)
	}
	if got := d.Counter.Total(); got != 0 {
		t.Errorf("refusals not made by roles: %d calls (%v), want 0", got, d.Counter.ByOperation())
	}
}

// A decision granted through a group among the first grants reads the
// group's roles and stops there, as the authorizer does: the rest of the
// grants is read only when that does not grant either.
func TestDeciderStopsReadingAtTheFirstGrant(t *testing.T) {
	ctx := context.Background()
	d := testenv.NewDynamo(t)
	st, p := heldWorld(t, d, 5)
	tester := domain.Role{AccountID: p.AccountID, ID: "tester", Name: "Tester", Version: 1,
		Permissions: []authz.Permission{{Method: "GET", Effect: "permit", Spec: []string{"/v2/tests/**"}}}}
	if err := st.Roles.CreateRole(ctx, tester); err != nil {
		t.Fatal(err)
	}
	// Role grants come first in key order, then 20 memberships: the first
	// 10 grants are the 5 roles and groups g00 to g04.
	for i := range 20 {
		g := domain.Group{AccountID: p.AccountID, ID: fmt.Sprintf("g%02d", i), Name: fmt.Sprintf("group %d", i), Version: 1}
		if i == 0 {
			g.Roles = []string{tester.ID}
		}
		if err := st.Roles.CreateGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: p.AccountID, Group: g.ID, Via: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	svc := access.New(access.NewStore(st), quiet)
	dec, err := svc.Decider(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	d.Counter.Reset()
	res, err := dec.Decide(ctx, "GET", "/v2/tests/t1")
	if err != nil || !res.Allowed || res.Role != tester.AuthzRole().Href() {
		t.Fatalf("through group g00: %+v %v", res, err)
	}
	if ops := d.Counter.ByOperation(); ops["Query"] != 0 || ops["BatchGetItem"] != 1 {
		t.Errorf("granted through a group: %v, want only the BatchGetItem of the groups' roles", ops)
	}
	// A refusal then reads the rest and considers every role.
	res, err = dec.Decide(ctx, "DELETE", "/v2/tests/t1")
	if err != nil || res.Allowed || res.Considered != 6 {
		t.Fatalf("refusal: %+v %v, want one considering the 6 roles held", res, err)
	}
	if ops := d.Counter.ByOperation(); ops["Query"] != 1 {
		t.Errorf("refusal: %v, want the rest of the grants read", ops)
	}
}
