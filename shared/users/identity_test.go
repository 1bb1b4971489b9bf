package users_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/bootstrap"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/wire"
	"cads/shared/wire/userswire"
)

type env struct {
	t     *testing.T
	deps  wire.Deps
	users apigw.ProxyHandler
	boot  bootstrap.Result
	d     testenv.Dynamo
}

func newEnv(t *testing.T) env {
	d := testenv.NewDynamo(t)
	deps := wire.New(slog.New(slog.NewTextHandler(io.Discard, nil)), d.Client, d.Table)
	// The round trips counted here are the family's own; the cost tour
	// counts them with the audit trail's (docs/performance.md).
	deps.Audit = nil
	res, err := bootstrap.Run(context.Background(), deps.Store, "operator@example.com")
	if err != nil {
		t.Fatal(err)
	}
	return env{t: t, deps: deps, users: userswire.Handler(deps), boot: res, d: d}
}

// call sends one API Gateway event to the users function as principal p.
func (e env) call(p caller.Principal, method, resource, path string, params map[string]string, query map[string]string, body any) (int, map[string]any) {
	e.t.Helper()
	req := events.APIGatewayProxyRequest{Resource: resource, Path: path, HTTPMethod: method, PathParameters: params, QueryStringParameters: query,
		Headers: map[string]string{"Content-Type": "application/json"}}
	if body != nil {
		b, _ := json.Marshal(body)
		req.Body = string(b)
	}
	req.RequestContext.Authorizer = p.Context()
	resp, err := e.users(context.Background(), req)
	if err != nil {
		e.t.Fatal(err)
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(resp.Body), &out)
	return resp.StatusCode, out
}

func (e env) operator() caller.Principal {
	return caller.Principal{ID: e.boot.Operator, Kind: "user", AccountID: e.boot.RootAccount, KeyID: e.boot.KeyID}
}

func TestCreateKeyValidation(t *testing.T) {
	e := newEnv(t)
	op := e.operator()
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name   string
		body   any
		status int
	}{
		{"no type", map[string]any{}, 400},
		{"unknown type", map[string]any{"type": "basic"}, 400},
		{"expiry in the past", map[string]any{"type": "bearer", "expiry": past}, 400},
		{"expiry not a time", map[string]any{"type": "bearer", "expiry": "tomorrow"}, 400},
		{"account not an href", map[string]any{"type": "bearer", "account": "root"}, 400},
		{"unknown account", map[string]any{"type": "bearer", "account": "/v2/accounts/nosuch"}, 404},
		{"unknown field", map[string]any{"type": "bearer", "durability": "session"}, 400},
		{"no account", map[string]any{"type": "bearer"}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, body := e.call(op, "POST", "/v2/users/{id}/access-keys", "/v2/users/self/access-keys", map[string]string{"id": "self"}, nil, c.body)
			if st != c.status {
				t.Fatalf("status %d, want %d: %v", st, c.status, body)
			}
		})
	}
	if st, _ := e.call(op, "POST", "/v2/users/{id}/access-keys", "/v2/users/nosuchuser/access-keys", map[string]string{"id": "nosuchuser"}, nil, map[string]any{"type": "bearer"}); st != 404 {
		t.Fatalf("key for a missing user: %d", st)
	}
}

