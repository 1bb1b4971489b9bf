package local_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cads/infra/apispec"
	"cads/infra/local"
	"cads/infra/local/localtest"
	"cads/infra/sam"
	"cads/infra/testenv"
)

const (
	appOrigin  = "https://app.example.com"
	evilOrigin = "https://evil.example.net"
)

// startCORS starts the platform as deployed with CorsAllowOrigin=origin.
func startCORS(t *testing.T, origin string) *local.Platform {
	t.Helper()
	tpl, err := sam.LoadWith(filepath.Join(testenv.Root(t), "template.yaml"), map[string]string{"CorsAllowOrigin": origin})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := localtest.Start(t, func(o *local.Options) { o.Parsed = tpl })
	return p
}

// corsCall sends one request with an Origin and returns status, headers
// and body.
func corsCall(t *testing.T, base, method, path, origin, secret string, header map[string]string, body any) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(raw)
}

func listHas(list, want string) bool {
	for f := range strings.SplitSeq(list, ",") {
		if strings.EqualFold(strings.TrimSpace(f), want) {
			return true
		}
	}
	return false
}

// TestCORSThroughTheGateway: with an allowed origin configured, every
// path's preflight is answered by the gateway without a credential (no
// authorizer runs), naming the path's methods and the headers clients
// send; gateway errors and the functions' responses, errors included,
// carry the origin; another origin is never named.
func TestCORSThroughTheGateway(t *testing.T) {
	p := startCORS(t, appOrigin)
	op := p.Bootstrap.Secret
	preflight := map[string]string{"Access-Control-Request-Method": "PATCH", "Access-Control-Request-Headers": "authorization,content-type,if-match"}

	methods := map[string][]string{}
	for _, e := range apispec.Endpoints {
		methods[e.Path] = append(methods[e.Path], e.Method)
	}
	for path, ms := range methods {
		st, h, body := corsCall(t, p.URL, "OPTIONS", concretePath(path), appOrigin, "", preflight, nil)
		if st != http.StatusOK {
			t.Errorf("preflight %s: %d %s, want 200 without a credential", path, st, body)
			continue
		}
		if got := h.Get("Access-Control-Allow-Origin"); got != appOrigin {
			t.Errorf("preflight %s: Access-Control-Allow-Origin %q, want %q", path, got, appOrigin)
		}
		for _, m := range append(ms, "OPTIONS") {
			if !listHas(h.Get("Access-Control-Allow-Methods"), m) {
				t.Errorf("preflight %s: Access-Control-Allow-Methods %q lacks %s", path, h.Get("Access-Control-Allow-Methods"), m)
			}
		}
		for _, hd := range []string{"Authorization", "Content-Type", "If-Match", "If-None-Match"} {
			if !listHas(h.Get("Access-Control-Allow-Headers"), hd) {
				t.Errorf("preflight %s: Access-Control-Allow-Headers %q lacks %s", path, h.Get("Access-Control-Allow-Headers"), hd)
			}
		}
		if h.Get("Access-Control-Max-Age") == "" {
			t.Errorf("preflight %s: no Access-Control-Max-Age", path)
		}
	}
	if len(methods) < 40 {
		t.Fatalf("only %d paths", len(methods))
	}

	// Another origin's preflight: API Gateway's mock integration answers
	// with fixed headers, so it names the allowed origin, never the
	// caller's: the browser refuses.
	if st, h, _ := corsCall(t, p.URL, "OPTIONS", "/v2/users", evilOrigin, "", preflight, nil); st != http.StatusOK || h.Get("Access-Control-Allow-Origin") == evilOrigin {
		t.Errorf("preflight from %s: %d, Access-Control-Allow-Origin %q", evilOrigin, st, h.Get("Access-Control-Allow-Origin"))
	}

	// A user with a key and no role, for the authorizer's 403.
	st, _, body := corsCall(t, p.URL, "POST", "/v2/users", "", op, nil, map[string]any{"email": "nobody@example.com"})
	var u map[string]any
	_ = json.Unmarshal([]byte(body), &u)
	if st != 200 {
		t.Fatal(body)
	}
	st, _, body = corsCall(t, p.URL, "POST", "/v2/users/"+u["id"].(string)+"/access-keys", "", op, nil, map[string]any{"type": "bearer", "account": "/v2/accounts/" + p.Bootstrap.RootAccount})
	var k map[string]any
	_ = json.Unmarshal([]byte(body), &k)
	if st != 200 {
		t.Fatal(body)
	}
	nobody := k["secret_key"].(string)

	for _, c := range []struct {
		name, method, path, secret string
		status                     int
	}{
		{"gateway 401 (no credential)", "GET", "/v2/users", "", 401},
		{"gateway 403 (the authorizer denies)", "GET", "/v2/users", nobody, 403},
		{"gateway 404 (no such route)", "GET", "/v2/no-such-route", op, 404},
		{"function 200", "GET", "/v2/users/self/authorization", op, 200},
		{"function 404", "GET", "/v2/users/zz9", op, 404},
		{"function 400", "GET", "/v2/users?limit=x", op, 400},
	} {
		st, h, body := corsCall(t, p.URL, c.method, c.path, appOrigin, c.secret, nil, nil)
		if st != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, st, body, c.status)
		}
		if got := h.Get("Access-Control-Allow-Origin"); got != appOrigin {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", c.name, got, appOrigin)
		}
		if c.status == 200 && !listHas(h.Get("Access-Control-Expose-Headers"), "ETag") {
			t.Errorf("%s: Access-Control-Expose-Headers %q", c.name, h.Get("Access-Control-Expose-Headers"))
		}
		// The same request from another origin is never told it may read.
		if _, h, _ := corsCall(t, p.URL, c.method, c.path, evilOrigin, c.secret, nil, nil); h.Get("Access-Control-Allow-Origin") == evilOrigin || h.Get("Access-Control-Allow-Origin") == "*" {
			t.Errorf("%s from %s: Access-Control-Allow-Origin %q", c.name, evilOrigin, h.Get("Access-Control-Allow-Origin"))
		}
	}
	// A function's answer names the origin only to that origin, and says
	// it varies with it.
	_, h, _ := corsCall(t, p.URL, "GET", "/v2/users/self/authorization", evilOrigin, op, nil, nil)
	if h.Get("Access-Control-Allow-Origin") != "" || !slices.ContainsFunc(h.Values("Vary"), func(v string) bool { return listHas(v, "Origin") }) {
		t.Errorf("function 200 from %s: Access-Control-Allow-Origin %q, Vary %q", evilOrigin, h.Get("Access-Control-Allow-Origin"), h.Values("Vary"))
	}
}

