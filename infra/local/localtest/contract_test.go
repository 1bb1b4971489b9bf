package localtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The contract catches what it is there to catch, and passes what the
// document describes.
func TestContractChecksResponses(t *testing.T) {
	ctx := context.Background()
	c, err := LoadContract(ctx)
	if err != nil {
		t.Fatal(err)
	}
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	user := `{"id":"u1","href":"/v2/users/u1","email":"a@example.com","name":"A","created":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z"}`
	notFound := `{"status":404,"error":{"type":"not_found","message":"no user"}}`
	cases := []struct {
		name, method, target string
		status               int
		header               http.Header
		body                 string
		fails                string // "" = passes; else a part of the error
	}{
		{"a user", "GET", "/v2/users/u1", 200, jsonCT, user, ""},
		{"a list of users", "GET", "/v2/users?limit=5", 200, http.Header{"Content-Type": {"application/json"}, "Link": {`</v2/users?cursor=x&limit=5>; rel="next"`}}, "[" + user + "]", ""},
		{"a declared error", "GET", "/v2/users/u1", 404, jsonCT, notFound, ""},
		{"an unknown route's 404", "GET", "/v2/nothing", 404, jsonCT, notFound, ""},
		{"an undeclared status", "GET", "/v2/users/u1", 202, jsonCT, user, "status is not supported"},
		{"a field of the wrong type", "GET", "/v2/users/u1", 200, jsonCT, strings.Replace(user, `"name":"A"`, `"name":7`, 1), "doesn't match"},
		{"a field the document lacks", "GET", "/v2/users/u1", 200, jsonCT, strings.Replace(user, `"name":"A"`, `"name":"A","extra":1`, 1), "doesn't match"},
		{"a missing field", "GET", "/v2/users/u1", 200, jsonCT, strings.Replace(user, `"email":"a@example.com",`, ``, 1), "doesn't match"},
		{"a date-time that is not one", "GET", "/v2/users/u1", 200, jsonCT, strings.Replace(user, `"created":"2026-01-01T00:00:00Z"`, `"created":"yesterday"`, 1), "doesn't match"},
		{"an email that is not one", "GET", "/v2/users/u1", 200, jsonCT, strings.Replace(user, `"email":"a@example.com"`, `"email":"nobody"`, 1), "doesn't match"},
		{"a list member of the wrong type", "GET", "/v2/users", 200, jsonCT, "[" + user + `,{"id":1}]`, "doesn't match"},
		{"a body that is not JSON", "GET", "/v2/users/u1", 200, jsonCT, `{"id":`, "not JSON"},
		{"an undeclared content type", "GET", "/v2/users/u1", 200, http.Header{"Content-Type": {"text/html"}}, user, "Content-Type"},
		{"an error body of another shape", "GET", "/v2/users/u1", 404, jsonCT, `{"message":"no user"}`, "Error schema"},
		{"an error whose status disagrees", "GET", "/v2/users/u1", 404, jsonCT, strings.Replace(notFound, "404", "400", 1), "says status"},
		{"an error off the document's routes", "GET", "/v2/nothing", 404, http.Header{"Content-Type": {"text/plain"}}, "404 page not found", "Content-Type"},
		{"a success off the document's routes", "GET", "/v2/nothing", 200, jsonCT, `{}`, "does not have"},
		{"a bad X-Result-Cut", "GET", "/v2/users", 200, http.Header{"Content-Type": {"application/json"}, "X-Result-Cut": {"sometimes"}}, "[]", "X-Result-Cut"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, nil)
			err := c.Check(ctx, req, tc.status, tc.header, []byte(tc.body))
			switch {
			case tc.fails == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.fails != "" && err == nil:
				t.Errorf("passed; want a failure naming %q", tc.fails)
			case tc.fails != "" && !strings.Contains(err.Error(), tc.fails):
				t.Errorf("failure %q does not name %q", err, tc.fails)
			}
		})
	}
}

