package local_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestFinding27_Quotas replays issue 27's finding 4 through the gateway:
// an account owner created roles (and could create groups, service users,
// actions, page controls, stored tests, metric prototypes) without any
// bound. Now each collection has a
// quota: with the entitlement set to 3, 8 concurrent creates leave
// exactly the remaining room created and answer the rest 409 naming the
// quota; a delete frees one; the entitlement administrator raises the
// quota and the account owner cannot; the account's usage shows it.
func TestFinding27_Quotas(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret

	// A tenant account and its owner, switched into it.
	q := newQuotaTenant(t, c, op, "Quota Tenant", "quota-owner@example.com")
	q.becomeOwner(t, c, op)
	tenant, userKey := q.account, q.key
	r := c.do("POST", "/v2/users/self/authorization", userKey, map[string]any{"account": tenant})
	if r.Status != 200 {
		t.Fatalf("switch: %d %s", r.Status, r.Raw)
	}
	owner := r.Body["secret_key"].(string)

	r = c.do("POST", "/v2/applications", owner, map[string]any{"name": "Quota shop", "aliases": []string{"quota-shop.example.com"}})
	if r.Status != 200 {
		t.Fatalf("create application: %d %s", r.Status, r.Raw)
	}
	app := r.Body["href"].(string)

	// The account owner cannot write its own entitlements, for a quota or
	// otherwise.
	if r := c.do("POST", tenant+"/entitlements", owner, map[string]any{"resource": "roles", "quantity": 100000}); r.Status != 403 || r.errorType(t) != "forbidden" {
		t.Fatalf("owner raises its roles quota: %d %s, want 403", r.Status, r.Raw)
	}

	// The usage shows every quota at its default before any entitlement.
	quotas := func() map[string]map[string]any {
		t.Helper()
		bill := c.list(t, "GET", tenant+"/billing", op)
		if len(bill) == 0 {
			t.Fatalf("no billing record")
		}
		invs, _ := bill[0]["invoices"].([]any)
		if len(invs) != 1 {
			t.Fatalf("open month: %v", bill[0])
		}
		usage, _ := invs[0].(map[string]any)["usage"].(map[string]any)
		qs, _ := usage["quotas"].([]any)
		out := map[string]map[string]any{}
		for _, q := range qs {
			m := q.(map[string]any)
			out[m["resource"].(string)] = m
		}
		return out
	}
	defaults := map[string]float64{"roles": 1000, "groups": 300, "service_users": 1000, "invitations": 5000, "group_invitations": 5000,
		"actions": 100, "page_controls": 200, "tests": 100, "metric_prototypes": 500}
	qs := quotas()
	for kind, d := range defaults {
		if q := qs[kind]; q == nil || q["limit"] != d || q["default"] != d {
			t.Errorf("quota %s before any entitlement: %v, want limit and default %v", kind, q, d)
		}
	}
	if len(qs) != len(defaults) {
		t.Errorf("quotas shown: %v, want %d", qs, len(defaults))
	}

	// Role ids for the groups' bodies.
	r = c.do("POST", tenant+"/roles", owner, map[string]any{"name": "Viewer", "permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications"}}}})
	if r.Status != 200 {
		t.Fatalf("create role: %d %s", r.Status, r.Raw)
	}
	viewer := r.Body["href"].(string)
	r = c.do("POST", tenant+"/roles", owner, map[string]any{"name": "Invited", "permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications"}}}})
	if r.Status != 200 {
		t.Fatalf("create role: %d %s", r.Status, r.Raw)
	}
	invited := r.Body["href"].(string)
	r = c.do("POST", tenant+"/groups", owner, map[string]any{"name": "Invited team", "roles": []string{viewer}})
	if r.Status != 200 {
		t.Fatalf("create group: %d %s", r.Status, r.Raw)
	}
	team := r.Body["href"].(string)
	var pageControl map[string]any
	_ = json.Unmarshal([]byte(`{"name":"Block bots","mode":"request","conditions":{"is_crawler":{}},"actions":[{"type":"deny","status_code":"403","body":"no"}]}`), &pageControl)

	type quotaCase struct {
		kind, per   string
		path        string
		putEach     bool // PUT path/quota-<i> (a test's id is the caller's) rather than POST path
		body        func(i int) any
		held        int // created before the race (Viewer is a role)
		deletePath  func(created map[string]any) string
		usedInUsage bool
	}
	cases := []quotaCase{
		{kind: "roles", path: tenant + "/roles", held: 2, usedInUsage: true, body: func(i int) any {
			return map[string]any{"name": fmt.Sprintf("Custom %d", i), "permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications"}}}}
		}},
		{kind: "groups", path: tenant + "/groups", held: 1, usedInUsage: true, body: func(i int) any {
			return map[string]any{"name": fmt.Sprintf("Team %d", i), "roles": []string{viewer}}
		}},
		{kind: "service_users", path: tenant + "/service-users", usedInUsage: true, body: func(i int) any {
			return map[string]any{"name": fmt.Sprintf("robot %d", i)}
		}},
		// The owner's own invitation is one.
		{kind: "invitations", path: tenant + "/invitations", held: 1, usedInUsage: true, body: func(i int) any {
			return map[string]any{"user_email": fmt.Sprintf("invitee%d@example.com", i), "role": invited}
		}},
		{kind: "group_invitations", path: tenant + "/group-invitations", usedInUsage: true, body: func(i int) any {
			return map[string]any{"user_email": fmt.Sprintf("member%d@example.com", i), "group": team}
		}},
		{kind: "actions", path: app + "/actions", body: func(i int) any {
			return map[string]any{"id": fmt.Sprintf("ping%d", i), "url": "https://ops.example.com/ping"}
		}},
		{kind: "page_controls", path: app + "/pagecontrols", body: func(int) any { return pageControl }},
		{kind: "tests", path: "/v2/tests", putEach: true, usedInUsage: true, body: func(int) any {
			return map[string]any{"probabilities": 1, "models": map[string]any{"home": map[string]any{"type": "user.StaticSession",
				"requests": []any{map[string]any{"name": "home", "method": "GET", "url": "http://quota-shop.example.com/"}}}}}
		}},
		{kind: "metric_prototypes", path: "/v2/metric-prototypes", usedInUsage: true, body: func(i int) any {
			return map[string]any{"default_name": fmt.Sprintf("slow_%d", i), "expression": "count()", "log_type": "proxy-logs", "filter": "elapsed > 2000"}
		}},
	}
	create := func(tc quotaCase, i int) (int, map[string]any, string) {
		if tc.putEach {
			return sendJSON(c.base, "PUT", fmt.Sprintf("%s/quota-%d", tc.path, i), owner, tc.body(i))
		}
		return sendJSON(c.base, "POST", tc.path, owner, tc.body(i))
	}
	const limit, racers = 3, 8
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			r := c.do("POST", tenant+"/entitlements", op, map[string]any{"resource": tc.kind, "quantity": limit, "unit_price": 0})
			if r.Status != 200 {
				t.Fatalf("entitlement: %d %s", r.Status, r.Raw)
			}
			ent := r.Body["href"].(string)
			if r := c.do("PATCH", ent, owner, map[string]any{"quantity": 1000}); r.Status != 403 {
				t.Fatalf("owner raises the entitlement: %d %s, want 403", r.Status, r.Raw)
			}

			var (
				mu      sync.Mutex
				created []map[string]any
				refused []string
				other   []string
				wg      sync.WaitGroup
			)
			for i := range racers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st, body, raw := create(tc, i)
					mu.Lock()
					defer mu.Unlock()
					switch st {
					case 200:
						created = append(created, body)
					case 409:
						refused = append(refused, raw)
					default:
						other = append(other, fmt.Sprintf("%d %s", st, raw))
					}
				}()
			}
			wg.Wait()
			room := limit - tc.held
			if len(created) != room || len(refused) != racers-room || len(other) != 0 {
				t.Fatalf("%d concurrent creates at quota %d with %d held: %d created, %d refused, others %v; want %d created",
					racers, limit, tc.held, len(created), len(refused), other, room)
			}
			for _, raw := range refused {
				if !strings.Contains(raw, `"type":"conflict"`) || !strings.Contains(raw, `quota \"`+tc.kind+`\" reached`) {
					t.Errorf("refusal does not name the quota %s: %s", tc.kind, raw)
				}
			}
			if tc.usedInUsage {
				if q := quotas()[tc.kind]; q["limit"] != float64(limit) || q["used"] != float64(limit) {
					t.Errorf("usage of %s at the quota: %v, want limit and used %d", tc.kind, q, limit)
				}
			}

			// A delete frees one unit, and only one.
			if r := c.do("DELETE", created[0]["href"].(string), owner, nil); r.Status != 200 {
				t.Fatalf("delete: %d %s", r.Status, r.Raw)
			}
			if st, _, raw := create(tc, 100); st != 200 {
				t.Fatalf("create after a delete: %d %s", st, raw)
			}
			if st, _, raw := create(tc, 101); st != 409 {
				t.Fatalf("create past the quota again: %d %s", st, raw)
			}

			// The entitlement administrator raises it.
			if r := c.do("PATCH", ent, op, map[string]any{"quantity": limit + 1}); r.Status != 200 {
				t.Fatalf("operator raises the entitlement: %d %s", r.Status, r.Raw)
			}
			if st, _, raw := create(tc, 102); st != 200 {
				t.Fatalf("create after the raise: %d %s", st, raw)
			}
			if st, _, raw := create(tc, 103); st != 409 {
				t.Fatalf("create past the raised quota: %d %s", st, raw)
			}
		})
	}

	// Deleting a role or a group takes its invitations off the counts
	// with them.
	for _, target := range []struct {
		href, kind string
		left       float64
	}{{invited, "invitations", 1}, {team, "group_invitations", 0}} {
		if q := quotas()[target.kind]; q["used"] != float64(limit+1) {
			t.Fatalf("%s before deleting their target: %v", target.kind, q)
		}
		if r := c.do("DELETE", target.href, owner, nil); r.Status != 200 {
			t.Fatalf("delete %s: %d %s", target.href, r.Status, r.Raw)
		}
		if q := quotas()[target.kind]; q["used"] != target.left {
			t.Errorf("%s after deleting their target: %v, want used %v", target.kind, q, target.left)
		}
	}

	// Deleting a service user takes the invitations it accepted off the
	// count too (its quota is full: the operator adds room first).
	if r := c.do("POST", tenant+"/entitlements", op, map[string]any{"resource": "service_users", "quantity": 10, "unit_price": 0}); r.Status != 200 {
		t.Fatalf("entitlement: %d %s", r.Status, r.Raw)
	}
	r = c.do("POST", tenant+"/service-users", owner, map[string]any{"name": "invited robot"})
	if r.Status != 200 {
		t.Fatalf("create service user: %d %s", r.Status, r.Raw)
	}
	robot, robotEmail := r.Body["href"].(string), r.Body["email"].(string)
	if r := c.do("POST", tenant+"/invitations", owner, map[string]any{"user_email": robotEmail, "role": viewer}); r.Status != 200 {
		t.Fatalf("invite the service user: %d %s", r.Status, r.Raw)
	}
	if q := quotas()["invitations"]; q["used"] != 2.0 {
		t.Fatalf("invitations with the service user's: %v, want used 2", q)
	}
	if r := c.do("DELETE", robot, owner, nil); r.Status != 200 {
		t.Fatalf("delete the service user: %d %s", r.Status, r.Raw)
	}
	if q := quotas()["invitations"]; q["used"] != 1.0 {
		t.Errorf("invitations after deleting the service user: %v, want used 1", q)
	}

	// A per-application quota bounds each application: the first one is
	// full, another has its own room.
	if st, _, raw := post(c.base, app+"/actions", owner, map[string]any{"id": "full", "url": "https://ops.example.com/ping"}); st != 409 {
		t.Fatalf("an action on the full application: %d %s", st, raw)
	}
	r = c.do("POST", "/v2/applications", owner, map[string]any{"name": "Quota shop 2", "aliases": []string{"quota-shop-2.example.com"}})
	if r.Status != 200 {
		t.Fatalf("create application: %d %s", r.Status, r.Raw)
	}
	if st, _, raw := post(c.base, r.Body["href"].(string)+"/actions", owner, map[string]any{"id": "ping", "url": "https://ops.example.com/ping"}); st != 200 {
		t.Fatalf("an action on another application: %d %s", st, raw)
	}
}

