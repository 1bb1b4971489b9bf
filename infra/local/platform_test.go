package local_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"cads/infra/local"
	"cads/infra/local/localtest"
)

// client talks to a running platform as a user would: real HTTP on loopback.
type client struct {
	t    *testing.T
	base string
}

type reply struct {
	Status int
	Body   map[string]any
	Raw    string
}

func (c client) do(method, path, secret string, body any) reply {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := reply{Status: res.StatusCode, Raw: string(raw)}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.t.Fatalf("%s %s: Content-Type %q, body %s", method, path, ct, raw)
	}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// errorBody checks the API's error body shape and returns its type.
func (r reply) errorType(t *testing.T) string {
	t.Helper()
	e, _ := r.Body["error"].(map[string]any)
	if st, _ := r.Body["status"].(float64); int(st) != r.Status || e == nil || e["type"] == "" || e["message"] == "" {
		t.Fatalf("not the API error body for status %d: %s", r.Status, r.Raw)
	}
	return e["type"].(string)
}

func start(t *testing.T) (*local.Platform, client) {
	t.Helper()
	p, logs := localtest.Start(t)
	t.Cleanup(func() {
		// No secret may appear in any log line.
		if p.Bootstrap.Secret != "" && strings.Contains(logs.String(), p.Bootstrap.Secret) {
			t.Errorf("the operator secret appears in the logs")
		}
	})
	return p, client{t: t, base: p.URL}
}

func TestFirstSliceEndToEnd(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	if !p.Bootstrap.Created || op == "" {
		t.Fatalf("bootstrap did not create an installation: %+v", p.Bootstrap)
	}

	// The slice of the foundation issue: who am I, with the operator key.
	r := c.do("GET", "/v2/users/self/authorization", op, nil)
	if r.Status != 200 || r.Body["account"] != "/v2/accounts/"+p.Bootstrap.RootAccount {
		t.Fatalf("GET authorization: %d %s", r.Status, r.Raw)
	}
	if strings.Contains(r.Raw, op) || strings.Contains(r.Raw, "secret") {
		t.Fatalf("the authorization response shows a secret: %s", r.Raw)
	}

	// No key, both carriers, a wrong key: 401 in the error body.
	for _, secret := range []string{"", "cads_aaaa_bbbb_cccc", op + "x"} {
		if r := c.do("GET", "/v2/users/self/authorization", secret, nil); r.Status != 401 || r.errorType(t) != "unauthorized" {
			t.Fatalf("secret %q: %d %s", secret, r.Status, r.Raw)
		}
	}
	req, _ := http.NewRequest("GET", c.base+"/v2/users/self/authorization?authorization="+op, nil)
	req.Header.Set("Authorization", "Bearer "+op)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 401 {
		t.Fatalf("both carriers: %v %v", res.StatusCode, err)
	}
	if res, err := http.Get(c.base + "/v2/users/self/authorization?authorization=" + op); err != nil || res.StatusCode != 200 {
		t.Fatalf("query carrier: %v %v", res.StatusCode, err)
	}

	// Unknown route: 404 in the error body, before any authentication.
	if r := c.do("GET", "/v2/nothing-here", op, nil); r.Status != 404 || r.errorType(t) != "not_found" {
		t.Fatalf("unknown route: %d %s", r.Status, r.Raw)
	}
	// A non-canonical spelling of a routed path is refused.
	for _, path := range []string{"/v2/users/self/access-keys/", "/v2/users/%73elf/access-keys", "/v2/users/./access-keys"} {
		if r := c.do("GET", path, op, nil); r.Status < 400 || r.Status >= 500 {
			t.Fatalf("%s: %d %s", path, r.Status, r.Raw)
		}
	}
}

