// Package fuzzkit drives a function's real handler with fuzzed API Gateway
// events: an in-process DynamoDB table, a fresh bootstrap, and the
// operator as principal (the authorizer has already allowed the route, as
// in production). Every answer must be a non-5xx response; a panic or a
// handler error fails the input.
package fuzzkit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/localaws"
	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/bootstrap"
	"cads/shared/caller"
	"cads/shared/wire"
)

// Route is one route of a function, as API Gateway resolves it.
type Route struct {
	Method      string
	Resource    string            // e.g. /v2/applications/{id}
	Params      map[string]string // path parameter values; {{name}} is replaced from Env.Vars
	ContentType string            // "" sends none
}

// Env is one function's handler over its own table.
type Env struct {
	Deps      wire.Deps
	Boot      bootstrap.Result
	Principal caller.Principal
	// Vars fill {{name}} in bodies and queries, so that seeds can name the
	// fixtures a target creates ({{root}} and {{operator}} are preset).
	Vars    map[string]string
	handler apigw.ProxyHandler
}

// With is the same table, bootstrap and variables behind another handler.
func (e *Env) With(build func(wire.Deps) apigw.ProxyHandler) *Env {
	c := *e
	c.handler = build(e.Deps)
	return &c
}

func (e *Env) fill(s string) string {
	for k, v := range e.Vars {
		s = strings.ReplaceAll(s, "{{"+k+"}}", v)
	}
	return s
}

// New starts a table, bootstraps it and builds the handler. Logs are
// discarded: fuzzing sends thousands of requests.
func New(t testing.TB, build func(wire.Deps) apigw.ProxyHandler) *Env {
	return newEnv(t, build, false)
}

// NewWithQueues is New plus a local SQS server holding the template's
// queues, for functions that refuse to work without theirs.
func NewWithQueues(t testing.TB, build func(wire.Deps) apigw.ProxyHandler) *Env {
	return newEnv(t, build, true)
}

func newEnv(t testing.TB, build func(wire.Deps) apigw.ProxyHandler, queues bool) *Env {
	t.Helper()
	d := testenv.NewDynamo(t)
	deps := wire.New(slog.New(slog.NewTextHandler(io.Discard, nil)), d.Client, d.Table)
	if queues {
		ctx := context.Background()
		endpoint, stop, err := localaws.StartSQS(ctx, "127.0.0.1:0")
		if err != nil {
			t.Fatalf("start SQS server: %v", err)
		}
		t.Cleanup(func() { _ = stop(context.Background()) })
		if deps.SQS, err = localaws.SQSClient(ctx, endpoint); err != nil {
			t.Fatalf("SQS client: %v", err)
		}
		qs, err := localaws.EnsureQueues(ctx, deps.SQS, testenv.Template(t).Queues, nil)
		if err != nil {
			t.Fatalf("create queues: %v", err)
		}
		deps.QueueURLs = map[string]string{}
		for id, q := range qs {
			deps.QueueURLs[id] = q.URL
		}
	}
	res, err := bootstrap.Run(context.Background(), deps.Store, "operator@example.com")
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return &Env{
		Deps:      deps,
		Boot:      res,
		Principal: caller.Principal{ID: res.Operator, Kind: "user", Email: "operator@example.com", AccountID: res.RootAccount, KeyID: res.KeyID},
		Vars:      map[string]string{"root": res.RootAccount, "operator": res.Operator},
		handler:   build(deps),
	}
}

// Do sends one request and fails t on a handler error or a 5xx.
func (e *Env) Do(t testing.TB, r Route, query string, body []byte) events.APIGatewayProxyResponse {
	t.Helper()
	params := map[string]string{}
	path := r.Resource
	for k, v := range r.Params {
		v = e.fill(v)
		params[k] = v
		path = strings.ReplaceAll(path, "{"+k+"}", v)
	}
	headers := map[string]string{"Host": "127.0.0.1:3000"}
	if r.ContentType != "" {
		headers["Content-Type"] = r.ContentType
	}
	multi := map[string][]string{}
	for k, v := range headers {
		multi[k] = []string{v}
	}
	ev := events.APIGatewayProxyRequest{
		Resource: r.Resource, Path: path, HTTPMethod: r.Method,
		Headers: headers, MultiValueHeaders: multi, PathParameters: params,
		RequestContext: events.APIGatewayProxyRequestContext{
			ResourcePath: r.Resource, HTTPMethod: r.Method, Path: "/api" + path, Stage: "api",
			RequestID: "fuzz", APIID: "local", Identity: events.APIGatewayRequestIdentity{SourceIP: "127.0.0.1"},
			Authorizer: e.Principal.Context(),
		},
	}
	query = e.fill(query)
	if body != nil && utf8.Valid(body) {
		body = []byte(e.fill(string(body)))
	}
	if q, err := url.ParseQuery(query); err == nil && len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		ev.MultiValueQueryStringParameters = map[string][]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = vs[len(vs)-1]
			ev.MultiValueQueryStringParameters[k] = vs
		}
	}
	if body != nil {
		// API Gateway passes binary media base64-encoded and text as is.
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	resp, err := e.handler(context.Background(), ev)
	if err != nil {
		t.Fatalf("%s %s: handler error %v", r.Method, path, err)
	}
	if resp.StatusCode >= 500 {
		t.Fatalf("%s %s?%s body %q: status %d: %s", r.Method, path, query, body, resp.StatusCode, resp.Body)
	}
	return resp
}

// Create sends a request that must answer 2xx and returns the "id" of the
// resource in the answer.
func (e *Env) Create(t testing.TB, r Route, body string) string {
	t.Helper()
	resp := e.Do(t, r, "", []byte(body))
	var out struct {
		ID string `json:"id"`
	}
	if resp.StatusCode/100 != 2 || json.Unmarshal([]byte(resp.Body), &out) != nil || out.ID == "" {
		t.Fatalf("create %s %s: %d %s", r.Method, r.Resource, resp.StatusCode, resp.Body)
	}
	return out.ID
}

// Fuzz fuzzes (route index, query string, body) over routes: every query
// (filters, ordering, paging) and every body, on every route, must answer
// without a 5xx. Seeds live in the package's testdata/fuzz/<target>/.
func (e *Env) Fuzz(f *testing.F, routes []Route) {
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte) {
		e.Do(t, routes[int(route)%len(routes)], query, body)
	})
}