// An accepted request is checked too: what the document calls invalid and
// the platform accepted fails, and what it describes passes.
func TestContractChecksAcceptedRequests(t *testing.T) {
	ctx := context.Background()
	c, err := LoadContract(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, target, ct, body string
		bearer                         bool
		fails                          string
	}{
		{"a user", "POST", "/v2/users", "application/json", `{"email":"ada@example.com","name":"Ada"}`, true, ""},
		{"the query credential", "POST", "/v2/users?authorization=s", "application/json", `{"email":"ada@example.com"}`, false, ""},
		{"a read", "GET", "/v2/users?limit=5&order=-created", "", "", true, ""},
		{"a binary archive", "PUT", "/v2/tests/smoke", "application/x-tar+x-bzip2", "BZh9\x00\x01", true, ""},
		{"no credential", "POST", "/v2/users", "application/json", `{"email":"ada@example.com"}`, false, "security requirements failed"},
		{"a member the document lacks", "POST", "/v2/users", "application/json", `{"email":"ada@example.com","fax":"1"}`, true, "fax"},
		{"a missing required member", "POST", "/v2/users", "application/json", `{"name":"Ada"}`, true, "email"},
		{"a member of the wrong type", "POST", "/v2/users", "application/json", `{"email":"ada@example.com","name":7}`, true, "name"},
		{"an empty name", "POST", "/v2/users", "application/json", `{"email":"ada@example.com","name":""}`, true, "name"},
		{"a bad query parameter", "GET", "/v2/users?limit=zero", "", "", true, "limit"},
		{"an undeclared content type", "POST", "/v2/users", "text/plain", `email`, true, "Content-Type"},
		{"a body where none is declared", "GET", "/v2/users", "application/json", `{}`, true, "body"},
		{"an operation the document lacks", "DELETE", "/v2/users", "", "", true, "no operation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.ct != "" {
				req.Header.Set("Content-Type", tc.ct)
			}
			if tc.bearer {
				req.Header.Set("Authorization", "Bearer s")
			}
			err := c.CheckRequest(ctx, req, []byte(tc.body))
			switch {
			case tc.fails == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.fails != "" && err == nil:
				t.Errorf("passed; want a failure naming %q", tc.fails)
			case tc.fails != "" && !strings.Contains(err.Error(), tc.fails):
				t.Errorf("failure %q does not name %q", err, tc.fails)
			}
		})
	}
}