// A key authenticated into no account can still switch into an account
// where its principal may GET /v2/accounts/{id} (docs/api.md#access-keys).
func TestSwitchFromAKeyWithNoAccount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := e.deps.Store.Now()
	u := domain.Principal{ID: "reader1", Kind: domain.KindUser, Email: "reader@example.com", Created: now, Updated: now}
	if err := e.deps.Store.Principals.CreatePrincipal(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := e.deps.Store.Principals.CreateKey(ctx, domain.AccessKey{ID: "k1", PrincipalID: u.ID, Type: "bearer", SecretHash: "x", Created: now}); err != nil {
		t.Fatal(err)
	}
	p := caller.Principal{ID: u.ID, Kind: "user", KeyID: "k1"}
	root := "/v2/accounts/" + e.boot.RootAccount
	if st, body := e.call(p, "POST", "/v2/users/self/authorization", "/v2/users/self/authorization", nil, nil, map[string]any{"account": root}); st != 404 {
		t.Fatalf("switch with no role there: %d %v", st, body)
	}
	// Grant the root account's Reader role.
	roles, err := e.deps.Store.Roles.RolesOf(ctx, []string{e.boot.RootAccount})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		if r.Name == "Reader" {
			if err := e.deps.Store.Roles.PutGrant(ctx, domain.Grant{PrincipalID: u.ID, AccountID: r.AccountID, RoleID: r.ID, Via: "test"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, body := e.call(p, "POST", "/v2/users/self/authorization", "/v2/users/self/authorization", nil, nil, map[string]any{"account": root})
	if st != 200 || body["account"] != root || body["durability"] != "session" || body["secret_key"] == nil {
		t.Fatalf("switch: %d %v", st, body)
	}
	// The simulator explains the no-account key's refusal.
	st, body = e.call(p, "GET", "/v2/users/self/authorization", "/v2/users/self/authorization", nil, map[string]string{"method": "GET", "path": "/v2/applications"}, nil)
	if d, _ := body["decision"].(map[string]any); st != 200 || d["allowed"] != false || d["reason"] == "" {
		t.Fatalf("simulate with no account: %d %v", st, body)
	}
}

func TestUsersReadAndPatch(t *testing.T) {
	e := newEnv(t)
	op := e.operator()
	if st, _ := e.call(op, "GET", "/v2/users/{id}", "/v2/users/nosuch", map[string]string{"id": "nosuch"}, nil, nil); st != 404 {
		t.Fatalf("unknown user: %d", st)
	}
	if st, _ := e.call(op, "GET", "/v2/users/{id}", "/v2/users/Bad-Id", map[string]string{"id": "Bad-Id"}, nil, nil); st != 404 {
		t.Fatalf("malformed id: %d", st)
	}
	st, body := e.call(op, "PATCH", "/v2/users/{id}", "/v2/users/self", map[string]string{"id": "self"}, nil, map[string]any{"name": "  Op  "})
	if st != 200 || body["name"] != "Op" || body["id"] != op.ID {
		t.Fatalf("patch self: %d %v", st, body)
	}
	for _, bad := range []any{map[string]any{}, map[string]any{"name": "a\nb"}, map[string]any{"email": "x@example.com"}} {
		if st, body := e.call(op, "PATCH", "/v2/users/{id}", "/v2/users/self", map[string]string{"id": "self"}, nil, bad); st != 400 {
			t.Fatalf("patch %v: %d %v", bad, st, body)
		}
	}
	for _, bad := range []string{"", "no-at-sign", "a@b", "A <a@example.com>"} {
		if st, body := e.call(op, "POST", "/v2/users", "/v2/users", nil, nil, map[string]any{"email": bad}); st != 400 {
			t.Fatalf("email %q: %d %v", bad, st, body)
		}
	}
}

// Round trips of the users function's hot path.
func TestAuthorizationRoundTrips(t *testing.T) {
	e := newEnv(t)
	e.d.Counter.Reset()
	if st, _ := e.call(e.operator(), "GET", "/v2/users/self/authorization", "/v2/users/self/authorization", nil, nil, nil); st != 200 {
		t.Fatal(st)
	}
	if got := e.d.Counter.Total(); got != 1 {
		t.Fatalf("GET /v2/users/self/authorization made %d DynamoDB calls, want 1 (%v)", got, e.d.Counter.ByOperation())
	}
}

// Service users stay bound to their account: no key from the users
// endpoints, no switching.
func TestServiceUsersStayInTheirAccount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	su := domain.Principal{ID: "svc1", Kind: domain.KindServiceUser, Email: "svc1@service-users.x.invalid", Account: e.boot.RootAccount}
	if err := e.deps.Store.Principals.CreatePrincipal(ctx, su); err != nil {
		t.Fatal(err)
	}
	if st, body := e.call(e.operator(), "POST", "/v2/users/{id}/access-keys", "/v2/users/svc1/access-keys", map[string]string{"id": "svc1"}, nil, map[string]any{"type": "bearer"}); st != 404 {
		t.Fatalf("key for a service user through /v2/users: %d %v", st, body)
	}
	p := caller.Principal{ID: "svc1", Kind: domain.KindServiceUser, AccountID: e.boot.RootAccount, KeyID: "k"}
	if st, body := e.call(p, "POST", "/v2/users/self/authorization", "/v2/users/self/authorization", nil, nil, map[string]any{"account": "/v2/accounts/" + e.boot.RootAccount}); st != 403 {
		t.Fatalf("service user switching: %d %v", st, body)
	}
}

// Creating a key reads its quota (the root account's entitlements), then
// writes in one transaction (the user check and the count ride in it); a
// switch reads the quota beside the account and the caller's roles, then
// writes. A user's first key of each durability finds no count and
// recounts (docs/data-model.md, Access keys): the count, the keys, the
// count's write and the transaction again, once.
func TestKeyAndSwitchRoundTrips(t *testing.T) {
	e := newEnv(t)
	e.d.Counter.SetDelay(25 * time.Millisecond)
	e.d.Counter.Reset()
	if st, body := e.call(e.operator(), "POST", "/v2/users/{id}/access-keys", "/v2/users/self/access-keys", map[string]string{"id": "self"}, nil, map[string]any{"type": "bearer"}); st != 200 {
		t.Fatalf("create key: %d %v", st, body)
	}
	// The installation (read once per store: the root never changes),
	// the quota, the transaction, the recount's three, the transaction.
	if got := e.d.Counter.Sequential(); got != 7 {
		t.Errorf("first POST access-keys: %d sequential round trips, want 7 (%v)", got, e.d.Counter.ByOperation())
	}
	e.d.Counter.Reset()
	if st, body := e.call(e.operator(), "POST", "/v2/users/{id}/access-keys", "/v2/users/self/access-keys", map[string]string{"id": "self"}, nil, map[string]any{"type": "bearer"}); st != 200 {
		t.Fatalf("create key: %d %v", st, body)
	}
	if got := e.d.Counter.Sequential(); got != 2 {
		t.Errorf("POST access-keys: %d sequential round trips, want 2 (%v)", got, e.d.Counter.ByOperation())
	}
	e.d.Counter.Reset()
	if st, body := e.call(e.operator(), "POST", "/v2/users/{id}/access-keys", "/v2/users/self/access-keys", map[string]string{"id": "self"}, nil, map[string]any{"type": "bearer", "account": "/v2/accounts/" + e.boot.RootAccount}); st != 200 {
		t.Fatalf("create key with account: %d %v", st, body)
	}
	if got := e.d.Counter.Sequential(); got != 3 {
		t.Errorf("POST access-keys with account: %d sequential round trips, want 3 (%v)", got, e.d.Counter.ByOperation())
	}
	switchOnce := func() {
		t.Helper()
		e.d.Counter.Reset()
		if st, body := e.call(e.operator(), "POST", "/v2/users/self/authorization", "/v2/users/self/authorization", nil, nil, map[string]any{"account": "/v2/accounts/" + e.boot.RootAccount}); st != 200 {
			t.Fatalf("switch: %d %v", st, body)
		}
	}
	switchOnce()
	// The first session key recounts: three round trips and the
	// transaction again.
	if got := e.d.Counter.Sequential(); got != 7 {
		t.Errorf("first POST authorization: %d sequential round trips, want 7 (%v)", got, e.d.Counter.ByOperation())
	}
	switchOnce()
	// (GetAccount ∥ grants Query ∥ key account GetItem ∥ quota Query), role Queries, the key's transaction.
	if got := e.d.Counter.Sequential(); got != 3 {
		t.Errorf("POST authorization: %d sequential round trips, want 3 (%v)", got, e.d.Counter.ByOperation())
	}
}
