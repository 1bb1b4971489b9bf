package local_test

import (
	"encoding/json"
	"testing"
	"time"
)

// TestFinding7_KeyLineage replays, through the gateway, what a tenant did
// with access keys: (1) it deleted its persistent key, and the session
// keys switched from it kept working for their twelve hours; (2) it used a
// session key to mint a persistent key with no expiry, which outlived the
// session. Now deleting a key refuses everything minted under it on the
// very next request (a session key, a session key of that session key, a
// key minted with a session key), and a key minted with a session key
// expires no later than it.
func TestFinding7_KeyLineage(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret

	// A tenant: an account, a user with a persistent key (in no account)
	// who owns the account through an accepted invitation.
	r := c.do("POST", "/v2/accounts", op, map[string]any{"name": "Tenant"})
	if r.Status != 200 {
		t.Fatalf("create account: %d %s", r.Status, r.Raw)
	}
	tenant := r.Body["href"].(string)
	owner := ""
	for _, role := range c.list(t, "GET", tenant+"/roles", op) {
		if role["name"] == "Account owner" {
			owner = role["href"].(string)
		}
	}
	r = c.do("POST", "/v2/users", op, map[string]any{"email": "tenant@example.com"})
	if r.Status != 200 || owner == "" {
		t.Fatalf("create user: %d %s (owner role %q)", r.Status, r.Raw, owner)
	}
	uid := r.Body["id"].(string)
	r = c.do("POST", "/v2/users/"+uid+"/access-keys", op, map[string]any{"type": "bearer"})
	if r.Status != 200 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	pkey, pid := r.Body["secret_key"].(string), r.Body["id"].(string)
	r = c.do("POST", tenant+"/invitations", op, map[string]any{"user_email": "tenant@example.com", "role": owner})
	if r.Status != 200 {
		t.Fatalf("invite: %d %s", r.Status, r.Raw)
	}
	inv := r.Body["href"].(string)
	invID := r.Body["id"].(string)
	eventually(t, "the invitation to be sent", func() bool { return c.do("GET", inv, op, nil).Body["state"] == "sent" })
	if r := c.do("PATCH", "/v2/users/self/invitations/"+invID, pkey, map[string]any{"state": "accepted"}); r.Status != 200 {
		t.Fatalf("accept: %d %s", r.Status, r.Raw)
	}

	switchInto := func(secret string) (string, string, time.Time) {
		t.Helper()
		r := c.do("POST", "/v2/users/self/authorization", secret, map[string]any{"account": tenant})
		if r.Status != 200 || r.Body["durability"] != "session" {
			t.Fatalf("switch: %d %s", r.Status, r.Raw)
		}
		return r.Body["secret_key"].(string), r.Body["id"].(string), expiry(t, r)
	}
	mint := func(secret string, body map[string]any) reply {
		t.Helper()
		return c.do("POST", "/v2/users/self/access-keys", secret, body)
	}
	works := func(what, secret string) {
		t.Helper()
		if r := c.do("GET", "/v2/users/self/authorization", secret, nil); r.Status != 200 {
			t.Fatalf("%s: %d %s", what, r.Status, r.Raw)
		}
	}
	refused := func(what, secret string) {
		t.Helper()
		for _, path := range []string{"/v2/users/self/authorization", tenant} {
			if r := c.do("GET", path, secret, nil); r.Status != 401 || r.errorType(t) != "unauthorized" {
				t.Errorf("%s, GET %s: %d %s, want 401", what, path, r.Status, r.Raw)
			}
		}
	}

	// The tenant rotates its key (independent of the old one), switches
	// into its account, switches again with the session key, and mints a
	// key with the session key.
	r = mint(pkey, map[string]any{"type": "bearer"})
	if r.Status != 200 || r.Body["expiry"] != nil {
		t.Fatalf("rotated key: %d %s", r.Status, r.Raw)
	}
	rotated := r.Body["secret_key"].(string)
	s1, _, s1Exp := switchInto(pkey)
	s2, _, s2Exp := switchInto(s1)
	if s2Exp.After(s1Exp) {
		t.Errorf("session key of a session key expires at %v, after its parent (%v)", s2Exp, s1Exp)
	}

	// Finding 2: a key minted with the session key asks for no expiry and
	// gets the session key's; asking for a later one is refused.
	r = mint(s1, map[string]any{"type": "bearer"})
	if r.Status != 200 {
		t.Fatalf("mint with a session key: %d %s", r.Status, r.Raw)
	}
	k := r.Body["secret_key"].(string)
	if got := expiry(t, r); got.After(s1Exp) {
		t.Errorf("key minted with a session key expires at %v, after the session key (%v)", got, s1Exp)
	}
	if r := mint(s1, map[string]any{"type": "bearer", "expiry": s1Exp.Add(24 * time.Hour).Format(time.RFC3339)}); r.Status != 400 || r.errorType(t) != "bad_request" {
		t.Errorf("a later expiry than the session key's: %d %s, want 400", r.Status, r.Raw)
	}
	r = c.do("POST", "/v2/users/"+uid+"/access-keys", s1, map[string]any{"type": "bearer"})
	if r.Status != 200 || expiry(t, r).After(s1Exp) {
		t.Errorf("minted through /v2/users/{id}/access-keys: %d %s, want an expiry no later than %v", r.Status, r.Raw, s1Exp)
	}
	for what, s := range map[string]string{"session key": s1, "session key of the session key": s2, "key minted with the session key": k} {
		works(what, s)
	}

	// Finding 1: deleting the persistent key (with the rotated one)
	// refuses its whole lineage on the very next request.
	if r := c.do("DELETE", "/v2/users/self/access-keys/"+pid, rotated, nil); r.Status != 200 {
		t.Fatalf("delete the persistent key: %d %s", r.Status, r.Raw)
	}
	for what, s := range map[string]string{"deleted key": pkey, "session key": s1, "session key of the session key": s2, "key minted with the session key": k} {
		refused(what, s)
	}
	works("rotated key", rotated)

	// The operator deletes a session key in the middle of a chain: what
	// it minted goes with it; the key it came from stays.
	s3, s3id, _ := switchInto(rotated)
	s4, _, _ := switchInto(s3)
	r = mint(s3, map[string]any{"type": "bearer"})
	if r.Status != 200 {
		t.Fatalf("mint: %d %s", r.Status, r.Raw)
	}
	k2 := r.Body["secret_key"].(string)
	if r := c.do("DELETE", "/v2/users/"+uid+"/access-keys/"+s3id, op, nil); r.Status != 200 {
		t.Fatalf("operator deletes the session key: %d %s", r.Status, r.Raw)
	}
	for what, s := range map[string]string{"deleted session key": s3, "its session key": s4, "key minted with it": k2} {
		refused(what, s)
	}
	works("rotated key", rotated)
}

// list reads a collection.
func (c client) list(t *testing.T, method, path, secret string) []map[string]any {
	t.Helper()
	r := c.do(method, path, secret, nil)
	if r.Status != 200 {
		t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Raw)
	}
	var out []map[string]any
	if err := json.Unmarshal([]byte(r.Raw), &out); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, r.Raw)
	}
	return out
}

func expiry(t *testing.T, r reply) time.Time {
	t.Helper()
	s, _ := r.Body["expiry"].(string)
	e, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("expiry of %s: %v", r.Raw, err)
	}
	return e
}

// eventually waits for work a queue worker does after the response.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