func TestUsersKeysAndDecisions(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	root := "/v2/accounts/" + p.Bootstrap.RootAccount

	// The operator creates a user and a key for it bound to the root account.
	r := c.do("POST", "/v2/users", op, map[string]any{"email": "dev@example.com", "name": "Dev"})
	if r.Status != 200 {
		t.Fatalf("create user: %d %s", r.Status, r.Raw)
	}
	uid := r.Body["id"].(string)
	if r := c.do("POST", "/v2/users", op, map[string]any{"email": "DEV@example.com"}); r.Status != 409 || r.errorType(t) != "conflict" {
		t.Fatalf("duplicate email: %d %s", r.Status, r.Raw)
	}
	if r := c.do("POST", "/v2/users", op, map[string]any{"email": "x@example.com", "account": root}); r.Status != 400 || !strings.Contains(r.Raw, "account") {
		t.Fatalf("unknown field: %d %s", r.Status, r.Raw)
	}
	r = c.do("POST", "/v2/users/"+uid+"/access-keys", op, map[string]any{"type": "bearer", "account": root})
	if r.Status != 200 || r.Body["secret_key"] == nil {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	dev, devKey := r.Body["secret_key"].(string), r.Body["id"].(string)

	// Self-service works without any role; everything else is RBAC.
	if r := c.do("GET", "/v2/users/self", dev, nil); r.Status != 200 || r.Body["id"] != uid {
		t.Fatalf("self: %d %s", r.Status, r.Raw)
	}
	r = c.do("GET", "/v2/users", dev, nil)
	if r.Status != 403 || r.errorType(t) != "forbidden" || !strings.Contains(r.Raw, "GET /v2/users") {
		t.Fatalf("list users without a role: %d %s", r.Status, r.Raw)
	}
	if r := c.do("GET", "/v2/users/self/access-keys", dev, nil); r.Status != 200 {
		t.Fatalf("own keys: %d %s", r.Status, r.Raw)
	}
	if r := c.do("GET", "/v2/users/"+uid+"/access-keys/"+devKey, dev, nil); r.Status != 200 || strings.Contains(r.Raw, dev) {
		t.Fatalf("own key by id: %d %s", r.Status, r.Raw)
	}
	// Switching into an account needs GET /v2/accounts/{id} there.
	if r := c.do("POST", "/v2/users/self/authorization", dev, map[string]any{"account": root}); r.Status != 404 {
		t.Fatalf("switch without access: %d %s", r.Status, r.Raw)
	}
	r = c.do("POST", "/v2/users/self/authorization", op, map[string]any{"account": root})
	if r.Status != 200 || r.Body["durability"] != "session" || r.Body["expiry"] == nil {
		t.Fatalf("operator switch: %d %s", r.Status, r.Raw)
	}
	if r := c.do("GET", "/v2/users", r.Body["secret_key"].(string), nil); r.Status != 200 {
		t.Fatalf("session key: %d %s", r.Status, r.Raw)
	}

	// The policy simulator explains both outcomes.
	r = c.do("GET", "/v2/users/self/authorization?method=POST&path=/v2/users", op, nil)
	d, _ := r.Body["decision"].(map[string]any)
	if r.Status != 200 || d["allowed"] != true || d["role_name"] != "Entitlement administrator" {
		t.Fatalf("simulate allowed: %d %s", r.Status, r.Raw)
	}
	r = c.do("GET", "/v2/users/self/authorization?method=DELETE&path="+root, op, nil)
	if d, _ := r.Body["decision"].(map[string]any); r.Status != 200 || d["allowed"] != false || d["reason"] == "" {
		t.Fatalf("simulate denied: %d %s", r.Status, r.Raw)
	}
	if r := c.do("GET", "/v2/users/self/authorization?method=GET", op, nil); r.Status != 400 {
		t.Fatalf("simulate without path: %d %s", r.Status, r.Raw)
	}

	// Operator lists users: both are visible to it.
	r2 := c.do("GET", "/v2/users?order=email", op, nil)
	var list []map[string]any
	_ = json.Unmarshal([]byte(r2.Raw), &list)
	if r2.Status != 200 || len(list) != 2 || list[0]["email"] != "dev@example.com" {
		t.Fatalf("list users: %d %s", r2.Status, r2.Raw)
	}

	// Revoking a key takes effect on the very next request.
	if r := c.do("DELETE", "/v2/users/"+uid+"/access-keys/"+devKey, op, nil); r.Status != 200 {
		t.Fatalf("revoke: %d %s", r.Status, r.Raw)
	}
	if r := c.do("GET", "/v2/users/self", dev, nil); r.Status != 401 {
		t.Fatalf("revoked key still works: %d %s", r.Status, r.Raw)
	}
}

// testLog shows the platform's log lines with the test's output (-v or on failure).
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