// TestCORSNoneByDefault: the template's default allows no origin: the
// preflight is still the gateway's (no authorizer, 200) but names none,
// and no response does.
func TestCORSNoneByDefault(t *testing.T) {
	p, _ := localtest.Start(t)
	op := p.Bootstrap.Secret
	st, h, body := corsCall(t, p.URL, "OPTIONS", "/v2/users", appOrigin, "", map[string]string{"Access-Control-Request-Method": "GET"}, nil)
	if st != http.StatusOK || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight: %d %s, Access-Control-Allow-Origin %q; want 200 naming no origin", st, body, h.Get("Access-Control-Allow-Origin"))
	}
	for _, c := range []struct{ path, secret string }{{"/v2/users", ""}, {"/v2/users/self/authorization", op}, {"/v2/no-such-route", op}} {
		if _, h, _ := corsCall(t, p.URL, "GET", c.path, appOrigin, c.secret, nil, nil); h.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("GET %s: Access-Control-Allow-Origin %q, want none", c.path, h.Get("Access-Control-Allow-Origin"))
		}
	}
}

// TestCORSAnyOrigin: make run's default, CorsAllowOrigin=*: every origin
// may call, preflight and responses alike.
func TestCORSAnyOrigin(t *testing.T) {
	p := startCORS(t, "*")
	if _, h, _ := corsCall(t, p.URL, "OPTIONS", "/v2/accounts/zz9", evilOrigin, "", map[string]string{"Access-Control-Request-Method": "DELETE"}, nil); h.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight: Access-Control-Allow-Origin %q, want *", h.Get("Access-Control-Allow-Origin"))
	}
	for _, c := range []struct{ path, secret string }{{"/v2/users", ""}, {"/v2/users/self/authorization", p.Bootstrap.Secret}} {
		if _, h, _ := corsCall(t, p.URL, "GET", c.path, evilOrigin, c.secret, nil, nil); h.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET %s: Access-Control-Allow-Origin %q, want *", c.path, h.Get("Access-Control-Allow-Origin"))
		}
	}
}
