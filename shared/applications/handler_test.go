package applications_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/applications/appconfig"
	"cads/shared/authz"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/outbox"
	"cads/shared/store"
	"cads/shared/tasks"
	"cads/shared/wire"
	"cads/shared/wire/applicationswire"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type api struct {
	t    *testing.T
	d    testenv.Dynamo
	st   *store.Store
	h    apigw.ProxyHandler
	root string
	op   caller.Principal
}

type resp struct {
	Status int
	Raw    string
	Body   map[string]any
	Link   string // the Link header of a collection page
}

// newAPI bootstraps an installation and serves the applications function
// through the constructor its Lambda main uses.
func newAPI(t *testing.T) *api {
	t.Helper()
	d := testenv.NewDynamo(t)
	deps := wire.New(quiet, d.Client, d.Table)
	// The round trips counted here are the family's own; the cost tour
	// counts them with the audit trail's (docs/performance.md).
	deps.Audit = nil
	res, op := testenv.Bootstrap(t, deps.Store)
	return &api{t: t, d: d, st: deps.Store, h: applicationswire.Handler(deps), root: res.RootAccount, op: op}
}

func (a *api) call(p caller.Principal, method, path, ctype, body string) resp {
	a.t.Helper()
	req := events.APIGatewayProxyRequest{HTTPMethod: method, Path: path, Headers: map[string]string{}, Body: body,
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req", Authorizer: p.Context()}}
	if ctype != "" {
		req.Headers["Content-Type"] = ctype
	}
	if !utf8.ValidString(body) {
		// JSON is one of the API's binary media types: the gateway passes
		// the bytes as sent, base64-encoded.
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(body)), true
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		req.Path = path[:i]
		req.QueryStringParameters = map[string]string{}
		req.MultiValueQueryStringParameters = map[string][]string{}
		for _, kv := range strings.Split(path[i+1:], "&") {
			k, v, _ := strings.Cut(kv, "=")
			req.QueryStringParameters[k] = v
			req.MultiValueQueryStringParameters[k] = []string{v}
		}
	}
	raw, _ := json.Marshal(req)
	var ev events.APIGatewayProxyRequest
	_ = json.Unmarshal(raw, &ev)
	out, err := a.h(context.Background(), ev)
	if err != nil {
		a.t.Fatalf("%s %s: function error %v", method, path, err)
	}
	r := resp{Status: out.StatusCode, Raw: out.Body, Link: out.Headers["Link"]}
	if vs := out.MultiValueHeaders["Link"]; r.Link == "" && len(vs) > 0 {
		r.Link = vs[0]
	}
	_ = json.Unmarshal([]byte(out.Body), &r.Body)
	if out.StatusCode >= 400 {
		e, _ := r.Body["error"].(map[string]any)
		if st, _ := r.Body["status"].(float64); int(st) != out.StatusCode || e == nil || e["message"] == "" {
			a.t.Fatalf("%s %s: not the API error body: %d %s", method, path, out.StatusCode, out.Body)
		}
	}
	return r
}

func (a *api) do(method, path, body string) resp {
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	return a.call(a.op, method, path, ct, body)
}

func (a *api) create(body string) resp {
	a.t.Helper()
	r := a.do("POST", "/v2/applications", body)
	if r.Status != 200 {
		a.t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	return r
}

func (a *api) user(account string, perms ...authz.Permission) caller.Principal {
	a.t.Helper()
	ctx := context.Background()
	id := ids.New()
	if err := a.st.Principals.CreatePrincipal(ctx, domain.Principal{ID: id, Kind: domain.KindUser, Email: id + "@example.com"}); err != nil {
		a.t.Fatal(err)
	}
	role := domain.Role{AccountID: account, ID: ids.New(), Name: "custom " + id, Permissions: perms, Version: 1}
	if err := a.st.Roles.CreateRole(ctx, role); err != nil {
		a.t.Fatal(err)
	}
	if err := a.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: id, AccountID: account, RoleID: role.ID, Via: "test"}); err != nil {
		a.t.Fatal(err)
	}
	return caller.Principal{ID: id, Kind: domain.KindUser, AccountID: account, KeyID: "k"}
}

