package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/caller"
	"cads/shared/clock"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/store"
	"cads/shared/tasks"
	"cads/shared/tasks/tasksapi"
	"cads/shared/wire"
	"cads/shared/wire/taskswire"
)

type api struct {
	t    *testing.T
	d    testenv.Dynamo
	st   *store.Store
	clk  *clock.Shifted // the function's clock (wire.Deps.Clock)
	h    apigw.ProxyHandler
	root string
	op   caller.Principal
}

type resp struct {
	Status int
	Raw    string
	Body   map[string]any
	Header map[string]string
}

// newAPI bootstraps an installation and serves the tasks function through
// the same constructor as its Lambda main.
func newAPI(t *testing.T) *api {
	t.Helper()
	d := testenv.NewDynamo(t)
	clk := &clock.Shifted{}
	deps := wire.NewClocked(quiet, d.Client, d.Table, clk.Now)
	res, op := testenv.Bootstrap(t, deps.Store)
	return &api{t: t, d: d, st: deps.Store, clk: clk, h: taskswire.Handler(deps), root: res.RootAccount, op: op}
}

func call(t *testing.T, h apigw.ProxyHandler, p caller.Principal, method, path, ctype, body string) resp {
	t.Helper()
	req := events.APIGatewayProxyRequest{HTTPMethod: method, Path: path, Headers: map[string]string{}, Body: body,
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req", Authorizer: p.Context()}}
	if ctype != "" {
		req.Headers["Content-Type"] = ctype
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
	// Through JSON, as API Gateway sends it.
	raw, _ := json.Marshal(req)
	var ev events.APIGatewayProxyRequest
	_ = json.Unmarshal(raw, &ev)
	out, err := h(context.Background(), ev)
	if err != nil {
		t.Fatalf("%s %s: function error %v", method, path, err)
	}
	r := resp{Status: out.StatusCode, Raw: out.Body, Header: map[string]string{}}
	for k, v := range out.MultiValueHeaders {
		r.Header[k] = strings.Join(v, ", ")
	}
	for k, v := range out.Headers {
		r.Header[k] = v
	}
	_ = json.Unmarshal([]byte(out.Body), &r.Body)
	if out.StatusCode >= 400 {
		e, _ := r.Body["error"].(map[string]any)
		if st, _ := r.Body["status"].(float64); int(st) != out.StatusCode || e == nil || e["message"] == "" {
			t.Fatalf("%s %s: not the API error body: %d %s", method, path, out.StatusCode, out.Body)
		}
	}
	return r
}

func (a *api) do(p caller.Principal, method, path, body string) resp {
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	return call(a.t, a.h, p, method, path, ct, body)
}

// user makes a principal in the root account holding one custom role with
// the given permissions.
func (a *api) user(perms ...authz.Permission) caller.Principal {
	a.t.Helper()
	ctx := context.Background()
	id := ids.New()
	if err := a.st.Principals.CreatePrincipal(ctx, domain.Principal{ID: id, Kind: domain.KindUser, Email: id + "@example.com"}); err != nil {
		a.t.Fatal(err)
	}
	role := domain.Role{AccountID: a.root, ID: ids.New(), Name: "custom " + id, Permissions: perms, Version: 1}
	if err := a.st.Roles.CreateRole(ctx, role); err != nil {
		a.t.Fatal(err)
	}
	if err := a.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: id, AccountID: a.root, RoleID: role.ID, Via: "test"}); err != nil {
		a.t.Fatal(err)
	}
	return caller.Principal{ID: id, Kind: domain.KindUser, Email: id + "@example.com", AccountID: a.root, KeyID: "k"}
}

func permit(method string, spec ...string) authz.Permission {
	return authz.Permission{Method: method, Effect: "permit", Spec: spec}
}

func deny(method string, spec ...string) authz.Permission {
	return authz.Permission{Method: method, Effect: "deny", Spec: spec}
}

func (a *api) app(account, state string) domain.Application {
	a.t.Helper()
	now := a.st.Now()
	app := domain.Application{ID: ids.New(), Account: account, State: state, Config: config("shop", "shop.example.com"), Version: 1, Created: now, Updated: now}
	if err := a.st.Applications.CreateApplication(context.Background(), app, domain.Quota{}); err != nil {
		a.t.Fatal(err)
	}
	return app
}

