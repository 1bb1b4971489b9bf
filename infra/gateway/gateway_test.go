package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// templateResponses are the GatewayResponses of template.yaml.
var templateResponses = map[string]Response{
	"UNAUTHORIZED": {Status: 401, Headers: map[string]string{"Content-Type": "application/json", "WWW-Authenticate": "Bearer"},
		Template: `{"status":401,"error":{"type":"unauthorized","message":"missing or invalid credentials: send exactly one of the Authorization: Bearer header or the authorization query parameter"}}`},
	"ACCESS_DENIED": {Status: 403, Headers: map[string]string{"Content-Type": "application/json"},
		Template: `{"status":403,"error":{"type":"forbidden","message":"$context.authorizer.message"}}`},
	"AUTHORIZER_FAILURE": {Status: 500, Headers: map[string]string{"Content-Type": "application/json"},
		Template: `{"status":500,"error":{"type":"internal","message":"the request could not be authorized; retry later"}}`},
	"MISSING_AUTHENTICATION_TOKEN": {Status: 404, Headers: map[string]string{"Content-Type": "application/json"},
		Template: `{"status":404,"error":{"type":"not_found","message":"no such route: check the method and the path"}}`},
	"REQUEST_TOO_LARGE": {Status: 413, Headers: map[string]string{"Content-Type": "application/json"},
		Template: `{"status":413,"error":{"type":"payload_too_large","message":"request body too large"}}`},
	"DEFAULT_4XX": {Headers: map[string]string{"Content-Type": "application/json"},
		Template: `{"status":400,"error":{"type":"bad_request","message":"$context.error.message"}}`},
	"DEFAULT_5XX": {Headers: map[string]string{"Content-Type": "application/json"},
		Template: `{"status":500,"error":{"type":"internal","message":"internal error"}}`},
}

const (
	testRegion  = "eu-west-1"
	testAccount = "123456789012"
	testAPI     = "abc123"
	testStage   = "api"
	arnPrefix   = "arn:aws:execute-api:" + testRegion + ":" + testAccount + ":" + testAPI + "/" + testStage + "/"
)

// echo returns the event it received as its JSON body.
func echo(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	return events.APIGatewayProxyResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(b)}, nil
}

func policy(principal, effect, resource string, ctxMap map[string]any) events.APIGatewayCustomAuthorizerResponse {
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: principal,
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
			Version:   "2012-10-17",
			Statement: []events.IAMPolicyStatement{{Action: []string{"execute-api:Invoke"}, Effect: effect, Resource: []string{resource}}},
		},
		Context: ctxMap,
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type testAPIServer struct {
	*httptest.Server
	logs *syncBuffer
}

func start(t *testing.T, cfg Config) *testAPIServer {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if cfg.Region == "" {
		cfg.Region, cfg.AccountID, cfg.APIID, cfg.Stage = testRegion, testAccount, testAPI, testStage
	}
	if cfg.Responses == nil {
		cfg.Responses = templateResponses
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return &testAPIServer{Server: srv, logs: logs}
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (s *testAPIServer) do(t *testing.T, method, path string, body []byte, headers ...string) result {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return result{resp.StatusCode, resp.Header, b}
}

func (r result) event(t *testing.T) events.APIGatewayProxyRequest {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(r.body, &ev); err != nil {
		t.Fatalf("body is not an event: %v: %s", err, r.body)
	}
	return ev
}

// apiError checks a gateway-made error: status, JSON content type and the
// API error body; it returns the body.
func (r result) apiError(t *testing.T, status int, typ string) errorBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var b errorBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("body is not the API error body: %v: %s", err, r.body)
	}
	if b.Error.Type != typ {
		t.Errorf("error type %q, want %q (body %s)", b.Error.Type, typ, r.body)
	}
	return b
}

