package local_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// A client written for the product's later published API description
// (the reference document, docs/reference-differences.md) drives its
// requests through the local gateway, and every body it sends and reads
// is checked against that description's schemas with kin-openapi.
// testdata/reference-shapes.json holds the schemas used here, taken from
// the description as facts: names, types, patterns, required members,
// with its prose left out.

// loadReference loads the schemas and makes them checkable:
//
//   - additionalProperties: false is dropped everywhere. The description
//     combines objects with allOf whose members each say
//     additionalProperties: false (Account: AccountIdentity, which allows
//     href only, with AccountConfiguration), which no object with members
//     of two parts can satisfy. Members this service adds are checked
//     instead against ourExtras, the table of docs/reference-differences.md.
//   - AddressSet's last allOf member, which makes entries a single
//     AddressSetEntry while its AddressSetConfiguration member makes it an
//     array of them, is dropped: no value is both.
func loadReference(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("testdata/reference-shapes.json")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*openapi3.Schema]bool{}
	var relax func(r *openapi3.SchemaRef)
	relax = func(r *openapi3.SchemaRef) {
		if r == nil || r.Value == nil || seen[r.Value] {
			return
		}
		s := r.Value
		seen[s] = true
		if h := s.AdditionalProperties.Has; h != nil && !*h {
			s.AdditionalProperties.Has = nil
		}
		for _, p := range s.Properties {
			relax(p)
		}
		for _, l := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
			for _, m := range l {
				relax(m)
			}
		}
		relax(s.Items)
		relax(s.Not)
		relax(s.AdditionalProperties.Schema)
	}
	for _, s := range doc.Components.Schemas {
		relax(s)
	}
	as := doc.Components.Schemas["AddressSet"].Value
	last := as.AllOf[len(as.AllOf)-1].Value
	if e := last.Properties["entries"]; len(as.AllOf) != 3 || e == nil || e.Ref != "#/components/schemas/AddressSetEntry" {
		t.Fatalf("AddressSet's allOf is not as loadReference expects; look at it again: %+v", as.AllOf)
	}
	as.AllOf = as.AllOf[:2]
	return doc
}

// ourExtras are the members this service's responses have beyond the
// reference's schema, by schema: each is a row of the table in
// docs/reference-differences.md.
var ourExtras = map[string][]string{
	"Account":         {"id", "parent", "created", "updated"},
	"Entitlement":     {"id", "account", "resource", "quantity", "period", "unit_price", "expiry", "active", "updated"},
	"User":            {"id", "href", "email", "created", "updated"},
	"AccessKey":       {"id", "created"},
	"AccessKeySecret": {"id", "created"},
	"Authorization":   {"id", "created", "principal", "decision"},
	"ServiceUser":     {"id", "created", "updated"},
	"AddressSet":      {"id"},
	"Task":            {"id"},
	"ApplicationLog":  {},
}

// declared is every member name s declares, through allOf, anyOf and oneOf.
func declared(s *openapi3.Schema, into map[string]bool) {
	for name := range s.Properties {
		into[name] = true
	}
	for _, l := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, m := range l {
			declared(m.Value, into)
		}
	}
}

type refChecker struct {
	t   *testing.T
	doc *openapi3.T
}

// schema returns a component schema by name.
func (rc refChecker) schema(name string) *openapi3.Schema {
	rc.t.Helper()
	s := rc.doc.Components.Schemas[name]
	if s == nil {
		rc.t.Fatalf("no schema %s in the reference shapes", name)
	}
	return s.Value
}

// request checks that body, what the test is about to send, is the
// reference's shape for name.
func (rc refChecker) request(name string, body any) any {
	rc.t.Helper()
	v := roundTrip(rc.t, body)
	if err := rc.schema(name).VisitJSON(v, openapi3.VisitAsRequest(), openapi3.EnableFormatValidation(), openapi3.MultiErrors()); err != nil {
		rc.t.Fatalf("the test's request is not a %s: %v", name, err)
	}
	return body
}