// post is a create that may run on any goroutine (client.do may stop the
// test, which only the test's own goroutine may do).
func post(base, path, secret string, body any) (int, map[string]any, string) {
	return sendJSON(base, "POST", path, secret, body)
}

// sendJSON is post with another method.
func sendJSON(base, method, path, secret string, body any) (int, map[string]any, string) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, base+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, m, string(raw)
}

// quotaTenant is a tenant account made by the operator (key op) and a user
// of the installation who is to become its owner: the account's href, its
// Account owner role, and the user's id, email and first (bare) key.
type quotaTenant struct {
	account, ownerRole, user, email, key string
}

func newQuotaTenant(t *testing.T, c client, op, name, email string) quotaTenant {
	t.Helper()
	r := c.do("POST", "/v2/accounts", op, map[string]any{"name": name})
	if r.Status != 200 {
		t.Fatalf("create account: %d %s", r.Status, r.Raw)
	}
	q := quotaTenant{account: r.Body["href"].(string), email: email}
	for _, role := range c.list(t, "GET", q.account+"/roles", op) {
		if role["name"] == "Account owner" {
			q.ownerRole = role["href"].(string)
		}
	}
	r = c.do("POST", "/v2/users", op, map[string]any{"email": email})
	if r.Status != 200 || q.ownerRole == "" {
		t.Fatalf("create user: %d %s (owner role %q)", r.Status, r.Raw, q.ownerRole)
	}
	q.user = r.Body["id"].(string)
	r = c.do("POST", "/v2/users/"+q.user+"/access-keys", op, map[string]any{"type": "bearer"})
	if r.Status != 200 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	q.key = r.Body["secret_key"].(string)
	return q
}

