package local_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"cads/infra/apispec"
)

// bypassCase is one attempt to reach something a principal must not reach,
// or to reach something through a spelling that is not canonical.
type bypassCase struct {
	name   string
	method string
	path   string // sent byte for byte (no client-side cleaning)
	header map[string]string
	body   string
	// want is the exact status, or 0 for "any 4xx".
	want int
}

// send writes the request line exactly as given: the client must not clean
// dot segments or re-encode, or the corpus would test the client instead.
func send(t *testing.T, base, secret string, c bypassCase) (int, string) {
	t.Helper()
	req, err := http.NewRequest(c.method, base, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = c.path
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// spellings returns non-canonical spellings of a canonical path: each must
// be refused, whoever asks, whatever the canonical path would get.
func spellings(path string) map[string]string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	last := segs[len(segs)-1]
	parent := "/" + strings.Join(segs[:len(segs)-1], "/")
	return map[string]string{
		"trailing slash":      path + "/",
		"doubled slash":       parent + "//" + last,
		"leading double":      "/" + path,
		"dot segment":         parent + "/./" + last,
		"dot-dot segment":     parent + "/x/../" + last,
		"encoded slash":       parent + "%2F" + last,
		"encoded dot-dot":     parent + "/%2e%2e/" + last,
		"encoded letter":      parent + "/" + "%" + fmt.Sprintf("%02x", last[0]) + last[1:],
		"upper-case prefix":   "/V2" + strings.TrimPrefix(path, "/v2"),
		"upper-case resource": "/v2/" + strings.ToUpper(segs[1][:1]) + strings.TrimPrefix(path, "/v2/"+segs[1][:1]),
		"unicode look-alike":  lookAlike(path),
		"backslash":           parent + "\\" + last,
		"semicolon param":     path + ";x=1",
		"null byte":           path + "%00",
	}
}

// lookAlike swaps one Latin letter for its Cyrillic twin.
func lookAlike(path string) string {
	for _, r := range []struct{ latin, cyrillic string }{{"e", "\u0435"}, {"a", "\u0430"}, {"s", "\u0455"}, {"o", "\u043e"}} {
		if strings.Contains(path, r.latin) {
			return strings.Replace(path, r.latin, r.cyrillic, 1)
		}
	}
	return path + "\u0435"
}

// fill puts real ids into an inventory path.
func fill(path string, ids map[string]string) string {
	for k, v := range ids {
		path = strings.ReplaceAll(path, "{"+k+"}", v)
	}
	return path
}

func TestBypassCorpus(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	root := p.Bootstrap.RootAccount

	// A second user with a key in the root account and no role at all.
	r := c.do("POST", "/v2/users", op, map[string]any{"email": "nobody@example.com"})
	if r.Status != 200 {
		t.Fatal(r.Raw)
	}
	uid := r.Body["id"].(string)
	r = c.do("POST", "/v2/users/"+uid+"/access-keys", op, map[string]any{"type": "bearer", "account": "/v2/accounts/" + root})
	if r.Status != 200 {
		t.Fatal(r.Raw)
	}
	nobody, nobodyKey := r.Body["secret_key"].(string), r.Body["id"].(string)
	// Keys that must never authenticate.
	r = c.do("POST", "/v2/users/"+uid+"/access-keys", op, map[string]any{"type": "bearer"})
	revoked, revokedID := r.Body["secret_key"].(string), r.Body["id"].(string)
	if r := c.do("DELETE", "/v2/users/"+uid+"/access-keys/"+revokedID, op, nil); r.Status != 200 {
		t.Fatal(r.Raw)
	}
	opKeys := c.do("GET", "/v2/users/self/access-keys", op, nil)
	_ = opKeys

	ids := map[string]string{"id": p.Bootstrap.Operator, "key_id": p.Bootstrap.KeyID}
	var cases []struct {
		who    string
		secret string
		c      bypassCase
	}
	add := func(who, secret string, c bypassCase) {
		cases = append(cases, struct {
			who    string
			secret string
			c      bypassCase
		}{who, secret, c})
	}

	for _, e := range apispec.Endpoints {
		path := fill(e.Path, ids)
		// 1. Non-canonical spellings: refused for everyone.
		for name, sp := range spellings(path) {
			add("operator", op, bypassCase{name: name + " " + e.Method + " " + e.Path, method: e.Method, path: sp})
			add("nobody", nobody, bypassCase{name: name + " " + e.Method + " " + e.Path, method: e.Method, path: sp})
		}
		// 2. Method spellings: API Gateway methods are case-sensitive.
		add("operator", op, bypassCase{name: "lower-case method " + e.Method + " " + e.Path, method: strings.ToLower(e.Method), path: path})
		// 3. Credentials that must not authenticate, on every route.
		for name, secret := range map[string]string{"revoked key": revoked, "malformed key": "cads_x", "operator key with a byte changed": op[:len(op)-1] + flip(op[len(op)-1])} {
			add(name, secret, bypassCase{name: name + " " + e.Method + " " + e.Path, method: e.Method, path: path, want: 401})
		}
		add("both carriers", op, bypassCase{name: "both carriers " + e.Method + " " + e.Path, method: e.Method, path: path + "?authorization=" + op, want: 401})
		add("no key", "", bypassCase{name: "no key " + e.Method + " " + e.Path, method: e.Method, path: path, want: 401})
	}

	// 4. Another principal's resources in every path parameter: a user with
	// no role reaches only its own identity.
	for _, x := range []bypassCase{
		{name: "other user's keys", method: "GET", path: "/v2/users/" + p.Bootstrap.Operator + "/access-keys", want: 403},
		{name: "other user's key", method: "GET", path: "/v2/users/" + p.Bootstrap.Operator + "/access-keys/" + p.Bootstrap.KeyID, want: 403},
		{name: "delete other user's key", method: "DELETE", path: "/v2/users/" + p.Bootstrap.Operator + "/access-keys/" + p.Bootstrap.KeyID, want: 403},
		{name: "mint a key for another user", method: "POST", path: "/v2/users/" + p.Bootstrap.Operator + "/access-keys", body: `{"type":"bearer"}`, want: 403},
		{name: "read another user", method: "GET", path: "/v2/users/" + p.Bootstrap.Operator, want: 403},
		{name: "rename another user", method: "PATCH", path: "/v2/users/" + p.Bootstrap.Operator, body: `{"name":"x"}`, want: 403},
		{name: "rename self (not self-service)", method: "PATCH", path: "/v2/users/self", body: `{"name":"x"}`, want: 403},
		{name: "list users", method: "GET", path: "/v2/users", want: 403},
		{name: "create a user", method: "POST", path: "/v2/users", body: `{"email":"z@example.com"}`, want: 403},
		{name: "switch into an account without access", method: "POST", path: "/v2/users/self/authorization", body: `{"account":"/v2/accounts/` + root + `"}`, want: 404},
		{name: "own key under the other user's id", method: "GET", path: "/v2/users/" + p.Bootstrap.Operator + "/access-keys/" + nobodyKey, want: 403},
		{name: "method override header", method: "GET", path: "/v2/users/self/access-keys/" + nobodyKey, header: map[string]string{"X-HTTP-Method-Override": "DELETE"}, want: 200},
	} {
		add("nobody", nobody, x)
	}
	// 5. Body fields that try to set what the server owns.
	for _, x := range []bypassCase{
		{name: "user with id", method: "POST", path: "/v2/users", body: `{"email":"a1@example.com","id":"chosen"}`, want: 400},
		{name: "user with href", method: "POST", path: "/v2/users", body: `{"email":"a2@example.com","href":"/v2/users/chosen"}`, want: 400},
		{name: "user with account", method: "POST", path: "/v2/users", body: `{"email":"a3@example.com","account":"/v2/accounts/x"}`, want: 400},
		{name: "user with kind", method: "POST", path: "/v2/users", body: `{"email":"a4@example.com","kind":"service_user"}`, want: 400},
		{name: "key with durability", method: "POST", path: "/v2/users/self/access-keys", body: `{"type":"bearer","durability":"session"}`, want: 400},
		{name: "key with its own secret", method: "POST", path: "/v2/users/self/access-keys", body: `{"type":"bearer","secret_key":"cads_a_b_c"}`, want: 400},
		{name: "key for another principal by body", method: "POST", path: "/v2/users/self/access-keys", body: `{"type":"bearer","principal":"/v2/users/x"}`, want: 400},
		{name: "key with state", method: "POST", path: "/v2/users/self/access-keys", body: `{"type":"bearer","state":"active"}`, want: 400},
		{name: "switch with parent", method: "POST", path: "/v2/users/self/authorization", body: `{"account":"/v2/accounts/` + root + `","parent":"x"}`, want: 400},
		{name: "patch user control", method: "PATCH", path: "/v2/users/self", body: `{"control":true}`, want: 400},
		{name: "overlong id", method: "GET", path: "/v2/users/" + strings.Repeat("a", 2000), want: 0},
	} {
		add("operator", op, x)
	}

	if len(cases) < 200 {
		t.Fatalf("corpus has %d cases; keep it at 200 or more", len(cases))
	}
	for _, k := range cases {
		status, body := send(t, p.URL, k.secret, k.c)
		ok := status >= 400 && status < 500
		if k.c.want != 0 {
			ok = status == k.c.want
		}
		if !ok {
			t.Errorf("[%s] %s: %s %q -> %d, want %v: %s", k.who, k.c.name, k.c.method, k.c.path, status, wantText(k.c.want), body)
		}
		if status >= 500 {
			t.Errorf("[%s] %s: 5xx: %s", k.who, k.c.name, body)
		}
	}
	// The override header did not turn the GET into a DELETE.
	if r := c.do("GET", "/v2/users/self/access-keys/"+nobodyKey, nobody, nil); r.Status != 200 {
		t.Fatalf("key gone after a GET with X-HTTP-Method-Override: DELETE: %s", r.Raw)
	}
	t.Logf("bypass corpus: %d cases", len(cases))
}

func flip(b byte) string {
	if b == 'a' {
		return "b"
	}
	return "a"
}

func wantText(w int) string {
	if w == 0 {
		return "a 4xx"
	}
	return fmt.Sprint(w)
}