func TestRoutePrecedenceAndParams(t *testing.T) {
	fn := func(name string) ProxyHandler {
		return func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			b, _ := json.Marshal(map[string]any{"fn": name, "resource": req.Resource, "params": req.PathParameters})
			return events.APIGatewayProxyResponse{StatusCode: 200, Body: string(b)}, nil
		}
	}
	s := start(t, Config{
		Routes: []Route{
			{Method: "GET", Path: "/v2/users/{id}", Function: "user"},
			{Method: "PATCH", Path: "/v2/users/{id}", Function: "user"},
			{Method: "GET", Path: "/v2/users/self/authorization", Function: "authz"},
			{Method: "POST", Path: "/v2/users/self/authorization", Function: "authz"},
			{Method: "PATCH", Path: "/v2/users/self", Function: "self"},
			{Method: "GET", Path: "/v2/users/{id}/access-keys/{key_id}", Function: "key"},
			{Method: "ANY", Path: "/files/{proxy+}", Function: "files"},
			{Method: "GET", Path: "/files/readme", Function: "readme"},
			{Method: "GET", Path: "/", Function: "root"},
		},
		Functions: map[string]ProxyHandler{"user": fn("user"), "authz": fn("authz"), "self": fn("self"), "key": fn("key"), "files": fn("files"), "readme": fn("readme"), "root": fn("root")},
	})
	type got struct {
		Fn       string            `json:"fn"`
		Resource string            `json:"resource"`
		Params   map[string]string `json:"params"`
	}
	cases := []struct {
		method, path string
		want         got
	}{
		{"GET", "/v2/users/u1", got{"user", "/v2/users/{id}", map[string]string{"id": "u1"}}},
		// literal beats {param} when it has the method ...
		{"PATCH", "/v2/users/self", got{"self", "/v2/users/self", nil}},
		// ... and falls back to {param} when it does not (measured on AWS)
		{"GET", "/v2/users/self", got{"user", "/v2/users/{id}", map[string]string{"id": "self"}}},
		{"GET", "/v2/users/self/authorization", got{"authz", "/v2/users/self/authorization", nil}},
		{"GET", "/v2/users/self/access-keys/k9", got{"key", "/v2/users/{id}/access-keys/{key_id}", map[string]string{"id": "self", "key_id": "k9"}}},
		{"GET", "/files/readme", got{"readme", "/files/readme", nil}},
		{"DELETE", "/files/readme", got{"files", "/files/{proxy+}", map[string]string{"proxy": "readme"}}},
		{"GET", "/files/a/b/c.txt", got{"files", "/files/{proxy+}", map[string]string{"proxy": "a/b/c.txt"}}},
		{"GET", "/", got{"root", "/", nil}},
	}
	for _, c := range cases {
		r := s.do(t, c.method, c.path, nil)
		if r.status != 200 {
			t.Errorf("%s %s: status %d: %s", c.method, c.path, r.status, r.body)
			continue
		}
		var g got
		if err := json.Unmarshal(r.body, &g); err != nil {
			t.Fatal(err)
		}
		if g.Fn != c.want.Fn || g.Resource != c.want.Resource || !equalMaps(g.Params, c.want.Params) {
			t.Errorf("%s %s: got %+v, want %+v", c.method, c.path, g, c.want)
		}
	}
	// {param} needs one non-empty segment; a trailing slash or an empty
	// segment matches nothing; the match is case-sensitive.
	for _, p := range []string{"/v2/users/", "/v2/users//access-keys/k", "/v2/Users/u1", "/v2/users/u1/", "/files/", "/v2"} {
		s.do(t, "GET", p, nil).apiError(t, 404, "not_found")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func TestNewRefusesWhatAPIGatewayRefuses(t *testing.T) {
	fns := map[string]ProxyHandler{"f": echo}
	cases := map[string]Config{
		"sibling params": {Routes: []Route{
			{Method: "GET", Path: "/accounts/{id}/entitlements", Function: "f"},
			{Method: "GET", Path: "/accounts/{account_id}/entitlements/{id}", Function: "f"},
		}, Functions: fns},
		"param beside greedy": {Routes: []Route{
			{Method: "GET", Path: "/files/{id}", Function: "f"},
			{Method: "GET", Path: "/files/{proxy+}", Function: "f"},
		}, Functions: fns},
		"duplicate": {Routes: []Route{
			{Method: "GET", Path: "/v2/users/{id}", Function: "f"},
			{Method: "get", Path: "/v2/users/{id}", Function: "f"},
		}, Functions: fns},
		"missing handler": {Routes: []Route{{Method: "GET", Path: "/v2/users", Function: "nope"}}, Functions: fns},
		"greedy not last": {Routes: []Route{{Method: "GET", Path: "/a/{proxy+}/b", Function: "f"}}, Functions: fns},
		"bad method":      {Routes: []Route{{Method: "FETCH", Path: "/a", Function: "f"}}, Functions: fns},
		"empty segment":   {Routes: []Route{{Method: "GET", Path: "/a//b", Function: "f"}}, Functions: fns},
		"no authorizer":   {Routes: []Route{{Method: "GET", Path: "/a", Function: "f", Authorized: true}}, Functions: fns},
	}
	for name, cfg := range cases {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted the config", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	// Same name at one level, GET and ANY on one resource: fine.
	_, err := New(Config{Routes: []Route{
		{Method: "GET", Path: "/accounts/{id}/entitlements", Function: "f"},
		{Method: "GET", Path: "/accounts/{id}/entitlements/{entitlement_id}", Function: "f"},
		{Method: "GET", Path: "/x", Function: "f"},
		{Method: "ANY", Path: "/x", Function: "f"},
	}, Functions: fns})
	if err != nil {
		t.Fatalf("New refused a valid config: %v", err)
	}
}

func TestUnknownRouteAndWrongMethod(t *testing.T) {
	cfg := Config{
		Routes:    []Route{{Method: "GET", Path: "/v2/users", Function: "f"}},
		Functions: map[string]ProxyHandler{"f": echo},
	}
	s := start(t, cfg)
	b := s.do(t, "GET", "/v2/nope", nil).apiError(t, 404, "not_found")
	if b.Status != 404 || b.Error.Message != "no such route: check the method and the path" {
		t.Errorf("body %+v", b)
	}
	s.do(t, "DELETE", "/v2/users", nil).apiError(t, 404, "not_found")
	s.do(t, "HEAD", "/v2/users", nil) // no body to check; must not panic

	// Without gateway responses: AWS's 403 with the built-in API body.
	cfg.Responses = map[string]Response{}
	s2 := start(t, cfg)
	b = s2.do(t, "GET", "/v2/nope", nil).apiError(t, 403, "forbidden")
	if b.Status != 403 || b.Error.Message != "Missing Authentication Token" {
		t.Errorf("built-in body %+v", b)
	}
	if !strings.Contains(s.logs.String(), "route=- auth=none") {
		t.Errorf("log line missing route/auth: %s", s.logs.String())
	}
}

func TestAuthorizerOutcomes(t *testing.T) {
	var mode string
	var mu sync.Mutex
	authorizer := func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
		mu.Lock()
		m := mode
		mu.Unlock()
		switch m {
		case "unauthorized":
			return events.APIGatewayCustomAuthorizerResponse{}, errors.New("Unauthorized")
		case "error":
			return events.APIGatewayCustomAuthorizerResponse{}, errors.New("dynamodb: connection refused to secret-table")
		case "panic":
			panic("authorizer exploded")
		case "no-policy":
			return events.APIGatewayCustomAuthorizerResponse{PrincipalID: "u1"}, nil
		case "no-principal":
			return policy("", "Allow", "*", nil), nil
		case "object-context":
			return policy("u1", "Allow", "*", map[string]any{"roles": []string{"a"}}), nil
		case "deny":
			return policy("u1", "Deny", req.MethodArn, map[string]any{"message": "role Reader does not permit DELETE on /v2/users/u2"}), nil
		case "implicit":
			return policy("u1", "Allow", arnPrefix+"GET/v2/other", map[string]any{"message": "no role grants this"}), nil
		}
		return policy("u1", "Allow", req.MethodArn, nil), nil
	}
	s := start(t, Config{
		Routes:     []Route{{Method: "DELETE", Path: "/v2/users/{id}", Function: "f", Authorized: true}},
		Functions:  map[string]ProxyHandler{"f": echo},
		Authorizer: authorizer,
	})
	set := func(m string) { mu.Lock(); mode = m; mu.Unlock() }

	set("unauthorized")
	r := s.do(t, "DELETE", "/v2/users/u2", nil)
	r.apiError(t, 401, "unauthorized")
	if r.header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
	}

	for _, m := range []string{"error", "panic", "no-policy", "no-principal", "object-context"} {
		set(m)
		r := s.do(t, "DELETE", "/v2/users/u2", nil)
		b := r.apiError(t, 500, "internal")
		if b.Error.Message != "the request could not be authorized; retry later" {
			t.Errorf("%s: body %s", m, r.body)
		}
		if bytes.Contains(r.body, []byte("secret-table")) || bytes.Contains(r.body, []byte("exploded")) {
			t.Errorf("%s: error text leaked: %s", m, r.body)
		}
	}
	if !strings.Contains(s.logs.String(), "secret-table") || !strings.Contains(s.logs.String(), "auth=error") {
		t.Errorf("authorizer error not logged: %s", s.logs.String())
	}

	set("deny")
	b := s.do(t, "DELETE", "/v2/users/u2", nil).apiError(t, 403, "forbidden")
	if b.Error.Message != "role Reader does not permit DELETE on /v2/users/u2" {
		t.Errorf("403 message %q", b.Error.Message)
	}
	set("implicit")
	b = s.do(t, "DELETE", "/v2/users/u2", nil).apiError(t, 403, "forbidden")
	if b.Error.Message != "no role grants this" {
		t.Errorf("403 message %q", b.Error.Message)
	}
	if !strings.Contains(s.logs.String(), "auth=deny principal=u1") {
		t.Errorf("deny not logged: %s", s.logs.String())
	}

	set("allow")
	s.do(t, "DELETE", "/v2/users/u2", nil).event(t)
	if !strings.Contains(s.logs.String(), `status=200`) || !strings.Contains(s.logs.String(), `route="DELETE /v2/users/{id}" auth=allow principal=u1`) {
		t.Errorf("allow not logged: %s", s.logs.String())
	}
}