func (a *api) taskCount() int {
	ts, err := a.st.Tasks.ListTasks(context.Background(), a.root, time.Time{}, time.Time{}, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	return len(ts)
}

func body(typ, target, params string) string {
	b := `{"type":"` + typ + `"`
	if target != "" {
		b += `,"target":"` + target + `"`
	}
	if params != "" {
		b += `,"parameters":` + params
	}
	return b + "}"
}

// docs/api.md#tasks: besides POST /v2/tasks, each task type needs its own
// permission on the target application, decided by the authorizer's
// engine; without it the answer is 403 and no task is written.
func TestTaskPermissionTable(t *testing.T) {
	a := newAPI(t)
	app := a.app(a.root, domain.AppStopped)
	if err := a.st.Applications.CreateAction(context.Background(), a.root, domain.Action{App: app.ID, ID: "ping", URL: "http://127.0.0.1:1/x", HTTPMethod: "POST", Version: 1}); err != nil {
		t.Fatal(err)
	}
	key := rsaPublicPEM(t)
	keyJSON, _ := json.Marshal(key)
	params := map[string]string{
		tasks.TypeRunAction:                 `{"id":"ping"}`,
		tasks.TypeGenerateOriginCertificate: `{"key":` + string(keyJSON) + `}`,
		tasks.TypeInvalidateCache:           `{"tags":["css"]}`,
		tasks.TypePrepareForDownload:        `{"reference":"/v2/archived-logs/applications/` + app.ID + `/proxy-logs","from":"2026-05-01T10:00:00Z","to":"2026-05-01T12:00:00Z"}`,
	}
	// The path the permission is decided on: the target, or the archive.
	on := map[string]string{tasks.TypePrepareForDownload: "/v2/archived-logs/applications/" + app.ID + "/proxy-logs"}
	want := map[string]string{
		tasks.TypeEnterMaintenance: "PATCH", tasks.TypeExitMaintenance: "PATCH", tasks.TypeRunAction: "PATCH",
		tasks.TypeStart: "PATCH", tasks.TypeStop: "PATCH", tasks.TypeGenerateOriginCertificate: "GET", tasks.TypeInvalidateCache: "PUT",
		tasks.TypePrepareForDownload: "GET",
	}
	methods := []string{"GET", "POST", "PATCH", "PUT", "DELETE"}
	for _, typ := range tasks.PostTypes {
		t.Run(typ, func(t *testing.T) {
			needed := tasks.Permission[typ]
			if needed != want[typ] {
				t.Fatalf("permission %s, docs/api.md#tasks says %s", needed, want[typ])
			}
			b := body(typ, tasks.AppHref(app.ID), params[typ])
			path := tasks.AppHref(app.ID)
			if p, ok := on[typ]; ok {
				path = p
			}

			// Everything but the needed method: refused, nothing written.
			var others []authz.Permission
			for _, m := range methods {
				if m != needed {
					others = append(others, permit(m, "/v2/applications**", "/v2/archived-logs**"))
				}
			}
			lacking := a.user(append(others, permit("POST", "/v2/tasks"))...)
			before := a.taskCount()
			r := a.do(lacking, "POST", "/v2/tasks", b)
			if r.Status != 403 || !strings.Contains(r.Raw, needed+" "+path) {
				t.Fatalf("without %s: %d %s", needed, r.Status, r.Raw)
			}
			if a.taskCount() != before {
				t.Fatal("a refused task was written")
			}

			// A deny in the same role blocks it too.
			denied := a.user(permit("POST", "/v2/tasks"), permit(needed, "/v2/applications/*", "/v2/archived-logs/**"), deny(needed, path))
			if r := a.do(denied, "POST", "/v2/tasks", b); r.Status != 403 {
				t.Fatalf("denied: %d %s", r.Status, r.Raw)
			}

			// Exactly the needed permission: accepted.
			exact := a.user(permit("POST", "/v2/tasks"), permit(needed, path))
			r = a.do(exact, "POST", "/v2/tasks", b)
			if r.Status != 201 || r.Body["state"] != "pending" || r.Body["type"] != typ || r.Body["target"] != tasks.AppHref(app.ID) {
				t.Fatalf("with %s: %d %s", needed, r.Status, r.Raw)
			}
			if a.taskCount() != before+1 {
				t.Fatal("the accepted task was not written")
			}
		})
	}
	// A certificate without a target needs no permission on an application.
	only := a.user(permit("POST", "/v2/tasks"))
	r := a.do(only, "POST", "/v2/tasks", `{"type":"generate-origin-certificate","parameters":{"key":`+string(keyJSON)+`,"hostnames":["o.example.com"]}}`)
	if r.Status != 201 {
		t.Fatalf("certificate without target: %d %s", r.Status, r.Raw)
	}
}

func TestCreateTaskValidation(t *testing.T) {
	a := newAPI(t)
	app := a.app(a.root, domain.AppStopped)
	if err := a.st.Accounts.CreateAccount(context.Background(), domain.Account{ID: "someoneelse", Name: "someone else", Ancestors: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	other := a.app("someoneelse", domain.AppStopped)
	target := tasks.AppHref(app.ID)
	weak, _ := json.Marshal(weakKey(t))
	cases := []struct {
		body   string
		status int
		msg    string
	}{
		{`{}`, 400, "type is required"},
		{`{"type":"reboot","target":"` + target + `"}`, 400, "not a task type"},
		{body(tasks.TypePatchApplication, target, `{}`), 400, "PATCH /v2/applications"},
		{`{"type":"start"}`, 400, "target is required"},
		{`{"type":"start","target":"/v2/accounts/x"}`, 400, "not an application href"},
		{`{"type":"start","target":{"href":"` + target + `","x":1}}`, 400, "target must be"},
		{`{"type":"start","target":"` + target + `","extra":1}`, 400, "unknown field"},
		{body("start", target, `{"now":true}`), 400, "takes no parameters"},
		{body("enter_maintenance", target, `{"maximum_duration":0}`), 400, "maximum_duration must be a whole number of seconds from 1"},
		{body("enter_maintenance", target, `{"other":1}`), 400, "unknown field"},
		{body("run-action", target, ``), 400, "parameters is required"},
		{body("run-action", target, `{}`), 400, "parameters.id is required"},
		{body("run-action", target, `{"id":"nosuch"}`), 404, "no action"},
		{body("generate-origin-certificate", target, `{}`), 400, "key is required"},
		{body("prepare-for-download", "", ``), 400, "parameters is required"},
		{body("prepare-for-download", "", `{"from":"2026-05-01T10:00:00Z","to":"2026-05-01T11:00:00Z"}`), 400, "reference is required"},
		{body("prepare-for-download", "", `{"reference":"/v2/applications/`+app.ID+`/logs","from":"2026-05-01T10:00:00Z","to":"2026-05-01T11:00:00Z"}`), 400, "not an archived-logs reference"},
		{body("prepare-for-download", "", `{"reference":"/v2/archived-logs/applications/`+app.ID+`/access","from":"2026-05-01T10:00:00Z","to":"2026-05-01T11:00:00Z"}`), 400, "not an archive type"},
		{body("prepare-for-download", "", `{"reference":"/v2/archived-logs/applications/`+app.ID+`/cdn"}`), 400, "from and parameters.to are required"},
		{body("prepare-for-download", "", `{"reference":"/v2/archived-logs/applications/`+app.ID+`/cdn","from":"2026-05-01T10:30:00Z","to":"2026-05-01T11:00:00Z"}`), 400, "whole hours"},
		{body("prepare-for-download", "", `{"reference":"/v2/archived-logs/applications/`+app.ID+`/cdn","from":"2026-05-01T11:00:00Z","to":"2026-05-01T10:00:00Z"}`), 400, "before"},
		{body("prepare-for-download", "", `{"reference":"/v2/archived-logs/applications/`+app.ID+`/cdn","from":"2026-03-01T10:00:00Z","to":"2026-05-01T10:00:00Z"}`), 400, "MaxPartitions"},
		{body("prepare-for-download", "", `{"reference":"/v2/archived-logs/applications/`+app.ID+`/cdn","from":"2026-05-01T10:00:00Z","to":"2026-05-01T11:00:00Z","retention":31}`), 400, "3 to 30 days"},
		{body("prepare-for-download", "", `{"reference":"/v2/archived-logs/applications/`+app.ID+`/cdn","from":"2026-05-01T10:00:00Z","to":"2026-05-01T11:00:00Z","restore_type":"now"}`), 400, "restore_type"},
		{body("prepare-for-download", tasks.AppHref(other.ID), `{"reference":"/v2/archived-logs/applications/`+app.ID+`/cdn","from":"2026-05-01T10:00:00Z","to":"2026-05-01T11:00:00Z"}`), 400, "not the application of parameters.reference"},
		{body("prepare-for-download", "", `{"reference":"/v2/archived-logs/applications/`+other.ID+`/cdn","from":"2026-05-01T10:00:00Z","to":"2026-05-01T11:00:00Z"}`), 404, "no application"},
		{body("generate-origin-certificate", target, `{"key":"x"}`), 400, "not a PEM block"},
		{body("generate-origin-certificate", target, `{"key":`+string(weak)+`}`), 400, "at least 2048"},
		{body("invalidate-cache", target, `{"urls":["/a"],"tags":["b"]}`), 400, "not both"},
		{body("invalidate-cache", target, `{"urls":[]}`), 400, "at least one"},
		{body("invalidate-cache", target, `{"urls":["/a b"]}`), 400, "urls[0]"},
		{body("start", tasks.AppHref("nosuchapp"), ``), 404, "no application"},
		{body("start", tasks.AppHref(other.ID), ``), 404, "no application"},
		{body("start", target, ``) + "x", 400, "invalid JSON"},
	}
	for _, c := range cases {
		r := a.do(a.op, "POST", "/v2/tasks", c.body)
		if r.Status != c.status || !strings.Contains(r.Raw, c.msg) {
			t.Errorf("%s: %d %s; want %d containing %q", c.body, r.Status, r.Raw, c.status, c.msg)
		}
	}
	if r := call(t, a.h, a.op, "POST", "/v2/tasks", "text/plain", body("start", target, "")); r.Status != 415 {
		t.Errorf("text/plain: %d", r.Status)
	}
	if r := a.do(a.op, "POST", "/v2/tasks?wait=9", body("start", target, "")); r.Status != 400 {
		t.Errorf("wait=9: %d", r.Status)
	}
	if n := a.taskCount(); n != 0 {
		t.Errorf("%d tasks written by refused requests", n)
	}
}

// GET /v2/tasks shows only the tasks the caller may GET; another account's
// task is a 404.
func TestReadTasks(t *testing.T) {
	a := newAPI(t)
	app := a.app(a.root, domain.AppStopped)
	var made []string
	for range 3 {
		r := a.do(a.op, "POST", "/v2/tasks", body("start", tasks.AppHref(app.ID), ""))
		if r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		made = append(made, r.Body["id"].(string))
		a.clk.Advance(2 * time.Millisecond) // distinct creation times, as stored (ms)
	}
	var list []tasks.Task
	r := a.do(a.op, "GET", "/v2/tasks", "")
	if err := json.Unmarshal([]byte(r.Raw), &list); err != nil || len(list) != 3 || list[0].ID != made[2] {
		t.Fatalf("list (newest first): %d %s", r.Status, r.Raw)
	}
	one := a.user(permit("GET", "/v2/tasks", "/v2/tasks/"+made[1]))
	r = a.do(one, "GET", "/v2/tasks", "")
	if err := json.Unmarshal([]byte(r.Raw), &list); err != nil || len(list) != 1 || list[0].ID != made[1] {
		t.Fatalf("filtered list: %d %s", r.Status, r.Raw)
	}
	if r := a.do(a.op, "GET", "/v2/tasks?order=created&limit=1&start=2", ""); !strings.Contains(r.Raw, made[1]) || strings.Contains(r.Raw, made[0]) {
		t.Fatalf("window: %s", r.Raw)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if r := a.do(a.op, "GET", "/v2/tasks?from="+future, ""); r.Raw != "[]" {
		t.Fatalf("from the future: %s", r.Raw)
	}
	if r := a.do(a.op, "GET", "/v2/tasks/"+made[0], ""); r.Status != 200 || r.Body["href"] != "/v2/tasks/"+made[0] || r.Body["message"] != "queued" {
		t.Fatalf("get: %d %s", r.Status, r.Raw)
	}
	stranger := caller.Principal{ID: "x", Kind: domain.KindUser, AccountID: "elsewhere", KeyID: "k"}
	if r := a.do(stranger, "GET", "/v2/tasks/"+made[0], ""); r.Status != 404 {
		t.Fatalf("another account's task: %d %s", r.Status, r.Raw)
	}
	if r := a.do(a.op, "GET", "/v2/tasks/NOPE", ""); r.Status != 404 {
		t.Fatalf("bad id: %d", r.Status)
	}
}

// 201 while the task runs, 200 once it has finished: ?wait gives the
// worker time. Round trips of POST /v2/tasks are counted.
func TestCreateTaskStatusAndRoundTrips(t *testing.T) {
	a := newAPI(t)
	app := a.app(a.root, domain.AppStopped)
	e := &env{t: t, d: a.d, st: a.st, sent: &sentLog{}}
	e.dp = &testDP{FakeDataPlane: tasks.NewFakeDataPlane(quiet, tasks.LoopbackOnly)}
	ob, _ := newOutbox(a.st, e.sent)
	e.w = tasks.NewWorker(tasks.NewWorkerStore(a.st), e.dp, ob, quiet)
	// A queue that delivers at once to the worker.
	inline := senderFunc(func(ids ...string) {
		for _, id := range ids {
			go e.w.Process(context.Background(), msg(id))
		}
	})
	_, inlineOutbox := newOutbox(a.st, inline)
	h := apigw.Lambda(quiet, tasksapi.New(tasksapi.NewStore(a.st), access.New(access.NewStore(a.st), quiet), inlineOutbox, quiet))

	r := call(t, h, a.op, "POST", "/v2/tasks?wait=5", "application/json", body("start", tasks.AppHref(app.ID), ""))
	if r.Status != 200 || r.Body["state"] != "success" || r.Body["message"] != fmt.Sprintf("application %s is running", app.ID) {
		t.Fatalf("waited start: %d %s", r.Status, r.Raw)
	}

	a.d.Counter.SetDelay(20 * time.Millisecond)
	defer a.d.Counter.SetDelay(0)
	a.d.Counter.Reset()
	_, plainOutbox := newOutbox(a.st, &sentLog{})
	plain := apigw.Lambda(quiet, tasksapi.New(tasksapi.NewStore(a.st), access.New(access.NewStore(a.st), quiet), plainOutbox, quiet))
	r = call(t, plain, a.op, "POST", "/v2/tasks", "application/json", body("stop", tasks.AppHref(app.ID), ""))
	if r.Status != 201 || r.Body["state"] != "pending" {
		t.Fatalf("stop: %d %s", r.Status, r.Raw)
	}
	// Decision data (grants + key account, then roles) in parallel with
	// the application read, then the task and its outbox marker in one
	// transaction.
	if seq, total := a.d.Counter.Sequential(), a.d.Counter.Total(); seq != 3 || total != 5 {
		t.Fatalf("POST /v2/tasks: %d sequential, %d total round trips (want 3, 5): %v", seq, total, a.d.Counter.ByOperation())
	}
	a.d.Counter.Reset()
	if r := call(t, plain, a.op, "GET", "/v2/tasks/"+r.Body["id"].(string), "", ""); r.Status != 200 || a.d.Counter.Total() != 1 && !testenv.Realistic() {
		t.Fatalf("GET task: %d, %d round trips", r.Status, a.d.Counter.Total())
	}
	a.d.Counter.Reset()
	if r := call(t, plain, a.op, "GET", "/v2/tasks", "", ""); r.Status != 200 || a.d.Counter.Sequential() != 2 && !testenv.Realistic() {
		t.Fatalf("GET tasks: %d, %d sequential round trips: %v", r.Status, a.d.Counter.Sequential(), a.d.Counter.ByOperation())
	}
}

type senderFunc func(ids ...string)

func (f senderFunc) Send(_ context.Context, _ string, bodies ...string) error {
	f(taskIDs(bodies)...)
	return nil
}

// nextLink is the path of a Link: rel="next" header ("" without one).
func nextLink(t *testing.T, r resp) string {
	t.Helper()
	l := r.Header["Link"]
	if l == "" {
		return ""
	}
	if !strings.HasPrefix(l, "</v2/tasks?") || !strings.HasSuffix(l, `>; rel="next"`) {
		t.Fatalf("Link %q", l)
	}
	return strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
}

// GET /v2/tasks pages in the store: newest first by default, a Link to the
// next page, and a page the read budget cut says so and goes on from where
// the reading stopped.
func TestTasksPageWithLinks(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("one goroutine over a thousand tasks: run without the race detector (make test-unraced-light)")
	}
	a := newAPI(t)
	ctx := context.Background()
	base := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	n := apigw.ReadBudget + 2
	made := make([]string, n) // oldest first
	for i := range n {
		id := ids.New()
		created := base.Add(time.Duration(i) * time.Millisecond)
		tk := domain.Task{ID: id, Account: a.root, Type: "start", Target: "/v2/applications/x", State: domain.TaskSuccess,
			CreatedBy: a.op.ID, Created: created, Updated: created}
		if err := a.st.Tasks.CreateTask(ctx, tk, &store.OutboxMarker{Queue: "TasksQueue", Body: "{}", Due: created}); err != nil {
			t.Fatal(err)
		}
		made[i] = id
	}
	listed := func(r resp) []string {
		t.Helper()
		var list []tasks.Task
		if r.Status != 200 || json.Unmarshal([]byte(r.Raw), &list) != nil {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		var out []string
		for _, tk := range list {
			out = append(out, tk.ID)
		}
		return out
	}

	// Newest first, three pages of two through the Link header.
	path := "/v2/tasks?limit=2"
	var got []string
	for range 3 {
		r := a.do(a.op, "GET", path, "")
		if r.Header["X-Result-Cut"] != "" {
			t.Fatalf("an unhidden page was cut: %v", r.Header)
		}
		got = append(got, listed(r)...)
		if path = nextLink(t, r); path == "" {
			t.Fatal("no Link to the next page")
		}
	}
	if want := []string{made[n-1], made[n-2], made[n-3], made[n-4], made[n-5], made[n-6]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("newest first %v, want %v", got, want)
	}
	// order=created goes the other way.
	r := a.do(a.op, "GET", "/v2/tasks?order=created&limit=2", "")
	if got := listed(r); fmt.Sprint(got) != fmt.Sprint(made[:2]) {
		t.Fatalf("oldest first %v, want %v", got, made[:2])
	}
	if got := listed(a.do(a.op, "GET", nextLink(t, r), "")); fmt.Sprint(got) != fmt.Sprint(made[2:4]) {
		t.Fatalf("oldest first, page 2 %v, want %v", got, made[2:4])
	}

	// A caller who may see only the oldest task: newest first, the read
	// budget runs out before it; the page says so and the Link goes on.
	one := a.user(permit("GET", "/v2/tasks", "/v2/tasks/"+made[0]))
	r = a.do(one, "GET", "/v2/tasks?limit=1", "")
	if got := listed(r); len(got) != 0 || r.Header["X-Result-Cut"] != apigw.CutRead {
		t.Fatalf("cut page: %v, headers %v", got, r.Header)
	}
	next := nextLink(t, r)
	if next == "" {
		t.Fatal("a cut page without a continuation")
	}
	r = a.do(one, "GET", next, "")
	if got := listed(r); fmt.Sprint(got) != fmt.Sprint(made[:1]) || r.Header["X-Result-Cut"] != "" || r.Header["Link"] != "" {
		t.Fatalf("after the cut: %v, headers %v", got, r.Header)
	}

	// An order the store does not keep, over more than the budget: a 400
	// that says how to list instead, never a silent cut.
	if r := a.do(a.op, "GET", "/v2/tasks?order=type", ""); r.Status != 400 || !strings.Contains(r.Raw, "stored order") {
		t.Fatalf("order=type over %d tasks: %d %s", n, r.Status, r.Raw)
	}
	// A cursor of another collection is refused.
	if r := a.do(a.op, "GET", "/v2/tasks?cursor=eyJjIjoidXNlcnMiLCJvIjoiY3JlYXRlZCIsImEiOiIyMDI2LTAxLTAxVDAwOjAwOjAwLjAwMFojdTEifQ", ""); r.Status != 400 {
		t.Fatalf("a users cursor: %d %s", r.Status, r.Raw)
	}
}