// becomeOwner invites the user to the account's Account owner role and
// accepts once the notifier has sent the invitation.
func (q quotaTenant) becomeOwner(t *testing.T, c client, op string) {
	t.Helper()
	r := c.do("POST", q.account+"/invitations", op, map[string]any{"user_email": q.email, "role": q.ownerRole})
	if r.Status != 200 {
		t.Fatalf("invite: %d %s", r.Status, r.Raw)
	}
	inv, invID := r.Body["href"].(string), r.Body["id"].(string)
	eventually(t, "the invitation to be sent", func() bool { return c.do("GET", inv, op, nil).Body["state"] == "sent" })
	if r := c.do("PATCH", "/v2/users/self/invitations/"+invID, q.key, map[string]any{"state": "accepted"}); r.Status != 200 {
		t.Fatalf("accept: %d %s", r.Status, r.Raw)
	}
}

// TestFinding27_TestRuns: issue 27 took runs of application tests to be
// bounded by the application_tests entitlement; nothing counted them.
// With the entitlement at 3 runs a month, 8 concurrent runs (of 8 tests,
// as a test runs once at a time) start exactly 3 and answer the rest 409
// naming the entitlement; the owner cannot raise it, the entitlement
// administrator does.
func TestFinding27_TestRuns(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	q := newQuotaTenant(t, c, op, "Run Quota Tenant", "run-quota@example.com")
	q.becomeOwner(t, c, op)
	r := c.do("POST", "/v2/users/self/authorization", q.key, map[string]any{"account": q.account})
	if r.Status != 200 {
		t.Fatalf("switch: %d %s", r.Status, r.Raw)
	}
	owner := r.Body["secret_key"].(string)
	if r := c.do("POST", "/v2/applications", owner, map[string]any{"name": "Run shop", "aliases": []string{"run-shop.example.com"}}); r.Status != 200 {
		t.Fatalf("create application: %d %s", r.Status, r.Raw)
	}
	const racers = 8
	cfg := map[string]any{"probabilities": 1, "models": map[string]any{"home": map[string]any{"type": "user.StaticSession",
		"requests": []any{map[string]any{"name": "home", "method": "GET", "url": "http://run-shop.example.com/"}}}}}
	for i := range racers + 2 {
		if r := c.do("PUT", fmt.Sprintf("/v2/tests/run-%d", i), owner, cfg); r.Status != 200 {
			t.Fatalf("store test %d: %d %s", i, r.Status, r.Raw)
		}
	}
	r = c.do("POST", q.account+"/entitlements", op, map[string]any{"resource": "application_tests", "quantity": 3, "unit_price": 0})
	if r.Status != 200 {
		t.Fatalf("entitlement: %d %s", r.Status, r.Raw)
	}
	ent := r.Body["href"].(string)
	run := func(i int) any {
		return map[string]any{"id": fmt.Sprintf("run-%d", i), "duration": 1, "virtualUsers": 1}
	}
	started, refused, other := race(c, racers, "/v2/tests", owner, run)
	if len(started) != 3 || len(refused) != racers-3 || len(other) != 0 {
		t.Fatalf("%d concurrent runs at 3 a month: %d started, %d refused, others %v", racers, len(started), len(refused), other)
	}
	for _, raw := range refused {
		if !strings.Contains(raw, `"type":"conflict"`) || !strings.Contains(raw, "3 application test runs per month") {
			t.Errorf("refusal does not name the entitlement: %s", raw)
		}
	}
	if r := c.do("PATCH", ent, owner, map[string]any{"quantity": 1000}); r.Status != 403 {
		t.Fatalf("owner raises its runs: %d %s, want 403", r.Status, r.Raw)
	}
	if r := c.do("PATCH", ent, op, map[string]any{"quantity": 4}); r.Status != 200 {
		t.Fatalf("operator raises the runs: %d %s", r.Status, r.Raw)
	}
	if st, _, raw := post(c.base, "/v2/tests", owner, run(racers)); st != 200 {
		t.Fatalf("a run after the raise: %d %s", st, raw)
	}
	if st, _, raw := post(c.base, "/v2/tests", owner, run(racers+1)); st != 409 {
		t.Fatalf("a run past the raised entitlement: %d %s", st, raw)
	}
}