func TestPolicyEvaluation(t *testing.T) {
	arn := arnPrefix + "GET/v2/accounts/a1/roles"
	st := func(effect string, action, resource any) policyStatement {
		var s policyStatement
		b, _ := json.Marshal(map[string]any{"Effect": effect, "Action": action, "Resource": resource})
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := []struct {
		name string
		sts  []policyStatement
		want decision
	}{
		{"exact allow", []policyStatement{st("Allow", "execute-api:Invoke", arn)}, allow},
		{"star allow", []policyStatement{st("Allow", "execute-api:Invoke", "*")}, allow},
		{"wildcard path", []policyStatement{st("Allow", "execute-api:Invoke", arnPrefix+"GET/v2/accounts/*")}, allow},
		{"wildcard method and stage", []policyStatement{st("Allow", []string{"execute-api:Invoke"}, "arn:aws:execute-api:"+testRegion+":"+testAccount+":"+testAPI+"/*/*/v2/*")}, allow},
		{"question mark", []policyStatement{st("Allow", "execute-api:Invoke", arnPrefix+"GET/v2/accounts/a?/roles")}, allow},
		{"action wildcard and case", []policyStatement{st("Allow", "EXECUTE-API:*", arn)}, allow},
		{"other path", []policyStatement{st("Allow", "execute-api:Invoke", arnPrefix+"GET/v2/users/*")}, implicitDeny},
		{"other method", []policyStatement{st("Allow", "execute-api:Invoke", arnPrefix+"POST/v2/accounts/*")}, implicitDeny},
		{"other api", []policyStatement{st("Allow", "execute-api:Invoke", "arn:aws:execute-api:"+testRegion+":"+testAccount+":zzz/*")}, implicitDeny},
		{"other action", []policyStatement{st("Allow", "execute-api:ManageConnections", arn)}, implicitDeny},
		{"no statements", nil, implicitDeny},
		{"deny wins", []policyStatement{st("Allow", "*", "*"), st("Deny", "execute-api:Invoke", arnPrefix+"GET/v2/accounts/*/roles")}, explicitDeny},
		{"deny wins in any order", []policyStatement{st("Deny", "execute-api:Invoke", arn), st("Allow", "execute-api:Invoke", arn)}, explicitDeny},
		{"deny elsewhere", []policyStatement{st("Allow", "*", "*"), st("Deny", "execute-api:Invoke", arnPrefix+"DELETE/*")}, allow},
	}
	for _, c := range cases {
		if got := (policyDocument{Statement: c.sts}).evaluate(arn); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}

	// Through the gateway: Allow everything but Deny one path.
	s := start(t, Config{
		Routes: []Route{
			{Method: "GET", Path: "/v2/accounts/{id}", Function: "f", Authorized: true},
			{Method: "GET", Path: "/v2/accounts/{id}/roles", Function: "f", Authorized: true},
		},
		Functions: map[string]ProxyHandler{"f": echo},
		Authorizer: func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
			return events.APIGatewayCustomAuthorizerResponse{
				PrincipalID: "u1",
				PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{Version: "2012-10-17", Statement: []events.IAMPolicyStatement{
					{Action: []string{"execute-api:Invoke"}, Effect: "Allow", Resource: []string{arnPrefix + "GET/v2/accounts/*"}},
					{Action: []string{"execute-api:Invoke"}, Effect: "Deny", Resource: []string{arnPrefix + "GET/v2/accounts/*/roles"}},
				}},
				Context: map[string]any{"message": "roles are hidden"},
			}, nil
		},
	})
	s.do(t, "GET", "/v2/accounts/a1", nil).event(t)
	if b := s.do(t, "GET", "/v2/accounts/a1/roles", nil).apiError(t, 403, "forbidden"); b.Error.Message != "roles are hidden" {
		t.Errorf("message %q", b.Error.Message)
	}
}

