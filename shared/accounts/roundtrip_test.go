package accounts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/domain"
)

// delay makes parallel calls overlap even on a loaded machine under -race,
// so Sequential() counts waves, not scheduling luck.
const delay = 25 * time.Millisecond

// The DynamoDB round trips of each endpoint (listed in docs/data-model.md).
// seq is the latency in round trips, total the calls made.
func TestRoundTrips(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root := e.root()
	a := e.account(root, "Measured", time.Now().UTC().AddDate(0, -1, 0))
	empty := e.account(root, "Empty", time.Now().UTC())
	if err := e.st.Entitlements.CreateEntitlement(ctx, domain.Entitlement{ID: "ent1", Account: a.ID, Resource: domain.ResourceApplications, Quantity: 1, Period: domain.PeriodMonth, Version: 1}); err != nil {
		t.Fatal(err)
	}
	acct := "/v2/accounts/" + a.ID
	for _, c := range []struct {
		method, path, body string
		seq, total         int
	}{
		// Lists follow writes of their collection here: they read the
		// journal of recent writes (docs/data-model.md, Read your writes).
		{"POST", "/v2/accounts", `{"name":"Fresh"}`, 2, 2},                                 // parent GetItem; TransactWriteItems (account, name, 3 roles, parent check)
		{"GET", acct, "", 1, 1},                                                            // GetItem
		{"PATCH", acct, `{"name":"Measured 2"}`, 2, 2},                                     // GetItem; TransactWriteItems (account, name moves)
		{"PATCH", acct, `{"keyword":"m2"}`, 2, 2},                                          // GetItem; TransactWriteItems
		{"GET", "/v2/accounts", "", 2, 6},                                                  // decider (grants + key account, then roles) beside the ACCOUNTS page Query (GSI2) and its journal Query; the members the journal names (BatchGetItem)
		{"GET", acct + "/billing", "", 2, 2},                                               // partition Query (usage count included); the closed month frozen (first read)
		{"GET", acct + "/billing", "", 1, 1},                                               // partition Query (usage count included)
		{"GET", acct + "/entitlements", "", 2, 7},                                          // decider (2) beside the account GetItem, the entitlements Query and its journal Query; the members the journal names
		{"POST", acct + "/entitlements", `{"resource":"address_sets","quantity":2}`, 2, 2}, // Query (cap); TransactWriteItems (put, account check)
		{"GET", acct + "/entitlements/ent1", "", 1, 1},                                     // GetItem
		{"PATCH", acct + "/entitlements/ent1", `{"quantity":4}`, 2, 2},                     // GetItem; TransactWriteItems (versioned put, account check)
		{"DELETE", acct + "/entitlements/ent1", "", 1, 2},                                  // DeleteItem ∥ its journal PutItem
		{"DELETE", "/v2/accounts/" + empty.ID, "", 7, 22},                                  // mark (∥ its journal PutItem); 5 leftover Queries (sub-accounts, applications, address sets, tests, metric prototypes) and the usage items' BatchGetItem; keys, RBAC, invitations, service-user Queries; 3 holder Queries; BatchWrite; TransactWriteItems; keys, partition, tasks and CA Queries (+ a BatchWrite if they find anything)
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			e.d.Counter.SetDelay(delay)
			defer e.d.Counter.SetDelay(0)
			e.d.Counter.Reset()
			r := e.call(e.op, c.method, c.path, c.body)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
			if seq, total := e.d.Counter.Sequential(), e.d.Counter.Total(); (seq != c.seq || total != c.total) && !testenv.Realistic() {
				t.Errorf("%d sequential / %d calls, want %d / %d (%v)", seq, total, c.seq, c.total, e.d.Counter.ByOperation())
			}
		})
	}
}