// worker runs every pending task of the root account, as the queue would.
func (a *api) runTasks() {
	a.t.Helper()
	ctx := context.Background()
	w := tasks.NewWorker(tasks.NewWorkerStore(a.st), tasks.NewFakeDataPlane(quiet, tasks.LoopbackOnly), outbox.New(a.st.Tasks, outbox.SQS{}, quiet), quiet)
	ts, err := a.st.Tasks.ListTasks(ctx, a.root, time.Time{}, time.Time{}, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	for _, t := range ts {
		if !t.Finished() {
			w.Process(ctx, `{"task":"`+t.ID+`"}`)
		}
	}
}

func (a *api) setState(id, state string) {
	a.t.Helper()
	// Only tasks change states; a test puts an application in any state
	// by writing it directly.
	cur, err := a.st.Applications.GetApplication(context.Background(), a.root, id)
	if err != nil {
		a.t.Fatal(err)
	}
	if cur.State == state {
		return
	}
	if err := a.st.Applications.BeginTransition(context.Background(), a.root, id, cur.State, state, "test"); err != nil {
		a.t.Fatal(err)
	}
}

const shop = `{"name":"Shop","aliases":["Shop.Example.com","www.shop.example.com"]}`

func TestCreateAndReadApplications(t *testing.T) {
	a := newAPI(t)
	a.d.Counter.SetDelay(25 * time.Millisecond)
	a.d.Counter.Reset()
	r := a.create(shop)
	// The allowance check (entitlements and the count, in parallel), then
	// the write with the account check.
	if seq := a.d.Counter.Sequential(); seq != 2 {
		t.Errorf("POST /v2/applications: %d sequential round trips, want 2 (%v)", seq, a.d.Counter.ByOperation())
	}
	a.d.Counter.SetDelay(0)
	id := r.Body["id"].(string)
	if r.Body["state"] != "stopped" || r.Body["href"] != "/v2/applications/"+id || r.Body["current_outage"] != false ||
		r.Body["request_timeout"] != 30.0 || r.Body["translate_path"] != "preserve" || r.Body["enable_tls"] != false ||
		!strings.Contains(r.Raw, `"aliases":["shop.example.com","www.shop.example.com"]`) || r.Body["created"] == nil {
		t.Fatalf("created: %s", r.Raw)
	}
	for _, c := range []struct{ body, msg string }{
		{`{"aliases":["a.example.com"]}`, "name is required"},
		{`{"name":"x"}`, "aliases is required"},
		{`{"name":"x","aliases":[]}`, "aliases is required"},
		{`{"name":"x","aliases":["localhost"]}`, "not a host name"},
		{`{"name":"x","aliases":["a.example.com","A.example.com"]}`, "listed twice"},
		{`{"name":"x","aliases":["a.example.com"],"state":"running"}`, "state is read-only"},
		{`{"name":"x","aliases":["a.example.com"],"cluster":"/v2/clusters/x"}`, "unknown field"},
		{`{"name":"x","aliases":["a.example.com"],"request_timeout":61}`, "request_timeout"},
		{`{"name":"x","aliases":["a.example.com"],"default_hostname":"b.example.com"}`, "must be one of the aliases"},
		{`{"name":"x","aliases":["a.example.com"],"servers":[{"public_address":"300.1.1.1"}]}`, "servers[0].public_address"},
		{`{"name":"x","aliases":["a.example.com"],"tls_configuration":{"certificate_chain":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}}`, "CERTIFICATE blocks only"},
		{`{"name":"x","aliases":["a.example.com"],"labels":["Bad Label"]}`, "labels[0]"},
	} {
		if r := a.do("POST", "/v2/applications", c.body); r.Status != 400 || !strings.Contains(r.Raw, c.msg) {
			t.Errorf("%s: %d %s, want 400 with %q", c.body, r.Status, r.Raw, c.msg)
		}
	}
	if r := a.call(a.op, "POST", "/v2/applications", "text/plain", shop); r.Status != 415 {
		t.Errorf("text/plain: %d", r.Status)
	}

	a.d.Counter.Reset()
	if r := a.do("GET", "/v2/applications/"+id, ""); r.Status != 200 || r.Body["name"] != "Shop" || a.d.Counter.Total() != 1 {
		t.Fatalf("get: %d %s (%d round trips)", r.Status, r.Raw, a.d.Counter.Total())
	}
	// Another account's application does not exist for the caller.
	if err := a.st.Accounts.CreateAccount(context.Background(), domain.Account{ID: "other", Name: "Other", Parent: a.root, Ancestors: []string{a.root}}, nil); err != nil {
		t.Fatal(err)
	}
	stranger := a.user("other", authz.Permission{Method: "GET", Effect: "permit", Spec: []string{"/v2/applications**"}})
	if r := a.call(stranger, "GET", "/v2/applications/"+id, "", ""); r.Status != 404 || strings.Contains(r.Raw, "Shop") {
		t.Fatalf("another account's application: %d %s", r.Status, r.Raw)
	}
	if r := a.call(stranger, "GET", "/v2/applications", "", ""); r.Raw != "[]" {
		t.Fatalf("another account's list: %s", r.Raw)
	}
	for _, bad := range []string{"NOPE", "a-b"} {
		if r := a.do("GET", "/v2/applications/"+bad, ""); r.Status != 404 {
			t.Errorf("%s: %d", bad, r.Status)
		}
	}
}

// The collection holds only what the caller may GET (docs/api.md#collection-reads).
func TestListShowsOnlyWhatTheCallerMayGet(t *testing.T) {
	a := newAPI(t)
	first := a.create(`{"name":"b","aliases":["b.example.com"]}`).Body["id"].(string)
	second := a.create(`{"name":"a","aliases":["a.example.com"]}`).Body["id"].(string)
	var list []map[string]any
	a.d.Counter.SetDelay(25 * time.Millisecond)
	a.d.Counter.Reset()
	r := a.do("GET", "/v2/applications?order=name", "")
	if seq := a.d.Counter.Sequential(); seq != 2 && !testenv.Realistic() {
		t.Errorf("GET /v2/applications: %d sequential round trips, want 2 (%v)", seq, a.d.Counter.ByOperation())
	}
	a.d.Counter.SetDelay(0)
	if err := json.Unmarshal([]byte(r.Raw), &list); err != nil || len(list) != 2 || list[0]["id"] != second {
		t.Fatalf("operator's list: %s", r.Raw)
	}
	one := a.user(a.root, authz.Permission{Method: "GET", Effect: "permit", Spec: []string{"/v2/applications", "/v2/applications/" + first}})
	r = a.call(one, "GET", "/v2/applications", "", "")
	if err := json.Unmarshal([]byte(r.Raw), &list); err != nil || len(list) != 1 || list[0]["id"] != first {
		t.Fatalf("filtered list: %s", r.Raw)
	}
	if r := a.do("GET", "/v2/applications?order=secret", ""); r.Status != 400 {
		t.Fatalf("bad order: %d", r.Status)
	}
}

// PATCH: descriptive changes apply at once (200, the Application); a change
// to what runs becomes a task (201, the Task) that applies it.
func TestPatchApplication(t *testing.T) {
	a := newAPI(t)
	id := a.create(shop).Body["id"].(string)
	path := "/v2/applications/" + id

	a.d.Counter.Reset()
	r := a.do("PATCH", path, `{"name":"Shop 2","labels":["prod"]}`)
	// GetItem; UpdateItem ∥ its journal PutItem.
	if r.Status != 200 || r.Body["name"] != "Shop 2" || !strings.Contains(r.Raw, `"labels":["prod"]`) || a.d.Counter.Total() != 3 {
		t.Fatalf("descriptive merge patch: %d %s (%d round trips)", r.Status, r.Raw, a.d.Counter.Total())
	}
	r = a.call(a.op, "PATCH", path, "application/json-patch+json", `[{"op":"test","path":"/name","value":"Shop 2"},{"op":"replace","path":"/name","value":"Shop 3"}]`)
	if r.Status != 200 || r.Body["name"] != "Shop 3" {
		t.Fatalf("descriptive JSON patch: %d %s", r.Status, r.Raw)
	}
	if r := a.do("PATCH", path, `{"name":"Shop 3"}`); r.Status != 200 || r.Body["name"] != "Shop 3" {
		t.Fatalf("no-op: %d %s", r.Status, r.Raw)
	}

	// What runs: a task, and nothing changes until it has run.
	r = a.call(a.op, "PATCH", path, "application/json-patch+json", `[{"op":"add","path":"/aliases/-","value":"m.shop.example.com"},{"op":"replace","path":"/request_timeout","value":10},{"op":"replace","path":"/name","value":"Shop 4"}]`)
	if r.Status != 201 || r.Body["type"] != "patch-application" || r.Body["state"] != "pending" || r.Body["target"] != path {
		t.Fatalf("run-affecting patch: %d %s", r.Status, r.Raw)
	}
	params, _ := json.Marshal(r.Body["parameters"])
	if !strings.Contains(string(params), `"aliases":["shop.example.com","www.shop.example.com","m.shop.example.com"]`) ||
		!strings.Contains(string(params), `"request_timeout":10`) || !strings.Contains(string(params), `"name":"Shop 4"`) {
		t.Fatalf("task parameters: %s", params)
	}
	if r := a.do("GET", path, ""); r.Body["request_timeout"] != 30.0 || r.Body["name"] != "Shop 3" {
		t.Fatalf("applied before the task ran: %s", r.Raw)
	}
	a.runTasks()
	if r := a.do("GET", path, ""); r.Body["request_timeout"] != 10.0 || r.Body["name"] != "Shop 4" || !strings.Contains(r.Raw, "m.shop.example.com") {
		t.Fatalf("after the task: %s", r.Raw)
	}
	// Removing a field with null (merge patch) resets it to its default.
	if r := a.do("PATCH", path, `{"request_timeout":null}`); r.Status != 201 {
		t.Fatalf("null: %d %s", r.Status, r.Raw)
	}
	a.runTasks()
	if r := a.do("GET", path, ""); r.Body["request_timeout"] != 30.0 {
		t.Fatalf("after null: %s", r.Raw)
	}

	for _, c := range []struct{ ctype, body string }{
		{"application/json", `{"state":"running"}`},
		{"application/json", `{"created":"2020-01-01T00:00:00Z"}`},
		{"application/json", `{"aliases":[]}`},
		{"application/json", `{"aliases":null}`},
		{"application/json", `{"cluster":"/v2/clusters/c"}`},
		{"application/json", `[{"op":"replace","path":"/name","value":"x"}]`},
		{"application/json", `{"name":`},
		{"application/json-patch+json", `[{"op":"test","path":"/name","value":"nope"}]`},
		{"application/json-patch+json", `[{"op":"replace","path":"/state","value":"running"}]`},
		{"application/json-patch+json", `[{"op":"remove","path":"/aliases"}]`},
		{"application/json-patch+json", `{"op":"replace"}`},
	} {
		if r := a.call(a.op, "PATCH", path, c.ctype, c.body); r.Status != 400 {
			t.Errorf("%s %s: %d %s, want 400", c.ctype, c.body, r.Status, r.Raw)
		}
	}
	// RFC 7396's own media type is a merge patch too; others are 415.
	if r := a.call(a.op, "PATCH", path, "application/merge-patch+json", `{}`); r.Status != 200 {
		t.Errorf("merge-patch+json: %d %s", r.Status, r.Raw)
	}
	if r := a.call(a.op, "PATCH", path, "text/plain", `{}`); r.Status != 415 {
		t.Errorf("text/plain: %d %s", r.Status, r.Raw)
	}
	if r := a.do("PATCH", "/v2/applications/nosuch", `{"name":"x"}`); r.Status != 404 {
		t.Errorf("missing: %d", r.Status)
	}
}

// Concurrent descriptive patches of different fields both land.
func TestConcurrentPatchesLoseNothing(t *testing.T) {
	a := newAPI(t)
	id := a.create(shop).Body["id"].(string)
	var wg sync.WaitGroup
	for i, body := range []string{`{"name":"renamed"}`, `{"labels":["blue"]}`} {
		wg.Go(func() {
			if r := a.do("PATCH", "/v2/applications/"+id, body); r.Status != 200 {
				t.Errorf("patch %d: %d %s", i, r.Status, r.Raw)
			}
		})
	}
	wg.Wait()
	if r := a.do("GET", "/v2/applications/"+id, ""); r.Body["name"] != "renamed" || !strings.Contains(r.Raw, `"labels":["blue"]`) {
		t.Fatalf("lost update: %s", r.Raw)
	}
}

// DELETE in every state: only a stopped application goes (with its
// children); every other state is a 409 and changes nothing.
func TestDeleteInEveryState(t *testing.T) {
	a := newAPI(t)
	for i, state := range tasks.AppStates {
		// An alias names one application: one of its own for each.
		id := a.create(fmt.Sprintf(`{"name":"Shop","aliases":["shop%d.example.com"]}`, i)).Body["id"].(string)
		if r := a.do("POST", "/v2/applications/"+id+"/actions", `{"id":"ping","url":"https://ops.example.com/ping"}`); r.Status != 200 {
			t.Fatalf("action: %d %s", r.Status, r.Raw)
		}
		a.setState(id, state)
		r := a.do("DELETE", "/v2/applications/"+id, "")
		if state == domain.AppStopped {
			if r.Status != 200 || r.Body["id"] != id {
				t.Fatalf("delete stopped: %d %s", r.Status, r.Raw)
			}
			if r := a.do("GET", "/v2/applications/"+id, ""); r.Status != 404 {
				t.Fatalf("deleted application: %d", r.Status)
			}
			if r := a.do("GET", "/v2/applications/"+id+"/actions/ping", ""); r.Status != 404 {
				t.Fatalf("action of a deleted application: %d", r.Status)
			}
			continue
		}
		if r.Status != 409 || !strings.Contains(r.Raw, "is "+state) || !strings.Contains(r.Raw, "only a stopped application") {
			t.Fatalf("delete %s: %d %s", state, r.Status, r.Raw)
		}
		if r := a.do("GET", "/v2/applications/"+id, ""); r.Status != 200 || r.Body["state"] != state {
			t.Fatalf("after a refused delete: %d %s", r.Status, r.Raw)
		}
	}
	if r := a.do("DELETE", "/v2/applications/nosuch", ""); r.Status != 404 {
		t.Fatalf("missing: %d", r.Status)
	}
}

func TestEntitlementCapsApplications(t *testing.T) {
	a := newAPI(t)
	past := time.Now().Add(-time.Hour)
	if err := a.st.Entitlements.CreateEntitlement(context.Background(), domain.Entitlement{ID: "e1", Account: a.root, Resource: domain.ResourceApplications, Quantity: 1, Started: past}); err != nil {
		t.Fatal(err)
	}
	a.create(shop)
	if r := a.do("POST", "/v2/applications", shop); r.Status != 409 || !strings.Contains(r.Raw, "entitled") {
		t.Fatalf("over the allowance: %d %s", r.Status, r.Raw)
	}
}

func TestCoveredAliasesAreComputed(t *testing.T) {
	a := newAPI(t)
	chain := selfSigned(t, "shop.example.com")
	body, _ := json.Marshal(map[string]any{"name": "tls", "aliases": []string{"shop.example.com", "other.example.com"}, "enable_tls": true,
		"tls_configuration": map[string]any{"certificate_chain": chain, "versions": []string{"TlsV1.3"}}})
	r := a.create(string(body))
	var app struct {
		TLS appconfig.TLS `json:"tls_configuration"`
	}
	_ = json.Unmarshal([]byte(r.Raw), &app)
	if len(app.TLS.CoveredAliases) != 1 || app.TLS.CoveredAliases[0].Name != "shop.example.com" || app.TLS.CoveredAliases[0].Trusted ||
		app.TLS.EnableServerValidation == nil || !*app.TLS.EnableServerValidation {
		t.Fatalf("tls: %s", r.Raw)
	}
	// Sending the shown application back as a merge patch changes nothing.
	if r2 := a.do("PATCH", "/v2/applications/"+r.Body["id"].(string), r.Raw); r2.Status != 200 {
		t.Fatalf("echo patch: %d %s", r2.Status, r2.Raw)
	}
}
