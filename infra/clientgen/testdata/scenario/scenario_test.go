// The scenario infra/clientgen drives through the local gateway with the
// client ogen generates from the served contract. It is compiled and run
// in the scratch module the client is generated into (never in the
// service's module); the platform is the test's, given by environment.
package scenario

import (
	"context"
	"os"
	"testing"
	"time"

	"cads/infra/clientgen/tools/ogenclient"
)

type bearer string

func (b bearer) BearerKey(context.Context, ogenclient.OperationName) (ogenclient.BearerKey, error) {
	return ogenclient.BearerKey{Token: string(b)}, nil
}

func client(t *testing.T, secret string) *ogenclient.Client {
	t.Helper()
	c, err := ogenclient.NewClient(os.Getenv("CADS_API_URL"), bearer(secret))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Each call decodes its answer with the generated types (ogen validates
// what it decodes); an answer of another type than the success is a
// failure, shown with what it held.
func TestScenario(t *testing.T) {
	ctx := context.Background()
	root := os.Getenv("CADS_ROOT_ACCOUNT")
	if root == "" || os.Getenv("CADS_API_URL") == "" {
		t.Fatal("CADS_API_URL, CADS_API_KEY and CADS_ROOT_ACCOUNT name the platform")
	}
	op := client(t, os.Getenv("CADS_API_KEY"))

	doc, err := op.GetOpenapiJSON(ctx)
	if d, ok := doc.(*ogenclient.GetOpenapiJSONOK); err != nil || !ok || (*d)["openapi"] == nil {
		t.Fatalf("GET /v2/openapi.json: %T %+v, %v", doc, doc, err)
	}

	self, err := op.GetUsersSelfAuthorization(ctx, ogenclient.GetUsersSelfAuthorizationParams{})
	if _, ok := self.(*ogenclient.Authorization); err != nil || !ok {
		t.Fatalf("GET /v2/users/self/authorization: %T %+v, %v", self, self, err)
	}

	accounts, err := op.GetAccounts(ctx, ogenclient.GetAccountsParams{})
	if a, ok := accounts.(*ogenclient.GetAccountsOKHeaders); err != nil || !ok || len(a.Response) == 0 {
		t.Fatalf("GET /v2/accounts: %T %+v, %v", accounts, accounts, err)
	}

	schemas, err := op.GetLogSchemas(ctx)
	if s, ok := schemas.(*ogenclient.GetLogSchemasOKApplicationJSON); err != nil || !ok || len(*s) == 0 {
		t.Fatalf("GET /v2/log-schemas: %T %+v, %v", schemas, schemas, err)
	}

	// A service user: the one response with a key's secret has a schema
	// of its own.
	created, err := op.PostAccountsByIdServiceUsers(ctx,
		ogenclient.NewOptServiceUserInput(ogenclient.ServiceUserInput{Name: ogenclient.NewOptString("deploy bot")}),
		ogenclient.PostAccountsByIdServiceUsersParams{ID: root})
	tagged, ok := created.(*ogenclient.ServiceUserCreatedHeaders)
	if err != nil || !ok || !tagged.ETag.Set {
		t.Fatalf("POST /v2/accounts/{id}/service-users: %T %+v, %v", created, created, err)
	}
	su := tagged.Response
	if len(su.AccessKeys) != 1 || su.AccessKeys[0].SecretKey == "" || su.Name != "deploy bot" {
		t.Fatalf("POST /v2/accounts/{id}/service-users: %T %+v, %v", created, created, err)
	}

	list, err := op.GetAccountsByIdServiceUsers(ctx, ogenclient.GetAccountsByIdServiceUsersParams{ID: root})
	l, ok := list.(*ogenclient.GetAccountsByIdServiceUsersOKHeaders)
	if err != nil || !ok {
		t.Fatalf("GET /v2/accounts/{id}/service-users: %T %+v, %v", list, list, err)
	}
	found := false
	for _, u := range l.Response {
		found = found || (u.ID == su.ID && len(u.AccessKeys) == 1 && u.AccessKeys[0].ID == su.AccessKeys[0].ID)
	}
	if !found {
		t.Fatalf("GET /v2/accounts/{id}/service-users: %s with its key is not listed: %+v", su.ID, l.Response)
	}

	// The generated client authenticates with the bearer header alone: the
	// service user's new key works through it.
	bot := client(t, su.AccessKeys[0].SecretKey)
	who, err := bot.GetUsersSelfAuthorization(ctx, ogenclient.GetUsersSelfAuthorizationParams{})
	if a, ok := who.(*ogenclient.Authorization); err != nil || !ok || a.ID != su.AccessKeys[0].ID {
		t.Fatalf("GET /v2/users/self/authorization as the service user: %T %+v, %v", who, who, err)
	}

	// An entitlement: the body with two shapes, once a generator skipped.
	ent, err := op.PostAccountsByIdEntitlements(ctx, &ogenclient.EntitlementCreate{
		Resource: ogenclient.NewOptEntitlementCreateResource(ogenclient.EntitlementCreateResourceApplications), Quantity: ogenclient.NewOptInt(5),
		Period: ogenclient.NewOptEntitlementCreatePeriod(ogenclient.EntitlementCreatePeriodMonth), UnitPrice: ogenclient.NewOptFloat64(10),
	}, ogenclient.PostAccountsByIdEntitlementsParams{ID: root})
	// A resource response carries its ETag: the generated type wraps the
	// body with the header.
	if e, ok := ent.(*ogenclient.EntitlementHeaders); err != nil || !ok || e.Response.ID == "" || !e.ETag.Set || e.ETag.Value == "" {
		t.Fatalf("POST /v2/accounts/{id}/entitlements: %T %+v, %v", ent, ent, err)
	}

	// An application, started, then a task with parameters: a generated
	// client can send them.
	created2, err := op.PostApplications(ctx, &ogenclient.ApplicationInput{
		Name: ogenclient.NewOptString("Shop"), Aliases: []string{"clientgen.example.com"}})
	wrapped, ok := created2.(*ogenclient.ApplicationHeaders)
	if err != nil || !ok || !wrapped.ETag.Set {
		t.Fatalf("POST /v2/applications: %T %+v, %v", created2, created2, err)
	}
	app := wrapped.Response
	for _, tc := range []struct {
		typ    ogenclient.TaskCreateType
		params ogenclient.TaskCreateParameters
	}{
		{ogenclient.TaskCreateTypeStart, nil},
		{ogenclient.TaskCreateTypeEnterMaintenance, ogenclient.TaskCreateParameters{"maximum_duration": []byte("3600")}},
	} {
		req := &ogenclient.TaskCreate{Type: tc.typ, Target: ogenclient.NewOptTaskCreateTarget(ogenclient.NewStringTaskCreateTarget(app.Href))}
		if tc.params != nil {
			req.Parameters = ogenclient.NewOptTaskCreateParameters(tc.params)
		}
		res, err := op.PostTasks(ctx, req, ogenclient.PostTasksParams{Wait: ogenclient.NewOptInt(5)})
		task, ok := res.(*ogenclient.PostTasksOK)
		if err != nil || !ok || task.State != ogenclient.TaskStateSuccess {
			t.Fatalf("POST /v2/tasks %s: %T %+v, %v", tc.typ, res, res, err)
		}
		if tc.params != nil && string(task.Parameters["maximum_duration"]) != "3600" {
			t.Errorf("POST /v2/tasks %s: parameters %v, want those sent", tc.typ, task.Parameters)
		}
	}

	// A custom log record, every member the contract requires.
	logged, err := op.PostApplicationsByIdLogs(ctx, ogenclient.NewCustomLogPostApplicationsByIdLogsReq(ogenclient.CustomLog{
		Created: time.Now().UTC(), Stream: "deploy", Message: "v2 live", Address: "192.0.2.1", Filename: "deploy.log", Hostname: "ci-1",
	}), ogenclient.PostApplicationsByIdLogsParams{ID: app.ID})
	if ids, ok := logged.(*ogenclient.PostApplicationsByIdLogsOKApplicationJSON); err != nil || !ok || len(*ids) != 1 {
		t.Fatalf("POST /v2/applications/{id}/logs: %T %+v, %v", logged, logged, err)
	}

	gone, err := op.DeleteAccountsByIdServiceUsersByServiceUserId(ctx,
		ogenclient.DeleteAccountsByIdServiceUsersByServiceUserIdParams{ID: root, ServiceUserID: su.ID})
	if d, ok := gone.(*ogenclient.ServiceUser); err != nil || !ok || d.ID != su.ID {
		t.Fatalf("DELETE /v2/accounts/{id}/service-users/{service_user_id}: %T %+v, %v", gone, gone, err)
	}
}