func TestAuthorizerEventAndContextReachFunction(t *testing.T) {
	var seen events.APIGatewayCustomAuthorizerRequestTypeRequest
	var mu sync.Mutex
	s := start(t, Config{
		Routes:    []Route{{Method: "GET", Path: "/v2/users/{id}/access-keys/{key_id}", Function: "f", Authorized: true}},
		Functions: map[string]ProxyHandler{"f": echo},
		Authorizer: func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
			mu.Lock()
			seen = req
			mu.Unlock()
			return policy("user-7", "Allow", req.MethodArn, map[string]any{"account": "a1", "admin": true, "level": 3, "gone": nil}), nil
		},
	})
	ev := s.do(t, "GET", "/v2/users/u%201/access-keys/k1?authorization=s3cret&x=1&x=2", nil, "Authorization", "Bearer abc", "X-Multi", "one", "X-Multi", "two").event(t)

	mu.Lock()
	a := seen
	mu.Unlock()
	if a.Type != "REQUEST" || a.MethodArn != arnPrefix+"GET/v2/users/u%201/access-keys/k1" ||
		a.Resource != "/v2/users/{id}/access-keys/{key_id}" || a.Path != "/v2/users/u%201/access-keys/k1" || a.HTTPMethod != "GET" {
		t.Errorf("authorizer event: %+v", a)
	}
	if a.Headers["Authorization"] != "Bearer abc" || a.QueryStringParameters["authorization"] != "s3cret" ||
		len(a.MultiValueQueryStringParameters["x"]) != 2 || a.PathParameters["id"] != "u 1" || a.PathParameters["key_id"] != "k1" {
		t.Errorf("authorizer event params: %+v", a)
	}
	if a.Headers["X-Multi"] != "two" || strings.Join(a.MultiValueHeaders["X-Multi"], ",") != "one,two" {
		t.Errorf("authorizer headers: %v / %v", a.Headers["X-Multi"], a.MultiValueHeaders["X-Multi"])
	}
	if a.RequestContext.Stage != testStage || a.RequestContext.APIID != testAPI || a.RequestContext.AccountID != testAccount ||
		a.RequestContext.ResourcePath != a.Resource || a.RequestContext.HTTPMethod != "GET" || a.RequestContext.RequestID == "" ||
		a.RequestContext.Identity.SourceIP != "127.0.0.1" {
		t.Errorf("authorizer request context: %+v", a.RequestContext)
	}

	az := ev.RequestContext.Authorizer
	// API Gateway stringifies context values and adds principalId.
	if az["principalId"] != "user-7" || az["account"] != "a1" || az["admin"] != "true" || az["level"] != "3" {
		t.Errorf("function's authorizer context: %#v", az)
	}
	if v, ok := az["gone"]; !ok || v != nil {
		t.Errorf("null context value: %#v", az)
	}
	if ev.RequestContext.RequestID != a.RequestContext.RequestID || ev.RequestContext.ResourcePath != ev.Resource {
		t.Errorf("request context: %+v", ev.RequestContext)
	}
}

func TestQueryStringValues(t *testing.T) {
	s := start(t, Config{
		Routes:    []Route{{Method: "GET", Path: "/q", Function: "f"}},
		Functions: map[string]ProxyHandler{"f": echo},
	})
	ev := s.do(t, "GET", "/q?a=1&a=2&b=x+y&c=%2B1&d&e=&f=a%26b", nil).event(t)
	if got := strings.Join(ev.MultiValueQueryStringParameters["a"], ","); got != "1,2" {
		t.Errorf("multi a %q", got)
	}
	want := map[string]string{"a": "2", "b": "x y", "c": "+1", "d": "", "e": "", "f": "a&b"}
	if !equalMaps(ev.QueryStringParameters, want) {
		t.Errorf("query %v, want %v", ev.QueryStringParameters, want)
	}
	ev = s.do(t, "GET", "/q", nil).event(t)
	if ev.QueryStringParameters != nil || ev.MultiValueQueryStringParameters != nil || ev.PathParameters != nil {
		t.Errorf("empty maps should be null: %+v", ev)
	}
}