// response checks a response body against the reference's schema for
// name (as) and that every member it has beyond the schema's is one of
// ourExtras[extras].
func (rc refChecker) response(what, as, extras string, r reply) {
	rc.t.Helper()
	var v any
	if err := json.Unmarshal([]byte(r.Raw), &v); err != nil {
		rc.t.Fatalf("%s: %d %s: %v", what, r.Status, r.Raw, err)
	}
	if err := rc.schema(as).VisitJSON(v, openapi3.VisitAsResponse(), openapi3.EnableFormatValidation(), openapi3.MultiErrors()); err != nil {
		rc.t.Errorf("%s: not the reference's %s: %v\n%s", what, as, err, r.Raw)
	}
	known := map[string]bool{}
	declared(rc.schema(as), known)
	var extra []string
	for k := range v.(map[string]any) {
		if !known[k] && !slices.Contains(ourExtras[extras], k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		rc.t.Errorf("%s: members %v are neither the reference's %s nor listed in ourExtras[%q] (docs/reference-differences.md)", what, extra, as, extras)
	}
}

func roundTrip(t *testing.T, body any) any {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func (rc refChecker) must(what string, want int, r reply) reply {
	rc.t.Helper()
	if r.Status != want {
		rc.t.Fatalf("%s: %d, want %d: %s", what, r.Status, want, r.Raw)
	}
	return r
}

// The requests of issue 18 that were refused, and the responses whose
// nulls broke the reference's types, through the local gateway.
func TestReferenceShapesThroughTheGateway(t *testing.T) {
	p, c := start(t)
	rc := refChecker{t: t, doc: loadReference(t)}
	op := p.Bootstrap.Secret
	me := rc.must("who am I", 200, c.do("GET", "/v2/users/self", op, nil)).Body["id"].(string)
	root := "/v2/accounts/" + p.Bootstrap.RootAccount

	// Accounts: no owner is no member, not null.
	acct := rc.must("POST /v2/accounts", 200, c.do("POST", "/v2/accounts", op, map[string]any{"name": "Reference Shapes"}))
	rc.response("POST /v2/accounts", "Account", "Account", acct)
	href := acct.Body["href"].(string)
	rc.response("GET /v2/accounts/{id}", "Account", "Account", rc.must("GET account", 200, c.do("GET", href, op, nil)))

	// Entitlements from the reference's EntitlementPost.
	ent := rc.request("EntitlementPost", map[string]any{"plan_id": "pro-2026", "started": time.Now().UTC().Format(time.RFC3339)})
	rc.response("POST .../entitlements", "Entitlement", "Entitlement", rc.must("POST entitlement", 200, c.do("POST", href+"/entitlements", op, ent)))

	// Users: phone, by the caller's own id.
	patch := rc.request("UserPatch", map[string]any{"phone": "+1 555 010 0199"})
	u := rc.must("PATCH user", 200, c.do("PATCH", "/v2/users/"+me, op, patch))
	rc.response("PATCH /v2/users/{id}", "User", "User", u)
	if u.Body["phone"] != "+1 555 010 0199" {
		t.Fatalf("phone not kept: %s", u.Raw)
	}

	// Access keys without account, expiry or last use.
	key := rc.must("POST access key", 200, c.do("POST", "/v2/users/"+me+"/access-keys", op, rc.request("AccessKeyConfiguration", map[string]any{"type": "bearer"})))
	rc.response("POST .../access-keys", "AccessKeySecret", "AccessKeySecret", key)
	rc.response("GET .../access-keys/{id}", "AccessKey", "AccessKey", rc.must("GET access key", 200, c.do("GET", key.Body["href"].(string), op, nil)))

	// The caller's authorization at the reference's path, with the own id.
	for _, who := range []string{me, "self"} {
		rc.response("GET /v2/users/"+who+"/authorization", "AccessKey", "Authorization", rc.must("GET authorization", 200, c.do("GET", "/v2/users/"+who+"/authorization", op, nil)))
	}
	sw := rc.request("AuthorizationAccount", map[string]any{"account": href})
	session := rc.must("POST authorization", 200, c.do("POST", "/v2/users/"+me+"/authorization", op, sw))
	rc.response("POST /v2/users/{id}/authorization", "AccessKeySecret", "AccessKeySecret", session)
	if session.Body["account"] != href || session.Body["durability"] != "session" {
		t.Fatalf("switch: %s", session.Raw)
	}
	// Someone else's id: refused without a word about them. The operator
	// holds no permit for these paths, so the authorizer answers (the
	// function's own 404 for a caller whose roles reach them is
	// shared/users's test); the answer is the same whether that user
	// exists or not.
	// A user made without a name has no name member: the reference's Name
	// is never empty, so "" would break it. Nor can a name be set to
	// nothing later.
	nameless := rc.must("POST user", 200, c.do("POST", "/v2/users", op, map[string]any{"email": "someone@example.com"}))
	other := nameless.Body["id"].(string)
	rc.response("POST /v2/users without a name", "User", "User", nameless)
	for _, r := range []reply{nameless, rc.must("GET user", 200, c.do("GET", "/v2/users/"+other, op, nil))} {
		rc.response("a user without a name", "User", "User", r)
		if _, ok := r.Body["name"]; ok {
			t.Errorf("a user without a name has a name member: %s", r.Raw)
		}
	}
	for _, bad := range []string{"", "   "} {
		for _, r := range []reply{
			c.do("POST", "/v2/users", op, map[string]any{"email": "blank@example.com", "name": bad}),
			c.do("PATCH", "/v2/users/"+other, op, map[string]any{"name": bad}),
		} {
			if r.Status != 400 || r.errorType(t) != "bad_request" || !strings.Contains(r.Raw, "name must not be empty") {
				t.Errorf("name %q: %d %s", bad, r.Status, r.Raw)
			}
		}
	}
	named := rc.must("PATCH user name", 200, c.do("PATCH", "/v2/users/"+other, op, rc.request("UserPatch", map[string]any{"name": "Someone"})))
	rc.response("PATCH /v2/users/{id} name", "User", "User", named)
	if named.Body["name"] != "Someone" {
		t.Errorf("name not set: %s", named.Raw)
	}
	for _, method := range []string{"GET", "POST"} {
		var got []string
		for _, id := range []string{other, "nosuchuser"} {
			r := c.do(method, "/v2/users/"+id+"/authorization", op, sw)
			if r.Status != 403 || r.errorType(t) != "forbidden" || strings.Contains(r.Raw, "someone") {
				t.Errorf("%s %s: %d %s", method, id, r.Status, r.Raw)
			}
			got = append(got, strings.ReplaceAll(r.Raw, id, "<id>"))
		}
		if got[0] != got[1] {
			t.Errorf("%s: an existing and a missing user answer differently:\n%s\n%s", method, got[0], got[1])
		}
	}

	// Service users: their keys' absent expiry and last use.
	su := rc.must("POST service user", 200, c.do("POST", root+"/service-users", op, map[string]any{"name": "ci"}))
	rc.response("POST .../service-users", "ServiceUser", "ServiceUser", su)
	rc.response("GET .../service-users/{id}", "ServiceUser", "ServiceUser", rc.must("GET service user", 200, c.do("GET", su.Body["href"].(string), op, nil)))

	// Address sets of type domains.
	set := rc.request("AddressSetPost", map[string]any{"name": "crawlers", "type": "domains", "parameters": map[string]any{"domains": []string{"googlebot.com", "search.msn.com"}}})
	rc.response("POST /v2/address-sets", "AddressSet", "AddressSet", rc.must("POST address set", 200, c.do("POST", "/v2/address-sets", op, set)))

	// enter_maintenance with maximum_duration, on a running application.
	app := rc.must("POST application", 200, c.do("POST", "/v2/applications", op, map[string]any{"name": "Shop", "aliases": []string{"refshapes.example.com"}}))
	target := app.Body["href"].(string)
	if r := c.do("POST", "/v2/tasks?wait=5", op, map[string]any{"type": "start", "target": target}); r.Status != 200 || r.Body["state"] != "success" {
		t.Fatalf("start: %d %s", r.Status, r.Raw)
	}
	enter := rc.request("TaskEnterMaintenance", map[string]any{"type": "enter_maintenance", "target": target, "parameters": map[string]any{"maximum_duration": 3600}})
	task := c.do("POST", "/v2/tasks?wait=5", op, enter)
	rc.response("POST /v2/tasks", "Task", "Task", task)
	if task.Status != 200 || task.Body["state"] != "success" || !strings.Contains(task.Body["message"].(string), "it exits maintenance at") {
		t.Fatalf("enter_maintenance: %d %s", task.Status, task.Raw)
	}

	// Logs: result rows are objects keyed by field, grouped ones too.
	logs := target + "/logs"
	rc.must("POST logs", 200, c.do("POST", logs, op, map[string]any{"created": time.Now().UTC().Format(time.RFC3339), "stream": "deploy", "message": "v2 live",
		"address": "192.0.2.1", "filename": "deploy.log", "hostname": "ci-1"}))
	from := url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	r := rc.must("GET logs", 200, c.do("GET", logs+"?type=custom&select=stream,message&from="+from, op, nil))
	rc.response("GET .../logs", "ApplicationLog", "ApplicationLog", r)
	rows := r.Body["records"].(map[string]any)["result"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["message"] != "v2 live" {
		t.Fatalf("logs rows: %s", r.Raw)
	}
	r = rc.must("GET logs grouped", 200, c.do("GET", logs+"?type=custom&groupby=stream&from="+from, op, nil))
	rc.response("GET .../logs?groupby", "ApplicationLog", "ApplicationLog", r)
	if g := r.Body["group"].(map[string]any)["result"].([]any); len(g) != 1 || g[0].(map[string]any)["stream"] != "deploy" || g[0].(map[string]any)["count"] != 1.0 {
		t.Fatalf("grouped rows: %s", r.Raw)
	}

	// Validation stays strict: an unknown member is still a 400.
	for _, c2 := range []struct {
		method, path string
		body         any
	}{
		{"PATCH", "/v2/users/" + me, map[string]any{"phone": "+1 555", "fax": "+1 556"}},
		{"POST", href + "/entitlements", map[string]any{"plan_id": "pro", "seats": 3}},
		{"POST", "/v2/address-sets", map[string]any{"name": "x", "type": "domains", "parameters": map[string]any{"domains": []string{"a.com"}, "ttl": 60}}},
		{"POST", "/v2/tasks", map[string]any{"type": "enter_maintenance", "target": target, "parameters": map[string]any{"maximum_duration": 60, "reason": "x"}}},
	} {
		if r := c.do(c2.method, c2.path, op, c2.body); r.Status != 400 || r.errorType(t) != "bad_request" || !strings.Contains(r.Raw, "unknown field") {
			t.Errorf("%s %s %v: %d %s", c2.method, c2.path, c2.body, r.Status, r.Raw)
		}
	}
}

// The checks above can fail: the shapes this service used to answer are
// refused by the same schemas.
func TestReferenceShapesRefuseTheOldShapes(t *testing.T) {
	rc := refChecker{t: t, doc: loadReference(t)}
	for _, c := range []struct{ schema, body string }{
		{"Account", `{"href":"/v2/accounts/a1","id":"a1","name":"A","owner":null}`},
		{"AccessKey", `{"href":"/v2/users/u/access-keys/k","type":"bearer","durability":"persistent","account":null}`},
		{"AccessKey", `{"href":"/v2/users/u/access-keys/k","type":"bearer","durability":"persistent","expiry":null}`},
		{"AccessKey", `{"href":"/v2/users/u/access-keys/k","type":"bearer","durability":"persistent","last_used":null}`},
		{"ServiceUser", `{"href":"/v2/accounts/a/service-users/s","access_keys":[{"type":"bearer","last_used":null}]}`},
		{"Entitlement", `{"href":"/v2/accounts/a/entitlements/e","plan_id":null}`},
		{"ApplicationLog", `{"from":"2026-01-01T00:00:00Z","to":"2026-01-01T01:00:00Z","group":{"fields":[],"result":[]},"records":{"count":1,"fields":["status_code"],"result":[[200]],"start":1}}`},
		{"ApplicationLog", `{"from":"2026-01-01T00:00:00Z","to":"2026-01-01T01:00:00Z","group":{"fields":["stream","count"],"result":[["a",1]]},"records":{"count":0,"fields":[],"result":[],"start":1}}`},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.body), &v); err != nil {
			t.Fatal(err)
		}
		if err := rc.schema(c.schema).VisitJSON(v, openapi3.VisitAsResponse(), openapi3.EnableFormatValidation()); err == nil {
			t.Errorf("%s accepted %s", c.schema, c.body)
		}
	}
}
