package local_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// race fires n concurrent POSTs of body to path with secret and sorts the
// answers: the created bodies, the raw 409s, and anything else.
func race(c client, n int, path, secret string, body func(i int) any) (created []map[string]any, refused, other []string) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, b, raw := post(c.base, path, secret, body(i))
			mu.Lock()
			defer mu.Unlock()
			switch st {
			case 200:
				created = append(created, b)
			case 409:
				refused = append(refused, raw)
			default:
				other = append(other, fmt.Sprintf("%d %s", st, raw))
			}
		}()
	}
	wg.Wait()
	return created, refused, other
}

// TestFinding27_KeyQuotas replays issue 27's finding 4 for the one
// collection the other quotas left out, a user's access keys (TTL removes
// expired ones, which no transaction can count). With the root account's
// access_keys entitlement at 3, 8 concurrent key creates for one user leave
// exactly the room created and answer the rest 409 naming the quota; a
// delete frees one; a key that expires frees its room with no delete; session
// keys have their own quota, so a user at either limit is not locked out
// of the other; only the entitlement administrator changes them.
func TestFinding27_KeyQuotas(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	root := "/v2/accounts/" + p.Bootstrap.RootAccount

	// The root account shows the per-user quotas at their defaults.
	keyQuotas := func() map[string]map[string]any {
		t.Helper()
		bill := c.list(t, "GET", root+"/billing", op)
		invs, _ := bill[0]["invoices"].([]any)
		usage, _ := invs[0].(map[string]any)["usage"].(map[string]any)
		out := map[string]map[string]any{}
		for _, q := range usage["quotas"].([]any) {
			m := q.(map[string]any)
			if m["per"] == "principal" {
				out[m["resource"].(string)] = m
			}
		}
		return out
	}
	for kind, d := range map[string]float64{"access_keys": 10, "session_keys": 100} {
		if q := keyQuotas()[kind]; q == nil || q["limit"] != d || q["default"] != d || q["used"] != nil {
			t.Errorf("quota %s before any entitlement: %v, want per principal, limit and default %v, used null", kind, q, d)
		}
	}

	r := c.do("POST", root+"/entitlements", op, map[string]any{"resource": "access_keys", "quantity": 3, "unit_price": 0})
	if r.Status != 200 {
		t.Fatalf("entitlement: %d %s", r.Status, r.Raw)
	}
	keysEnt := r.Body["href"].(string)
	if q := keyQuotas()["access_keys"]; q["limit"] != 3.0 {
		t.Errorf("access_keys after the entitlement: %v, want limit 3", q)
	}

	// A tenant account whose owner is the user under test.
	q := newQuotaTenant(t, c, op, "Key Quota Tenant", "key-quota@example.com")
	tenant, uid, userKey := q.account, q.user, q.key
	keys := "/v2/users/" + uid + "/access-keys"

	// Eight concurrent creates with one key held: exactly two are made.
	bearer := func(int) any { return map[string]any{"type": "bearer"} }
	created, refused, other := race(c, 8, keys, op, bearer)
	if len(created) != 2 || len(refused) != 6 || len(other) != 0 {
		t.Fatalf("8 concurrent key creates at quota 3 with 1 held: %d created, %d refused, others %v; want 2 created", len(created), len(refused), other)
	}
	for _, raw := range refused {
		if !strings.Contains(raw, `"type":"conflict"`) || !strings.Contains(raw, `quota \"access_keys\" reached: user `+uid) {
			t.Errorf("refusal does not name the quota: %s", raw)
		}
	}
	if got := len(c.list(t, "GET", keys, op)); got != 3 {
		t.Errorf("the user has %d keys, want 3", got)
	}

	// A delete frees one, and only one.
	if r := c.do("DELETE", created[0]["href"].(string), op, nil); r.Status != 200 {
		t.Fatalf("delete key: %d %s", r.Status, r.Raw)
	}
	r = c.do("POST", keys, op, map[string]any{"type": "bearer", "expiry": time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)})
	if r.Status != 200 {
		t.Fatalf("create after a delete: %d %s", r.Status, r.Raw)
	}
	if r := c.do("POST", keys, op, map[string]any{"type": "bearer"}); r.Status != 409 {
		t.Fatalf("create past the quota again: %d %s", r.Status, r.Raw)
	}

	// The key with an expiry frees its room when it expires, with no
	// delete (its item stays until TTL removes it).
	time.Sleep(3500 * time.Millisecond)
	if r := c.do("POST", keys, op, map[string]any{"type": "bearer"}); r.Status != 200 {
		t.Fatalf("create after a key expired: %d %s", r.Status, r.Raw)
	}
	if r := c.do("POST", keys, op, map[string]any{"type": "bearer"}); r.Status != 409 {
		t.Fatalf("create past the quota after the expiry: %d %s", r.Status, r.Raw)
	}

	// The user becomes the tenant's owner, with a session key.
	q.becomeOwner(t, c, op)

	// Session keys: their own quota. At 3, with none held, 8 concurrent
	// switches make exactly 3; the user at its persistent limit switched.
	if r := c.do("POST", root+"/entitlements", op, map[string]any{"resource": "session_keys", "quantity": 3, "unit_price": 0}); r.Status != 200 {
		t.Fatalf("session entitlement: %d %s", r.Status, r.Raw)
	}
	switched, refused, other := race(c, 8, "/v2/users/self/authorization", userKey, func(int) any { return map[string]any{"account": tenant} })
	if len(switched) != 3 || len(refused) != 5 || len(other) != 0 {
		t.Fatalf("8 concurrent switches at quota 3: %d made, %d refused, others %v; want 3", len(switched), len(refused), other)
	}
	for _, raw := range refused {
		if !strings.Contains(raw, `quota \"session_keys\" reached: user `+uid) {
			t.Errorf("refusal does not name the session quota: %s", raw)
		}
	}
	owner := switched[0]["secret_key"].(string)

	// Not locked out: the keys work, and the user deletes a session key
	// with its persistent one to switch again.
	if r := c.do("GET", tenant, owner, nil); r.Status != 200 {
		t.Fatalf("session key at the quota: %d %s", r.Status, r.Raw)
	}
	if r := c.do("DELETE", switched[1]["href"].(string), userKey, nil); r.Status != 200 {
		t.Fatalf("delete a session key: %d %s", r.Status, r.Raw)
	}
	if r := c.do("POST", "/v2/users/self/authorization", userKey, map[string]any{"account": tenant}); r.Status != 200 {
		t.Fatalf("switch after a delete: %d %s", r.Status, r.Raw)
	}

	// The owner cannot raise either quota, in the root account or its own.
	for _, path := range []string{root + "/entitlements", tenant + "/entitlements"} {
		for _, kind := range []string{"access_keys", "session_keys"} {
			if r := c.do("POST", path, owner, map[string]any{"resource": kind, "quantity": 1000}); r.Status != 403 && r.Status != 404 {
				t.Errorf("owner creates a %s entitlement at %s: %d %s, want 403 or 404", kind, path, r.Status, r.Raw)
			}
		}
	}
	if r := c.do("PATCH", keysEnt, owner, map[string]any{"quantity": 1000}); r.Status != 403 && r.Status != 404 {
		t.Errorf("owner raises the access_keys entitlement: %d %s, want 403 or 404", r.Status, r.Raw)
	}

	// The entitlement administrator does.
	if r := c.do("PATCH", keysEnt, op, map[string]any{"quantity": 4}); r.Status != 200 {
		t.Fatalf("operator raises the entitlement: %d %s", r.Status, r.Raw)
	}
	if r := c.do("POST", keys, op, map[string]any{"type": "bearer"}); r.Status != 200 {
		t.Fatalf("create after the raise: %d %s", r.Status, r.Raw)
	}
	if r := c.do("POST", keys, op, map[string]any{"type": "bearer"}); r.Status != 409 {
		t.Fatalf("create past the raised quota: %d %s", r.Status, r.Raw)
	}

	// On a sub-account a key quota would change nothing: the entitlement
	// administrator gets a 400 saying where it is set, and nothing is
	// recorded.
	for _, kind := range []string{"access_keys", "session_keys"} {
		r := c.do("POST", tenant+"/entitlements", op, map[string]any{"resource": kind, "quantity": 1000, "unit_price": 0})
		if r.Status != 400 || !strings.Contains(r.Raw, "the root account's entitlements set it") {
			t.Errorf("a %s entitlement on a sub-account: %d %s, want the 400 naming the root", kind, r.Status, r.Raw)
		}
	}
	for _, e := range c.list(t, "GET", tenant+"/entitlements", op) {
		if k := e["resource"]; k == "access_keys" || k == "session_keys" {
			t.Errorf("a refused key quota entitlement was recorded on the sub-account: %v", e)
		}
	}
}
