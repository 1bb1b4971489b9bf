package prototypes_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/store"
	"cads/shared/wire"
	"cads/shared/wire/metricsapiwire"
)

type env struct {
	t  *testing.T
	st *store.Store
	h  apigw.ProxyHandler
	op caller.Principal
}

func newEnv(t *testing.T) *env {
	t.Helper()
	d := testenv.NewDynamo(t)
	deps := wire.New(slog.New(slog.NewTextHandler(io.Discard, nil)), d.Client, d.Table)
	_, op := testenv.Bootstrap(t, deps.Store)
	return &env{t: t, st: deps.Store, h: metricsapiwire.Handler(deps), op: op}
}

type resp struct {
	Status int
	Raw    string
	Body   map[string]any
}

// call sends one request through the metrics function as API Gateway
// would, query values already decoded.
func (e *env) call(p caller.Principal, method, path string, query map[string]string, body string) resp {
	e.t.Helper()
	req := events.APIGatewayProxyRequest{HTTPMethod: method, Path: path, Headers: map[string]string{}, Body: body,
		QueryStringParameters: query, MultiValueQueryStringParameters: map[string][]string{},
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req", Authorizer: p.Context()}}
	for k, v := range query {
		req.MultiValueQueryStringParameters[k] = []string{v}
	}
	if body != "" {
		req.Headers["Content-Type"] = "application/json"
	}
	out, err := e.h(context.Background(), req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	r := resp{Status: out.StatusCode, Raw: out.Body}
	_ = json.Unmarshal([]byte(out.Body), &r.Body)
	if r.Status >= 400 {
		if er, _ := r.Body["error"].(map[string]any); er == nil || er["message"] == "" {
			e.t.Fatalf("%s %s: not the API error body: %d %s", method, path, r.Status, r.Raw)
		}
	}
	return r
}

func TestMetricPrototypes(t *testing.T) {
	e := newEnv(t)
	op := e.op
	r := e.call(op, "POST", "/v2/metric-prototypes", nil,
		`{"default_name":"slow_pages","expression":"count()","log_type":"proxy-logs","filter":"elapsed > 2000 and request_path ~ '^/shop'","group_by":"request_path","description":"Slow shop pages"}`)
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	id := r.Body["id"].(string)
	if r.Body["href"] != "/v2/metric-prototypes/"+id || r.Body["display"] != "slow_pages" || r.Body["default_frequency"] != float64(60) ||
		r.Body["created_by"] != "/v2/users/"+op.ID || r.Body["log_type"] != "proxy-logs" || r.Body["created"] == nil {
		t.Errorf("created: %s", r.Raw)
	}
	r2 := e.call(op, "POST", "/v2/metric-prototypes", nil, `{"default_name":"csp","display":"csp-count","expression":"count()","log_type":"csp-reports","default_frequency":300}`)
	if r2.Status != 200 || r2.Body["filter"] != nil || r2.Body["display"] != "csp-count" || r2.Body["default_frequency"] != float64(300) {
		t.Fatalf("second: %d %s", r2.Status, r2.Raw)
	}
	if g := e.call(op, "GET", "/v2/metric-prototypes/"+id, nil, ""); g.Status != 200 || g.Raw != r.Raw {
		t.Errorf("get: %d %s, want what create answered %s", g.Status, g.Raw, r.Raw)
	}
	l := e.call(op, "GET", "/v2/metric-prototypes", map[string]string{"order": "-created"}, "")
	var list []map[string]any
	if err := json.Unmarshal([]byte(l.Raw), &list); l.Status != 200 || err != nil || len(list) != 2 || list[0]["id"] != r2.Body["id"] {
		t.Errorf("list newest first: %d %s", l.Status, l.Raw)
	}

	// Clear 400s for what cannot be a prototype.
	for _, c := range []struct{ body, msg string }{
		{`{"expression":"count()","log_type":"proxy-logs"}`, "default_name is required"},
		{`{"default_name":"Slow Pages","expression":"count()","log_type":"proxy-logs"}`, "default_name must be"},
		{`{"default_name":"` + strings.Repeat("a", 51) + `","expression":"count()","log_type":"proxy-logs"}`, "default_name must be"},
		{`{"default_name":"a","display":"A!","expression":"count()","log_type":"proxy-logs"}`, "display must be"},
		{`{"default_name":"a","log_type":"proxy-logs"}`, "expression is required"},
		{`{"default_name":"a","expression":" ","log_type":"proxy-logs"}`, "expression is required"},
		{`{"default_name":"a","expression":"count()"}`, "log_type is required"},
		{`{"default_name":"a","expression":"count()","log_type":"access"}`, "log_type must be"},
		{`{"default_name":"a","expression":"count()","log_type":"pageviews","filter":"elapsed > 1"}`, "filter (over pageviews records)"},
		{`{"default_name":"a","expression":"count()","log_type":"proxy-logs","filter":"status_code >"}`, "filter"},
		{`{"default_name":"a","expression":"count()","log_type":"proxy-logs","filter":""}`, "filter is empty"},
		{`{"default_name":"a","expression":"count()","log_type":"proxy-logs","group_by":"bytes_out"}`, "group_by must name a string attribute"},
		{`{"default_name":"a","expression":"count()","log_type":"proxy-logs","default_frequency":1}`, "default_frequency must be"},
		{`{"default_name":"a","expression":"count()","log_type":"proxy-logs","href":"/v2/metric-prototypes/x"}`, "unknown field"},
		{`{"default_name":"a","expression":"count()\u0000","log_type":"proxy-logs"}`, "expression"},
		{`{"default_name":"a","expression":"` + strings.Repeat("x", 1001) + `","log_type":"proxy-logs"}`, "at most 1000"},
	} {
		if r := e.call(op, "POST", "/v2/metric-prototypes", nil, c.body); r.Status != 400 || !strings.Contains(r.Raw, c.msg) {
			t.Errorf("POST %s: %d %s, want 400 naming %q", c.body, r.Status, r.Raw, c.msg)
		}
	}
	for _, q := range []map[string]string{{"order": "expression"}, {"limit": "0"}, {"cursor": "nonsense"}} {
		if r := e.call(op, "GET", "/v2/metric-prototypes", q, ""); r.Status != 400 {
			t.Errorf("GET ?%v: %d %s", q, r.Status, r.Raw)
		}
	}

	// Another account's principal sees none of them, and deletes none.
	other := caller.Principal{ID: ids.New(), Kind: domain.KindUser, AccountID: "elsewhere", KeyID: "k"}
	if r := e.call(other, "GET", "/v2/metric-prototypes/"+id, nil, ""); r.Status != 404 {
		t.Errorf("another account's GET: %d %s", r.Status, r.Raw)
	}
	if r := e.call(other, "DELETE", "/v2/metric-prototypes/"+id, nil, ""); r.Status != 404 {
		t.Errorf("another account's DELETE: %d %s", r.Status, r.Raw)
	}
	// A caller who may GET only one of them lists only that one.
	one := e.user(op.AccountID, authz.Permission{Method: "GET", Effect: "permit", Spec: []string{"/v2/metric-prototypes", "/v2/metric-prototypes/" + id}})
	l = e.call(one, "GET", "/v2/metric-prototypes", nil, "")
	if err := json.Unmarshal([]byte(l.Raw), &list); l.Status != 200 || err != nil || len(list) != 1 || list[0]["id"] != id {
		t.Errorf("filtered list: %d %s", l.Status, l.Raw)
	}

	if r := e.call(op, "DELETE", "/v2/metric-prototypes/"+id, nil, ""); r.Status != 200 || r.Body["id"] != id || r.Body["expression"] != "count()" {
		t.Fatalf("delete: %d %s", r.Status, r.Raw)
	}
	for _, path := range []string{"/v2/metric-prototypes/" + id, "/v2/metric-prototypes/Not-An-Id"} {
		if r := e.call(op, "GET", path, nil, ""); r.Status != 404 {
			t.Errorf("GET %s: %d %s", path, r.Status, r.Raw)
		}
	}
	if r := e.call(op, "DELETE", "/v2/metric-prototypes/"+id, nil, ""); r.Status != 404 {
		t.Errorf("delete again: %d %s", r.Status, r.Raw)
	}
}

// user makes a principal of account holding one custom role with perms.
func (e *env) user(account string, perms ...authz.Permission) caller.Principal {
	e.t.Helper()
	ctx := context.Background()
	id := ids.New()
	if err := e.st.Principals.CreatePrincipal(ctx, domain.Principal{ID: id, Kind: domain.KindUser, Email: id + "@example.com"}); err != nil {
		e.t.Fatal(err)
	}
	role := domain.Role{AccountID: account, ID: ids.New(), Name: "custom " + id, Permissions: perms, Version: 1}
	if err := e.st.Roles.CreateRole(ctx, role); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: id, AccountID: account, RoleID: role.ID, Via: "test"}); err != nil {
		e.t.Fatal(err)
	}
	return caller.Principal{ID: id, Kind: domain.KindUser, AccountID: account, KeyID: "k"}
}