func TestEncodedPathAsReceived(t *testing.T) {
	s := start(t, Config{
		Routes:    []Route{{Method: "GET", Path: "/v2/users/{id}/access-keys/{key_id}", Function: "f"}},
		Functions: map[string]ProxyHandler{"f": echo},
	})
	ev := s.do(t, "GET", "/v2/users/a%2Fb%20c/access-keys/k%41+1", nil).event(t)
	if ev.Path != "/v2/users/a%2Fb%20c/access-keys/k%41+1" {
		t.Errorf("path %q, want it as received", ev.Path)
	}
	if ev.PathParameters["id"] != "a/b c" || ev.PathParameters["key_id"] != "kA+1" {
		t.Errorf("path parameters %v", ev.PathParameters)
	}
	if ev.Resource != "/v2/users/{id}/access-keys/{key_id}" || ev.RequestContext.ResourcePath != ev.Resource {
		t.Errorf("resource %q / %q", ev.Resource, ev.RequestContext.ResourcePath)
	}
	if ev.RequestContext.Path != "/"+testStage+ev.Path || ev.RequestContext.Stage != testStage {
		t.Errorf("requestContext.path %q", ev.RequestContext.Path)
	}
	// An encoded literal is not the literal.
	s.do(t, "GET", "/v2/us%65rs/u1/access-keys/k", nil).apiError(t, 404, "not_found")
}

func TestBinaryBodies(t *testing.T) {
	payload := []byte{0x50, 0x4b, 0x03, 0x04, 0xff, 0xfe, 0x00, 0x80, 'z', 'i', 'p'}
	var mu sync.Mutex
	var got events.APIGatewayProxyRequest
	fn := func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		mu.Lock()
		got = req
		mu.Unlock()
		if req.Path == "/archive" {
			return events.APIGatewayProxyResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/zip"},
				Body: base64.StdEncoding.EncodeToString(payload), IsBase64Encoded: true}, nil
		}
		return events.APIGatewayProxyResponse{StatusCode: 201, Body: `{"ok":true}`}, nil
	}
	s := start(t, Config{
		Routes:           []Route{{Method: "PUT", Path: "/archive", Function: "f"}, {Method: "POST", Path: "/json", Function: "f"}},
		Functions:        map[string]ProxyHandler{"f": fn},
		BinaryMediaTypes: []string{"multipart~1form-data", "application/zip", "image/*"},
	})

	r := s.do(t, "PUT", "/archive", payload, "Content-Type", "application/zip", "Accept", "application/zip")
	mu.Lock()
	in := got
	mu.Unlock()
	if !in.IsBase64Encoded {
		t.Fatalf("binary request not base64: %+v", in)
	}
	if dec, _ := base64.StdEncoding.DecodeString(in.Body); !bytes.Equal(dec, payload) {
		t.Errorf("request body %x, want %x", dec, payload)
	}
	if r.status != 200 || !bytes.Equal(r.body, payload) || r.header.Get("Content-Type") != "application/zip" {
		t.Errorf("binary response: %d %q %x", r.status, r.header.Get("Content-Type"), r.body)
	}

	// Wildcard type and parameters in the Content-Type.
	s.do(t, "PUT", "/archive", payload, "Content-Type", "IMAGE/PNG; q=1")
	mu.Lock()
	if !got.IsBase64Encoded {
		t.Errorf("image/* not treated as binary")
	}
	mu.Unlock()

	r = s.do(t, "POST", "/json", []byte(`{"name":"é"}`), "Content-Type", "application/json")
	mu.Lock()
	in = got
	mu.Unlock()
	if in.IsBase64Encoded || in.Body != `{"name":"é"}` {
		t.Errorf("JSON request: base64=%v body %q", in.IsBase64Encoded, in.Body)
	}
	if r.status != 201 || string(r.body) != `{"ok":true}` || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("JSON response: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	// A binary body with a non-binary type is mangled, as on AWS.
	s.do(t, "POST", "/json", payload, "Content-Type", "text/plain")
	mu.Lock()
	if got.IsBase64Encoded || got.Body == string(payload) {
		t.Errorf("text body should be passed as (mangled) text")
	}
	mu.Unlock()
}

func TestRequestTooLarge(t *testing.T) {
	s := start(t, Config{
		Routes:       []Route{{Method: "POST", Path: "/upload", Function: "f"}},
		Functions:    map[string]ProxyHandler{"f": echo},
		MaxBodyBytes: 1024,
	})
	s.do(t, "POST", "/upload", bytes.Repeat([]byte("a"), 1024), "Content-Type", "text/plain").event(t)
	b := s.do(t, "POST", "/upload", bytes.Repeat([]byte("a"), 1025), "Content-Type", "text/plain").apiError(t, 413, "payload_too_large")
	if b.Status != 413 {
		t.Errorf("body %+v", b)
	}
	// Chunked (no Content-Length): detected while reading.
	req, _ := http.NewRequest("POST", s.URL+"/upload", io.MultiReader(strings.NewReader(strings.Repeat("b", 2000))))
	req.ContentLength = -1
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked: status %d", resp.StatusCode)
	}
}

func TestFunctionFailuresAre502WithoutLeak(t *testing.T) {
	s := start(t, Config{
		Routes: []Route{
			{Method: "GET", Path: "/panic", Function: "panic"},
			{Method: "GET", Path: "/error", Function: "error"},
			{Method: "GET", Path: "/malformed", Function: "malformed"},
		},
		Functions: map[string]ProxyHandler{
			"panic": func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				panic("nil map in secret-handler.go:42")
			},
			"error": func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				return events.APIGatewayProxyResponse{}, errors.New("dynamodb table cads-secret not found")
			},
			"malformed": func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				return events.APIGatewayProxyResponse{Body: "no status code"}, nil
			},
		},
	})
	for _, p := range []string{"/panic", "/error", "/malformed"} {
		r := s.do(t, "GET", p, nil)
		r.apiError(t, 502, "internal")
		if bytes.Contains(r.body, []byte("secret")) || bytes.Contains(r.body, []byte("status code")) {
			t.Errorf("%s: leaked: %s", p, r.body)
		}
	}
	// Without gateway responses: the built-in body, still no leak.
	s2 := start(t, Config{
		Routes: []Route{{Method: "GET", Path: "/panic", Function: "p"}},
		Functions: map[string]ProxyHandler{"p": func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			panic("secret")
		}},
		Responses: map[string]Response{},
	})
	r := s2.do(t, "GET", "/panic", nil)
	if b := r.apiError(t, 502, "internal"); b.Status != 502 || strings.Contains(string(r.body), "secret") {
		t.Errorf("built-in 502 body %s", r.body)
	}
	logs := s.logs.String()
	for _, want := range []string{"secret-handler.go:42", "cads-secret", "level=ERROR", "status=502"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q: %s", want, logs)
		}
	}
}