// Hierarchies have no depth limit (docs/api.md#sub-accounts): creating, reading and authorizing in an
// account at depth 1000 costs the same DynamoDB round trips as at depth 1.
func TestDepth1000CostsWhatDepth1Costs(t *testing.T) {
	type cost struct{ seq, total int }
	measure := func(t *testing.T, depth int) map[string]cost {
		e := newEnv(t)
		ctx := context.Background()
		// The parent at depth-1 is written directly, with its real
		// ancestor list; the accounts between it and the root are not
		// (nothing reads them: that is the point of the ancestor list).
		parent := e.root()
		if depth > 1 {
			anc := []string{parent.ID}
			for i := 1; i < depth-1; i++ {
				anc = append(anc, fmt.Sprintf("between%08d", i))
			}
			parent = domain.AccountRecord{Account: domain.Account{ID: "parent", Name: "Parent", Parent: anc[len(anc)-1], Ancestors: anc}}
			if err := e.st.Accounts.CreateAccount(ctx, parent.Account, nil); err != nil {
				t.Fatal(err)
			}
		}
		out := map[string]cost{}
		count := func(name string, f func()) {
			e.d.Counter.SetDelay(delay)
			e.d.Counter.Reset()
			f()
			out[name] = cost{e.d.Counter.Sequential(), e.d.Counter.Total()}
			e.d.Counter.SetDelay(0)
		}

		var id string
		count("create", func() {
			r := e.call(e.in(parent.ID), "POST", "/v2/accounts", `{"name":"Leaf"}`)
			if r.Status != 200 {
				t.Fatalf("create at depth %d: %d %s", depth, r.Status, r.Raw)
			}
			id = r.str("id")
		})
		leaf, err := e.st.Accounts.GetAccountRecord(ctx, id)
		if err != nil || len(leaf.Ancestors) != depth || leaf.Parent != parent.ID {
			t.Fatalf("leaf at depth %d has %d ancestors, parent %s (%v)", depth, len(leaf.Ancestors), leaf.Parent, err)
		}
		count("read", func() {
			if r := e.call(e.op, "GET", "/v2/accounts/"+id, ""); r.Status != 200 {
				t.Fatalf("read: %d %s", r.Status, r.Raw)
			}
		})

		// The operator's session key in the new account, as a switch makes.
		secret := access.NewSecret(e.boot.Operator, "deepkey")
		if err := e.st.Principals.CreateKey(ctx, domain.AccessKey{ID: "deepkey", PrincipalID: e.boot.Operator, Type: "bearer", Durability: domain.DurabilitySession,
			Account: id, AccountAncestors: leaf.Ancestors, SecretHash: access.HashSecret(secret)}); err != nil {
			t.Fatal(err)
		}
		svc := access.New(access.NewStore(e.st), quiet)
		for _, req := range [][2]string{{"GET", "/v2/accounts/{id}"}, {"POST", "/v2/accounts"}, {"GET", "/v2/accounts/{id}/entitlements"}, {"PATCH", "/v2/accounts/{id}"}} {
			count("authorize "+req[0]+" "+req[1], func() {
				res, err := svc.Authorize(ctx, secret, req[0], strings.ReplaceAll(req[1], "{id}", id))
				if err != nil || !res.Decision.Allowed {
					t.Fatalf("authorize %v at depth %d: %v %s", req, depth, err, res.Decision.Reason)
				}
			})
		}
		return out
	}
	var at1, at1000 map[string]cost
	t.Run("depth1", func(t *testing.T) { at1 = measure(t, 1) })
	t.Run("depth1000", func(t *testing.T) { at1000 = measure(t, 1000) })
	if len(at1) == 0 || len(at1) != len(at1000) {
		t.Fatalf("measurements %v / %v", at1, at1000)
	}
	for k, c := range at1 {
		if at1000[k] != c && !testenv.Realistic() {
			t.Errorf("%s: depth 1 costs %+v, depth 1000 %+v", k, c, at1000[k])
		} else {
			t.Logf("%s: %d sequential / %d calls at depth 1 and 1000", k, c.seq, c.total)
		}
	}
}