// Requests the server refuses with a 400 (its bad-input tests send them)
// are refused by the document too, so that a validating client refuses
// them before sending; and the valid forms beside them pass.
func TestContractRefusesWhatTheServerRefuses(t *testing.T) {
	ctx := context.Background()
	c, err := LoadContract(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const created = `"created":"2026-11-27T10:00:00Z"`
	log := `{` + created + `,"stream":"deploy","message":"up","address":"192.0.2.1","filename":"deploy.log","hostname":"ci-1"}`
	session := `{"type":"user.RandomSession","requests":[{"name":"home","method":"GET","url":"https://shop.example.com/"}]}`
	cases := []struct {
		name, method, target, ct, body string
		fails                          string
	}{
		{"a custom log record", "POST", "/v2/applications/k3x9q2/logs", "application/json", log, ""},
		{"a custom log without hostname", "POST", "/v2/applications/k3x9q2/logs", "application/json", strings.Replace(log, `,"hostname":"ci-1"`, "", 1), "hostname"},
		{"a custom log with an empty stream", "POST", "/v2/applications/k3x9q2/logs", "application/json", strings.Replace(log, `"deploy"`, `""`, 1), "stream"},
		{"a custom log from no address", "POST", "/v2/applications/k3x9q2/logs", "application/json", strings.Replace(log, "192.0.2.1", "somewhere", 1), "address"},
		{"a resource allocation", "POST", "/v2/accounts/k3x9q2/entitlements", "application/json", `{"resource":"applications","quantity":5,"period":"month"}`, ""},
		{"a plan alone", "POST", "/v2/accounts/k3x9q2/entitlements", "application/json", `{"plan_id":"business"}`, ""},
		{"a resource that is no kind", "POST", "/v2/accounts/k3x9q2/entitlements", "application/json", `{"resource":"application","quantity":5}`, "resource"},
		{"a resource without quantity", "POST", "/v2/accounts/k3x9q2/entitlements", "application/json", `{"resource":"applications"}`, "quantity"},
		{"a plan with a quantity", "POST", "/v2/accounts/k3x9q2/entitlements", "application/json", `{"plan_id":"business","quantity":1}`, "resource"},
		{"neither plan nor resource", "POST", "/v2/accounts/k3x9q2/entitlements", "application/json", `{"period":"month"}`, "resource"},
		{"a period that is none", "POST", "/v2/accounts/k3x9q2/entitlements", "application/json", `{"resource":"applications","quantity":5,"period":"week"}`, "period"},
		{"a test configuration", "PUT", "/v2/tests/smoke", "application/json", `{"probabilities":1,"models":{"browse":` + session + `}}`, ""},
		{"a session given by file", "PUT", "/v2/tests/smoke", "application/json", `{"probabilities":0.5,"models":{"browse":{"file":"browse.json"}}}`, ""},
		{"a probability of 0", "PUT", "/v2/tests/smoke", "application/json", `{"probabilities":0,"models":{"browse":` + session + `}}`, "probabilities"},
		{"no models", "PUT", "/v2/tests/smoke", "application/json", `{"probabilities":1,"models":{}}`, "models"},
		{"a session with no requests", "PUT", "/v2/tests/smoke", "application/json", `{"probabilities":1,"models":{"browse":{"type":"user.RandomSession","requests":[]}}}`, "requests"},
		{"a file beside a session", "PUT", "/v2/tests/smoke", "application/json", `{"probabilities":1,"models":{"browse":{"file":"b.json","type":"user.RandomSession"}}}`, "browse"},
		{"a method that is none", "PATCH", "/v2/tests/smoke", "application/json", `{"probabilities":1,"models":{"browse":` + strings.Replace(session, `"GET"`, `"FETCH"`, 1) + `}}`, "method"},
		{"a relative URL", "PATCH", "/v2/tests/smoke", "application/json", `{"probabilities":1,"models":{"browse":` + strings.Replace(session, "https://shop.example.com/", "/home", 1) + `}}`, "url"},
		{"a resolution of more than ten years", "GET", "/v2/applications/k3x9q2/metrics?resolution=316224010", "", "", "resolution"},
		// The text rule (docs/api.md#text): no control character in any
		// string, at any depth; tab and newline where a field is lines.
		{"a set", "POST", "/v2/address-sets", "application/json", `{"name":"office","type":"manual","description":"HQ"}`, ""},
		{"a bell in a description", "POST", "/v2/address-sets", "application/json", `{"name":"office","type":"manual","description":"ding\u0007"}`, "description"},
		{"an escape sequence in a description", "POST", "/v2/address-sets", "application/json", `{"name":"office","type":"manual","description":"\u001b[2Jhacked"}`, "description"},
		{"a NUL in a name", "POST", "/v2/address-sets", "application/json", `{"name":"office\u0000","type":"manual"}`, "name"},
		{"a NUL in an entry's description", "POST", "/v2/address-sets", "application/json", `{"name":"office","type":"manual","entries":[{"address":"192.0.2.1","description":"\u0000"}]}`, "description"},
		{"a C1 control in a role name", "POST", "/v2/accounts/k3x9q2/roles", "application/json", `{"name":"Reader\u0085"}`, "name"},
		{"a newline in a user's name", "POST", "/v2/users", "application/json", `{"email":"ada@example.com","name":"Ada\nLovelace"}`, "name"},
		{"lines in a log message", "POST", "/v2/applications/k3x9q2/logs", "application/json", strings.Replace(log, `"up"`, `"up\n\tagain"`, 1), ""},
		{"a bell in a log message", "POST", "/v2/applications/k3x9q2/logs", "application/json", strings.Replace(log, `"up"`, `"up\u0007"`, 1), "message"},
		// Lengths and formats the handlers enforce.
		{"a role name of 51 characters", "POST", "/v2/accounts/k3x9q2/roles", "application/json", `{"name":"` + strings.Repeat("r", 51) + `"}`, "name"},
		{"a service user name of 33 characters", "POST", "/v2/accounts/k3x9q2/service-users", "application/json", `{"name":"` + strings.Repeat("s", 33) + `"}`, "name"},
		{"a page control name of 51 characters", "POST", "/v2/applications/k3x9q2/pagecontrols", "application/json", `{"name":"` + strings.Repeat("p", 51) + `","mode":"request","conditions":{},"actions":[]}`, "name"},
		{"an action secret that is not base64", "POST", "/v2/applications/k3x9q2/actions", "application/json", `{"id":"ping","url":"https://ops.example.com/ping","secret_key":"not base64!"}`, "secret_key"},
		{"an entitlement patch that changes nothing", "PATCH", "/v2/accounts/k3x9q2/entitlements/e1", "application/json", `{}`, "properties"},
		// prepare-for-download's parameters.
		{"an archive of an hour", "POST", "/v2/tasks", "application/json", `{"type":"prepare-for-download","parameters":{"reference":"/v2/archived-logs/applications/k3x9q2/custom","from":"2026-11-27T10:00:00Z","to":"2026-11-27T11:00:00Z","retention":5}}`, ""},
		{"an archive off the hour", "POST", "/v2/tasks", "application/json", `{"type":"prepare-for-download","parameters":{"reference":"/v2/archived-logs/applications/k3x9q2/custom","from":"2026-11-27T10:01:00Z","to":"2026-11-27T11:00:00Z"}}`, "from"},
		{"an archive kept two days", "POST", "/v2/tasks", "application/json", `{"type":"prepare-for-download","parameters":{"reference":"/v2/archived-logs/applications/k3x9q2/custom","from":"2026-11-27T10:00:00Z","to":"2026-11-27T11:00:00Z","retention":2}}`, "retention"},
		{"an archive of no reference", "POST", "/v2/tasks", "application/json", `{"type":"prepare-for-download","parameters":{"from":"2026-11-27T10:00:00Z","to":"2026-11-27T11:00:00Z"}}`, "reference"},
	}
	// kin-openapi's request validator leaves out some of JSON Schema
	// 2020-12 (if/then/else); the body is also checked in the document's
	// own dialect, as responses are.
	bodySchema := map[string]string{
		"/v2/applications/k3x9q2/logs":     "/components/schemas/CustomLog",
		"/v2/accounts/k3x9q2/entitlements": "/components/schemas/EntitlementCreate",
		"/v2/tests/smoke":                  "/components/schemas/TestConfiguration",
		"/v2/tasks":                        "/components/schemas/TaskCreate",
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.ct != "" {
				req.Header.Set("Content-Type", tc.ct)
			}
			req.Header.Set("Authorization", "Bearer s")
			err := c.CheckRequest(ctx, req, []byte(tc.body))
			if ptr := bodySchema[req.URL.Path]; err == nil && ptr != "" {
				err = c.schemas.validate(ptr, []byte(tc.body))
			}
			switch {
			case tc.fails == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.fails != "" && err == nil:
				t.Errorf("passed; want a failure naming %q", tc.fails)
			case tc.fails != "" && !strings.Contains(err.Error(), tc.fails):
				t.Errorf("failure %q does not name %q", err, tc.fails)
			}
		})
	}
}