func TestResponseHeadersAndTemplateVariables(t *testing.T) {
	s := start(t, Config{
		Routes: []Route{{Method: "GET", Path: "/h", Function: "f"}},
		Functions: map[string]ProxyHandler{"f": func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			return events.APIGatewayProxyResponse{StatusCode: 204,
				Headers:           map[string]string{"X-One": "1", "X-Both": "single"},
				MultiValueHeaders: map[string][]string{"X-Both": {"m1", "m2"}, "Set-Cookie": {"a=1", "b=2"}},
			}, nil
		}},
		Responses: map[string]Response{
			"MISSING_AUTHENTICATION_TOKEN": {Status: 404, Template: `{"status":404,"error":{"type":"not_found","message":"$context.error.message ($context.requestId) $context.unknown"}}`},
		},
	})
	r := s.do(t, "GET", "/h", nil)
	if r.status != 204 || r.header.Get("X-One") != "1" || strings.Join(r.header.Values("X-Both"), ",") != "m1,m2" || len(r.header.Values("Set-Cookie")) != 2 {
		t.Errorf("headers %v", r.header)
	}
	r = s.do(t, "GET", "/nope", nil)
	b := r.apiError(t, 404, "not_found")
	want := "Missing Authentication Token (" + r.header.Get("x-amzn-RequestId") + ") $context.unknown"
	if b.Error.Message != want || r.header.Get("x-amzn-RequestId") == "" {
		t.Errorf("message %q, want %q", b.Error.Message, want)
	}
}

func TestLambdaPayloadLimitAndRawTemplateSubstitution(t *testing.T) {
	s := start(t, Config{
		Routes:    []Route{{Method: "POST", Path: "/big", Function: "f"}, {Method: "GET", Path: "/quoted", Function: "f", Authorized: true}},
		Functions: map[string]ProxyHandler{"f": echo},
		Authorizer: func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
			return policy("u1", "Deny", "*", map[string]any{"message": `role "Reader" denies this`}), nil
		},
	})
	// Under API Gateway's 10 MiB but over Lambda's 6 MiB event limit: 413,
	// as API Gateway answers Lambda's refusal.
	r := s.do(t, "POST", "/big", bytes.Repeat([]byte("a"), 7<<20), "Content-Type", "text/plain")
	r.apiError(t, 413, "payload_too_large")
	if r.header.Get("x-amzn-ErrorType") != "RequestTooLargeException" {
		t.Errorf("x-amzn-ErrorType %q", r.header.Get("x-amzn-ErrorType"))
	}
	if !strings.Contains(s.logs.String(), "Lambda refuses synchronous payloads") {
		t.Errorf("payload limit not logged: %s", s.logs.String())
	}
	// A binary body travels base64-encoded: 4.6 MiB grows past the limit,
	// the same bytes as text do not.
	s2 := start(t, Config{Routes: []Route{{Method: "POST", Path: "/big", Function: "f"}}, Functions: map[string]ProxyHandler{"f": func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{StatusCode: 200, Body: "{}"}, nil
	}}, BinaryMediaTypes: []string{"application/zip"}})
	body := bytes.Repeat([]byte("a"), 4700<<10)
	s2.do(t, "POST", "/big", body, "Content-Type", "application/zip").apiError(t, 413, "payload_too_large")
	if r := s2.do(t, "POST", "/big", body, "Content-Type", "text/plain"); r.status != 200 {
		t.Errorf("4.6 MiB of text: %d %s", r.status, r.body)
	}
	// Substitution is raw, as on AWS: quotes in the message break the JSON,
	// and the log says so.
	r = s.do(t, "GET", "/quoted", nil)
	if r.status != 403 || json.Valid(r.body) {
		t.Errorf("expected raw substitution: %d %s", r.status, r.body)
	}
	if !strings.Contains(s.logs.String(), "not valid JSON") {
		t.Errorf("invalid JSON not noted in the log: %s", s.logs.String())
	}
	t.Log(s.logs.String())
}

