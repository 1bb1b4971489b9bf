package isolation_test

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

// TestFinding3_AliasBelongsToOneAccount replays the alias half of finding
// 3: application tests may only load the caller's own aliases, but two
// accounts could hold the same alias, so tenant A could create an
// application with tenant B's shop domain, upload a test naming it (its
// own alias) and have the edge, which routes by Host, load B's site.
// Through the local gateway: A cannot claim B's alias by create or patch
// (409 naming the alias, nothing about B), cannot upload a test naming it
// (400), and the edge answers B's alias with B's application only; once B
// deletes its application the alias is free and A can take it.
func TestFinding3_AliasBelongsToOneAccount(t *testing.T) {
	p, _ := localtest.Start(t)
	op := p.Bootstrap.Secret

	call := func(secret, method, path, ctype string, body []byte) (int, map[string]any, string) {
		t.Helper()
		return finding3Call(t, p.URL, secret, method, path, ctype, body)
	}
	doJSON := func(secret, method, path string, v any) (int, map[string]any, string) {
		t.Helper()
		return finding3JSON(t, p.URL, secret, method, path, v)
	}
	must := func(what string, want int, secret, method, path string, v any) map[string]any {
		t.Helper()
		st, m, raw := doJSON(secret, method, path, v)
		if st != want {
			t.Fatalf("%s: %s %s: %d, want %d: %s", what, method, path, st, want, raw)
		}
		return m
	}
	// edge asks the stand-in edge which application answers host.
	edge := func(host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+p.Edge.HTTPAddr+"/", nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode, res.Header.Get(local.EdgeApplicationHeader)
	}

	// Two tenants, each owned by a user with a key into its account (the
	// isolation test's helpers, without the rest of its world).
	w := &isoWorld{t: t, p: p, op: op, users: map[string]*isoUser{}, id: map[string]string{}, href: map[string]string{}}
	tenant := func(name, email string) (id, secret string) {
		id, _ = must("account "+name, 200, op, "POST", "/v2/accounts", map[string]any{"name": name})["id"].(string)
		u := w.newUser(name+" owner", email)
		_, role := w.roleNamed(id, "Account owner")
		w.invite(op, id, role, u)
		w.homeKey(u, id)
		return id, u.secret
	}
	_, keyA := tenant("Tenant A", "owner@a.example.com")
	acctB, keyB := tenant("Tenant B", "owner@b.example.com")

	// B's shop.
	const shopB = "shop.b.example.com"
	appB, _ := must("B's application", 200, keyB, "POST", "/v2/applications", map[string]any{"name": "B shop", "aliases": []string{shopB}})["id"].(string)
	if st, app := edge(shopB); st != 200 || app != appB {
		t.Fatalf("the edge answers B's alias with %d %q, want B's application %s", st, app, appB)
	}

	// A cannot claim it, in any spelling, by create or by patch.
	conflict := func(what string, st int, m map[string]any, raw string) {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		if msg, _ := e["message"].(string); st != 409 || e["type"] != "conflict" || !strings.Contains(msg, `"`+shopB+`"`) {
			t.Fatalf("%s: %d %s, want a 409 conflict naming %s", what, st, raw, shopB)
		}
		if strings.Contains(raw, appB) || strings.Contains(raw, acctB) {
			t.Fatalf("%s: the conflict reveals B: %s", what, raw)
		}
	}
	for _, spelling := range []string{shopB, "SHOP.B.Example.Com"} {
		st, m, raw := doJSON(keyA, "POST", "/v2/applications", map[string]any{"name": "A shop", "aliases": []string{spelling}})
		conflict("create with "+spelling, st, m, raw)
	}
	if st, raw, _ := w.send("GET", "/v2/applications", keyA, nil); st != 200 || strings.TrimSpace(raw) != "[]" {
		t.Fatalf("the refused creates left applications in A: %d %s", st, raw)
	}
	appA, _ := must("A's application", 200, keyA, "POST", "/v2/applications", map[string]any{"name": "A shop", "aliases": []string{"a.example.com"}})["id"].(string)
	st, m, raw := call(keyA, "PATCH", "/v2/applications/"+appA, "application/json-patch+json", []byte(`[{"op":"add","path":"/aliases/-","value":"`+shopB+`"}]`))
	conflict("patch adding B's alias", st, m, raw)

	// So no test of A can name it, and the edge still answers B's alias
	// with B's application.
	st, m, raw = call(keyA, "PUT", "/v2/tests/steal", "application/x-tar", finding3Config(t, "http://"+shopB+"/"))
	if e, _ := m["error"].(map[string]any); st != 400 || !strings.Contains(e["message"].(string), shopB) {
		t.Fatalf("A's test naming B's alias: %d %s", st, raw)
	}
	if st, app := edge(shopB); st != 200 || app != appB {
		t.Fatalf("the edge answers B's alias with %d %q, want %s", st, app, appB)
	}

	// B deletes its application (it is stopped): the alias is free, the
	// edge no longer serves it, and A can take it.
	must("B deletes", 200, keyB, "DELETE", "/v2/applications/"+appB, nil)
	if st, _ := edge(shopB); st != http.StatusMisdirectedRequest {
		t.Fatalf("the edge answers a deleted application's alias: %d", st)
	}
	appA2, _ := must("A takes the freed alias", 200, keyA, "POST", "/v2/applications", map[string]any{"name": "A shop 2", "aliases": []string{shopB}})["id"].(string)
	if st, app := edge(shopB); st != 200 || app != appA2 {
		t.Fatalf("the edge answers the alias with %d %q, want A's application %s", st, app, appA2)
	}
	if st, m, raw := call(keyA, "PUT", "/v2/tests/own", "application/x-tar", finding3Config(t, "http://"+shopB+"/")); st != 200 || m["id"] != "own" {
		t.Fatalf("A's test of its own alias: %d %s", st, raw)
	}
	// And now B cannot have it back.
	st, m, raw = doJSON(keyB, "POST", "/v2/applications", map[string]any{"name": "B shop again", "aliases": []string{shopB}})
	if e, _ := m["error"].(map[string]any); st != 409 || !strings.Contains(e["message"].(string), shopB) || strings.Contains(raw, appA2) {
		t.Fatalf("B re-creating its old alias: %d %s", st, raw)
	}
}

// finding3Call sends body (of type ctype, none if empty) to the gateway at
// base with secret's key; the answer must be JSON.
func finding3Call(t *testing.T, base, secret, method, path, ctype string, body []byte) (int, map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON", method, path, res.StatusCode, raw)
	}
	return res.StatusCode, out, string(raw)
}

// finding3JSON is finding3Call with v as a JSON body (none if nil).
func finding3JSON(t *testing.T, base, secret, method, path string, v any) (int, map[string]any, string) {
	t.Helper()
	if v == nil {
		return finding3Call(t, base, secret, method, path, "", nil)
	}
	b, _ := json.Marshal(v)
	return finding3Call(t, base, secret, method, path, "application/json", b)
}