// The gateway-response rules of API Gateway, driven through real requests:
// a customised type keeps its own StatusCode; a type that is not customised
// takes DEFAULT_4XX/DEFAULT_5XX's body and, when the DEFAULT sets one, its
// StatusCode; $context values are inserted verbatim.
func TestGatewayResponseRules(t *testing.T) {
	const (
		def4 = `{"status":400,"error":{"type":"bad_request","message":"$context.error.message"}}`
		def5 = `{"status":500,"error":{"type":"internal","message":"$context.error.message|$context.error.messageString|$context.authorizer.principalId"}}`
	)
	ct := map[string]string{"Content-Type": "application/json"}
	pinned := map[string]Response{ // the template's shape: the DEFAULTs pin their status
		"DEFAULT_4XX":         {Status: 400, Headers: ct, Template: def4},
		"DEFAULT_5XX":         {Status: 500, Headers: ct, Template: def5},
		"UNAUTHORIZED":        {Status: 401, Headers: ct, Template: `{"status":401}`},
		"ACCESS_DENIED":       {Status: 403, Headers: ct, Template: `{"status":403,"error":{"type":"forbidden","message":"$context.authorizer.message"}}`},
		"INTEGRATION_TIMEOUT": {Status: 504, Headers: ct, Template: `{"status":504,"error":{"type":"internal","message":"timed out"}}`},
	}
	unpinned := map[string]Response{ // DEFAULTs without StatusCode: each type keeps its own
		"DEFAULT_4XX": {Headers: ct, Template: def4},
		"DEFAULT_5XX": {Headers: ct, Template: def5},
	}
	only4xx := map[string]Response{"DEFAULT_4XX": {Status: 400, Headers: ct, Template: def4}}

	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cfg := Config{
		Routes: []Route{
			{Method: "GET", Path: "/open", Function: "echo"},
			{Method: "POST", Path: "/open", Function: "echo"},
			{Method: "GET", Path: "/guarded", Function: "echo", Authorized: true},
			{Method: "GET", Path: "/error", Function: "error", Authorized: true},
			{Method: "GET", Path: "/slow", Function: "slow"},
			{Method: "GET", Path: "/overrun", Function: "overrun"},
		},
		Functions: map[string]ProxyHandler{
			"echo": echo,
			"error": func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				return events.APIGatewayProxyResponse{}, errors.New("boom")
			},
			"slow": func(ctx context.Context, _ events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				<-release
				return events.APIGatewayProxyResponse{StatusCode: 200}, nil
			},
			"overrun": func(ctx context.Context, _ events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				<-ctx.Done() // its own Timeout ends it
				return events.APIGatewayProxyResponse{StatusCode: 200}, nil
			},
		},
		Authorizer: func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
			switch req.Headers["X-Mode"] {
			case "unauthorized":
				return events.APIGatewayCustomAuthorizerResponse{}, errors.New("Unauthorized")
			case "fail":
				return events.APIGatewayCustomAuthorizerResponse{}, errors.New("table missing")
			case "deny":
				return policy("u1", "Deny", "*", map[string]any{"message": `role "Reader" may not`}), nil
			}
			return policy("u1", "Allow", "*", nil), nil
		},
		FunctionTimeouts:   map[string]time.Duration{"overrun": 50 * time.Millisecond, "slow": time.Hour},
		IntegrationTimeout: 200 * time.Millisecond,
	}
	cases := []struct {
		name      string
		responses map[string]Response
		method    string
		path      string
		headers   []string
		status    int
		body      string // exact; "" = only check the status
		validJSON bool
	}{
		{"no route, DEFAULT_4XX pins 400", pinned, "GET", "/nope", nil, 400,
			`{"status":400,"error":{"type":"bad_request","message":"Missing Authentication Token"}}`, true},
		{"no route, DEFAULT_4XX without status: the type's 403", unpinned, "GET", "/nope", nil, 403,
			`{"status":400,"error":{"type":"bad_request","message":"Missing Authentication Token"}}`, true},
		{"too large, DEFAULT_4XX pins 400", pinned, "POST", "/open", []string{"Content-Type", "text/plain", "X-Big", "1"}, 400,
			`{"status":400,"error":{"type":"bad_request","message":"Request Too Long"}}`, true},
		{"customised UNAUTHORIZED keeps 401", pinned, "GET", "/guarded", []string{"X-Mode", "unauthorized"}, 401, `{"status":401}`, true},
		{"UNAUTHORIZED not customised: DEFAULT_4XX's 400", only4xx, "GET", "/guarded", []string{"X-Mode", "unauthorized"}, 400,
			`{"status":400,"error":{"type":"bad_request","message":"Unauthorized"}}`, true},
		{"ACCESS_DENIED: authorizer context verbatim, quotes break the JSON", pinned, "GET", "/guarded", []string{"X-Mode", "deny"}, 403,
			`{"status":403,"error":{"type":"forbidden","message":"role "Reader" may not"}}`, false},
		{"ACCESS_DENIED not customised: DEFAULT_4XX, AWS's message", only4xx, "GET", "/guarded", []string{"X-Mode", "deny"}, 400,
			`{"status":400,"error":{"type":"bad_request","message":"User is not authorized to access this resource with an explicit deny"}}`, true},
		{"authorizer failure: DEFAULT_5XX's 500, message null", pinned, "GET", "/guarded", []string{"X-Mode", "fail"}, 500,
			`{"status":500,"error":{"type":"internal","message":"|null|"}}`, true},
		{"function error: DEFAULT_5XX pins 500, authorizer context present", pinned, "GET", "/error", nil, 500,
			`{"status":500,"error":{"type":"internal","message":"Internal server error|"Internal server error"|u1"}}`, false},
		{"function error, DEFAULT_5XX without status: 502", unpinned, "GET", "/error", nil, 502, "", false},
		{"function past its Timeout: a function error", pinned, "GET", "/overrun", nil, 500,
			`{"status":500,"error":{"type":"internal","message":"Internal server error|"Internal server error"|"}}`, false},
		{"past the integration timeout: customised INTEGRATION_TIMEOUT", pinned, "GET", "/slow", nil, 504,
			`{"status":504,"error":{"type":"internal","message":"timed out"}}`, true},
		{"INTEGRATION_TIMEOUT not customised, DEFAULT_5XX without status: its 504", unpinned, "GET", "/slow", nil, 504, "", false},
		{"INTEGRATION_TIMEOUT not customised, DEFAULT_5XX pins 500", map[string]Response{"DEFAULT_5XX": pinned["DEFAULT_5XX"]}, "GET", "/slow", nil, 500,
			`{"status":500,"error":{"type":"internal","message":"Endpoint request timed out|"Endpoint request timed out"|"}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc := cfg
			cc.Responses = c.responses
			cc.MaxBodyBytes = 64
			s := start(t, cc)
			var body []byte
			headers := c.headers
			if len(headers) >= 4 && headers[2] == "X-Big" {
				body, headers = bytes.Repeat([]byte("a"), 65), headers[:2]
			}
			r := s.do(t, c.method, c.path, body, headers...)
			if r.status != c.status {
				t.Errorf("status %d, want %d (body %s)", r.status, c.status, r.body)
			}
			if c.body != "" && string(r.body) != c.body {
				t.Errorf("body\n %s\nwant\n %s", r.body, c.body)
			}
			if c.body != "" && json.Valid(r.body) != c.validJSON {
				t.Errorf("valid JSON %v, want %v", !c.validJSON, c.validJSON)
			}
		})
	}
}

// Past the integration timeout the gateway answers 504 while the function
// runs on; the function's context carries its Lambda Timeout as deadline.
func TestIntegrationTimeoutAndDeadline(t *testing.T) {
	release := make(chan struct{})
	deadlines := make(chan time.Duration, 2)
	fn := func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		if dl, ok := ctx.Deadline(); ok {
			deadlines <- time.Until(dl)
		} else {
			deadlines <- -1
		}
		if req.Path == "/slow" {
			<-release
		}
		return events.APIGatewayProxyResponse{StatusCode: 200, Body: "{}"}, nil
	}
	s := start(t, Config{
		Routes:             []Route{{Method: "GET", Path: "/slow", Function: "f"}, {Method: "GET", Path: "/fast", Function: "f"}, {Method: "GET", Path: "/free", Function: "g"}},
		Functions:          map[string]ProxyHandler{"f": fn, "g": fn},
		FunctionTimeouts:   map[string]time.Duration{"f": 10 * time.Second},
		IntegrationTimeout: 100 * time.Millisecond,
		Responses:          map[string]Response{"INTEGRATION_TIMEOUT": {Status: 504, Template: `{"status":504,"error":{"type":"internal","message":"the service did not answer in time"}}`}},
	})
	if r := s.do(t, "GET", "/fast", nil); r.status != 200 {
		t.Fatalf("fast: %d", r.status)
	}
	if d := <-deadlines; d <= 9*time.Second || d > 10*time.Second {
		t.Errorf("deadline in %v, want the 10 s Timeout", d)
	}
	s.do(t, "GET", "/free", nil)
	if d := <-deadlines; d != -1 {
		t.Errorf("no Timeout configured, but a deadline in %v", d)
	}

	began := time.Now()
	b := s.do(t, "GET", "/slow", nil).apiError(t, 504, "internal")
	if b.Error.Message != "the service did not answer in time" || time.Since(began) > 5*time.Second {
		t.Errorf("504 body %+v after %v", b, time.Since(began))
	}
	<-deadlines
	if logs := s.logs.String(); !strings.Contains(logs, "integration timeout: function f did not answer within 100ms") || !strings.Contains(logs, "status=504") {
		t.Errorf("504 not logged: %s", logs)
	}
	close(release) // the function ends after the gateway answered: logged
	waitLog(t, s.logs, "function finished after the gateway answered")
}

func waitLog(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q: %s", want, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A base64 body becomes bytes only when the request's first Accept type is
// a binary media type; otherwise the client gets the base64 text, whatever
// the response's Content-Type.
func TestBase64ResponsesFollowAccept(t *testing.T) {
	payload := []byte{0x1f, 0x8b, 0x00, 0xff, 'g', 'z'}
	encoded := base64.StdEncoding.EncodeToString(payload)
	s := start(t, Config{
		Routes: []Route{{Method: "GET", Path: "/file", Function: "f"}, {Method: "GET", Path: "/broken", Function: "f"}},
		Functions: map[string]ProxyHandler{"f": func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			body := encoded
			if req.Path == "/broken" {
				body = "not base64!"
			}
			return events.APIGatewayProxyResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/gzip"}, Body: body, IsBase64Encoded: true}, nil
		}},
		BinaryMediaTypes: []string{"application/gzip", "image/*"},
	})
	cases := []struct {
		accept string
		binary bool
	}{
		{"application/gzip", true},
		{"image/png", true},                         // wildcard binary type
		{"application/gzip;q=0.9, text/html", true}, // parameters ignored
		{"text/html, application/gzip", false},      // only the first type counts
		{"*/*", false},                              // matches no listed type
		{"", false},                                 // no Accept: text, though the Content-Type is binary
	}
	for _, c := range cases {
		var h []string
		if c.accept != "" {
			h = []string{"Accept", c.accept}
		}
		r := s.do(t, "GET", "/file", nil, h...)
		want := []byte(encoded)
		if c.binary {
			want = payload
		}
		if r.status != 200 || !bytes.Equal(r.body, want) {
			t.Errorf("Accept %q: %d %q, want %q", c.accept, r.status, r.body, want)
		}
	}
	// Bad base64 is only an error where it is decoded (API_CONFIGURATION_ERROR).
	if r := s.do(t, "GET", "/broken", nil, "Accept", "text/html"); r.status != 200 || string(r.body) != "not base64!" {
		t.Errorf("text passthrough: %d %s", r.status, r.body)
	}
	s.do(t, "GET", "/broken", nil, "Accept", "application/gzip").apiError(t, 500, "internal")
}
