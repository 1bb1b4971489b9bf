// The scenario infra/clientgen drives through the local gateway with the
// client ogen generates from the served contract. It is compiled and run
// in the scratch module the client is generated into (never in the
// service's module); the platform is the test's, given by environment.
//
// It calls every operation of the served document at least once and
// fails if one was not answered with a success: the operations are read
// from the document, and the calls from the wire (every request the
// generated client sends goes through recorder).
package scenario

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-faster/jx"

	"cads/infra/clientgen/tools/ogenclient"
)

type bearer string

func (b bearer) BearerKey(context.Context, ogenclient.OperationName) (ogenclient.BearerKey, error) {
	return ogenclient.BearerKey{Token: string(b)}, nil
}

// recorder is the generated clients' HTTP client: it keeps the method,
// path and status of every exchange.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

type call struct {
	method, path string
	status       int
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultClient.Do(req)
	status := 0
	if err == nil {
		status = res.StatusCode
	}
	r.mu.Lock()
	r.calls = append(r.calls, call{req.Method, req.URL.Path, status})
	r.mu.Unlock()
	return res, err
}

func (r *recorder) client(t *testing.T, secret string) *ogenclient.Client {
	t.Helper()
	c, err := ogenclient.NewClient(os.Getenv("CADS_API_URL"), bearer(secret), ogenclient.WithClient(r))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reply is a generated method's two results.
type reply struct {
	res any
	err error
}

func r(res any, err error) reply { return reply{res, err} }

// want is the answer as the success type T: an error (a transport
// failure, or an answer ogen could not decode or validate) or an answer
// of another type (another status) fails the scenario, shown with what
// it held.
func want[T any](t *testing.T, x reply) T {
	t.Helper()
	v, ok := x.res.(T)
	if !ok && x.err == nil {
		// A response with headers (an ETag) comes wrapped: *XHeaders
		// whose Response is the X asked for.
		if rv := reflect.ValueOf(x.res); rv.Kind() == reflect.Pointer && rv.Elem().Kind() == reflect.Struct {
			if f := rv.Elem().FieldByName("Response"); f.IsValid() && f.CanAddr() {
				v, ok = f.Addr().Interface().(T)
			}
		}
	}
	if x.err != nil || !ok {
		var zero T
		t.Fatalf("got %T %+v, error %v; want %T", x.res, x.res, x.err, zero)
	}
	return v
}

func TestScenario(t *testing.T) {
	ctx := context.Background()
	root := os.Getenv("CADS_ROOT_ACCOUNT")
	if root == "" || os.Getenv("CADS_API_URL") == "" {
		t.Fatal("CADS_API_URL, CADS_API_KEY and CADS_ROOT_ACCOUNT name the platform")
	}
	rec := &recorder{}
	op := rec.client(t, os.Getenv("CADS_API_KEY"))
	// Names unique to the run: the scenario may run twice on one platform.
	run := fmt.Sprintf("%x", time.Now().UnixNano()%(1<<32))
	now := time.Now().UTC()
	hour := now.Truncate(time.Hour)
	from, to := hour.Add(-time.Hour).Format(time.RFC3339), hour.Add(time.Hour).Format(time.RFC3339)

	// ------------------------------------------------------------ the document
	doc := want[*ogenclient.GetOpenapiJSONOK](t, r(op.GetOpenapiJSON(ctx)))
	ops := operations(t, *doc)
	defer func() {
		if !t.Failed() {
			covered(t, ops, rec.calls)
		}
	}()

	// ------------------------------------------------------------ identity
	rootHref := "/v2/accounts/" + root
	self := want[*ogenclient.Authorization](t, r(op.GetUsersSelfAuthorization(ctx, ogenclient.GetUsersSelfAuthorizationParams{})))
	operator := path.Base(self.Principal) // its href
	want[*ogenclient.Authorization](t, r(op.GetUsersAuthorization(ctx, ogenclient.GetUsersAuthorizationParams{ID: operator})))
	want[*ogenclient.AccessKeyWithSecret](t, r(op.PostUsersSelfAuthorization(ctx, &ogenclient.SwitchAccount{Account: rootHref})))
	want[*ogenclient.AccessKeyWithSecret](t, r(op.PostUsersAuthorization(ctx, &ogenclient.SwitchAccount{Account: rootHref},
		ogenclient.PostUsersAuthorizationParams{ID: operator})))
	if a := want[*ogenclient.GetAccountsOKHeaders](t, r(op.GetAccounts(ctx, ogenclient.GetAccountsParams{}))); len(a.Response) == 0 {
		t.Fatal("GET /v2/accounts: no account")
	}
	if s := want[*ogenclient.GetLogSchemasOKApplicationJSON](t, r(op.GetLogSchemas(ctx))); len(*s) == 0 {
		t.Fatal("GET /v2/log-schemas: no schema")
	}

	// ------------------------------------------------------------ users, access keys
	devEmail := "dev-" + run + "@example.com"
	dev := want[*ogenclient.User](t, r(op.PostUsers(ctx, &ogenclient.UserCreate{Email: devEmail, Name: ogenclient.NewOptString("Dev")})))
	want[*ogenclient.GetUsersOKHeaders](t, r(op.GetUsers(ctx, ogenclient.GetUsersParams{})))
	want[*ogenclient.User](t, r(op.GetUsersById(ctx, ogenclient.GetUsersByIdParams{ID: dev.ID})))
	if u := want[*ogenclient.User](t, r(op.PatchUsersById(ctx, &ogenclient.UserPatch{Name: ogenclient.NewOptString("Dev Eloper")},
		ogenclient.PatchUsersByIdParams{ID: dev.ID}))); u.Name.Value != "Dev Eloper" {
		t.Errorf("PATCH /v2/users/{id}: name %q", u.Name.Value)
	}
	key := want[*ogenclient.AccessKeyWithSecret](t, r(op.PostUsersByIdAccessKeys(ctx, &ogenclient.AccessKeyCreate{Type: ogenclient.AccessKeyCreateTypeBearer},
		ogenclient.PostUsersByIdAccessKeysParams{ID: dev.ID})))
	want[*ogenclient.GetUsersByIdAccessKeysOKHeaders](t, r(op.GetUsersByIdAccessKeys(ctx, ogenclient.GetUsersByIdAccessKeysParams{ID: dev.ID})))
	want[*ogenclient.AccessKey](t, r(op.GetUsersByIdAccessKeysByKeyId(ctx, ogenclient.GetUsersByIdAccessKeysByKeyIdParams{ID: dev.ID, KeyID: key.ID})))
	want[*ogenclient.AccessKey](t, r(op.DeleteUsersByIdAccessKeysByKeyId(ctx, ogenclient.DeleteUsersByIdAccessKeysByKeyIdParams{ID: dev.ID, KeyID: key.ID})))

	// ------------------------------------------------------------ accounts, entitlements
	sub := want[*ogenclient.AccountHeaders](t, r(op.PostAccounts(ctx, &ogenclient.AccountCreate{Name: "Client tour " + run}))).Response.ID
	want[*ogenclient.AccountHeaders](t, r(op.GetAccountsById(ctx, ogenclient.GetAccountsByIdParams{ID: sub})))
	want[*ogenclient.AccountHeaders](t, r(op.PatchAccountsById(ctx, &ogenclient.AccountPatch{Name: ogenclient.NewOptString("Client tour 2 " + run)},
		ogenclient.PatchAccountsByIdParams{ID: sub})))
	want[*ogenclient.GetAccountsByIdBillingOKHeaders](t, r(op.GetAccountsByIdBilling(ctx, ogenclient.GetAccountsByIdBillingParams{ID: sub})))
	// The body with two shapes, once a generator skipped. A resource
	// response carries its ETag: the generated type wraps the body with
	// the header.
	ent := want[*ogenclient.EntitlementHeaders](t, r(op.PostAccountsByIdEntitlements(ctx, &ogenclient.EntitlementCreate{
		Resource: ogenclient.NewOptEntitlementCreateResource(ogenclient.EntitlementCreateResourceApplications), Quantity: ogenclient.NewOptInt(5),
		Period: ogenclient.NewOptEntitlementCreatePeriod(ogenclient.EntitlementCreatePeriodMonth), UnitPrice: ogenclient.NewOptFloat64(10),
	}, ogenclient.PostAccountsByIdEntitlementsParams{ID: sub})))
	if ent.Response.ID == "" || !ent.ETag.Set || ent.ETag.Value == "" {
		t.Fatalf("POST /v2/accounts/{id}/entitlements: %+v", ent)
	}
	entID := ent.Response.ID
	want[*ogenclient.GetAccountsByIdEntitlementsOKHeaders](t, r(op.GetAccountsByIdEntitlements(ctx, ogenclient.GetAccountsByIdEntitlementsParams{ID: sub})))
	want[*ogenclient.EntitlementHeaders](t, r(op.GetAccountsByIdEntitlementsByEntitlementId(ctx,
		ogenclient.GetAccountsByIdEntitlementsByEntitlementIdParams{ID: sub, EntitlementID: entID})))
	want[*ogenclient.EntitlementHeaders](t, r(op.PatchAccountsByIdEntitlementsByEntitlementId(ctx, &ogenclient.EntitlementPatch{Quantity: ogenclient.NewOptInt(6)},
		ogenclient.PatchAccountsByIdEntitlementsByEntitlementIdParams{ID: sub, EntitlementID: entID, IfMatch: ogenclient.NewOptString(ent.ETag.Value)})))
	want[*ogenclient.Entitlement](t, r(op.DeleteAccountsByIdEntitlementsByEntitlementId(ctx,
		ogenclient.DeleteAccountsByIdEntitlementsByEntitlementIdParams{ID: sub, EntitlementID: entID})))

	// ------------------------------------------------------------ roles, groups
	role := want[*ogenclient.RoleHeaders](t, r(op.PostAccountsByIdRoles(ctx, &ogenclient.RoleInput{Name: ogenclient.NewOptString("Robot keeper " + run),
		Permissions: []ogenclient.Permission{{Method: ogenclient.PermissionMethodGET, Effect: ogenclient.PermissionEffectPermit, Spec: []string{rootHref + "/service-users"}}}},
		ogenclient.PostAccountsByIdRolesParams{ID: root}))).Response
	want[*ogenclient.GetAccountsByIdRolesOKHeaders](t, r(op.GetAccountsByIdRoles(ctx, ogenclient.GetAccountsByIdRolesParams{ID: root})))
	want[*ogenclient.RoleHeaders](t, r(op.GetAccountsByIdRolesByRoleId(ctx, ogenclient.GetAccountsByIdRolesByRoleIdParams{ID: root, RoleID: role.ID})))
	want[*ogenclient.RoleHeaders](t, r(op.PatchAccountsByIdRolesByRoleId(ctx,
		&ogenclient.PatchAccountsByIdRolesByRoleIdApplicationMergePatchJSON{Description: ogenclient.NewOptString("keeps robots")},
		ogenclient.PatchAccountsByIdRolesByRoleIdParams{ID: root, RoleID: role.ID})))
	group := want[*ogenclient.GroupHeaders](t, r(op.PostAccountsByIdGroups(ctx, &ogenclient.GroupInput{Name: ogenclient.NewOptString("Keepers " + run),
		Roles: []string{role.Href}}, ogenclient.PostAccountsByIdGroupsParams{ID: root}))).Response
	want[*ogenclient.GetAccountsByIdGroupsOKHeaders](t, r(op.GetAccountsByIdGroups(ctx, ogenclient.GetAccountsByIdGroupsParams{ID: root})))
	want[*ogenclient.GroupHeaders](t, r(op.GetAccountsByIdGroupsByGroupId(ctx, ogenclient.GetAccountsByIdGroupsByGroupIdParams{ID: root, GroupID: group.ID})))
	want[*ogenclient.GroupHeaders](t, r(op.PatchAccountsByIdGroupsByGroupId(ctx,
		&ogenclient.PatchAccountsByIdGroupsByGroupIdApplicationJSON{Name: ogenclient.NewOptString("Keepers 2 " + run)},
		ogenclient.PatchAccountsByIdGroupsByGroupIdParams{ID: root, GroupID: group.ID})))

	// ------------------------------------------------------------ who can, the audit trail
	if who := want[*ogenclient.GetAccountsByIdAccessOKHeaders](t, r(op.GetAccountsByIdAccess(ctx, ogenclient.GetAccountsByIdAccessParams{ID: root,
		Method: ogenclient.GetAccountsByIdAccessMethodDELETE, Path: "/v2/applications/x1"}))); len(who.Response) == 0 {
		t.Fatal("GET /v2/accounts/{id}/access: nobody may delete an application in the root account")
	}
	// The group just renamed is among the account's latest changes.
	if ev := want[*ogenclient.GetAccountsByIdAuditEventsOKHeaders](t, r(op.GetAccountsByIdAuditEvents(ctx, ogenclient.GetAccountsByIdAuditEventsParams{ID: root,
		Target: ogenclient.NewOptString(group.Href)}))); len(ev.Response) == 0 {
		t.Fatalf("GET /v2/accounts/{id}/audit-events: no event for %s", group.Href)
	}

	// ------------------------------------------------------------ service users
	// The one response with a key's secret has a schema of its own.
	su := want[*ogenclient.ServiceUserCreatedHeaders](t, r(op.PostAccountsByIdServiceUsers(ctx,
		ogenclient.NewOptServiceUserInput(ogenclient.ServiceUserInput{Name: ogenclient.NewOptString("deploy bot")}),
		ogenclient.PostAccountsByIdServiceUsersParams{ID: root}))).Response
	if len(su.AccessKeys) != 1 || su.AccessKeys[0].SecretKey == "" || su.Name != "deploy bot" {
		t.Fatalf("POST /v2/accounts/{id}/service-users: %+v", su)
	}
	l := want[*ogenclient.GetAccountsByIdServiceUsersOKHeaders](t, r(op.GetAccountsByIdServiceUsers(ctx, ogenclient.GetAccountsByIdServiceUsersParams{ID: root})))
	found := false
	for _, u := range l.Response {
		found = found || (u.ID == su.ID && len(u.AccessKeys) == 1 && u.AccessKeys[0].ID == su.AccessKeys[0].ID)
	}
	if !found {
		t.Fatalf("GET /v2/accounts/{id}/service-users: %s with its key is not listed: %+v", su.ID, l.Response)
	}
	want[*ogenclient.ServiceUser](t, r(op.GetAccountsByIdServiceUsersByServiceUserId(ctx,
		ogenclient.GetAccountsByIdServiceUsersByServiceUserIdParams{ID: root, ServiceUserID: su.ID})))
	want[*ogenclient.ServiceUser](t, r(op.PatchAccountsByIdServiceUsersByServiceUserId(ctx, &ogenclient.ServiceUserInput{Description: ogenclient.NewOptString("deploys")},
		ogenclient.PatchAccountsByIdServiceUsersByServiceUserIdParams{ID: root, ServiceUserID: su.ID})))
	// The generated client authenticates with the bearer header alone: the
	// service user's new key works through it.
	bot := rec.client(t, su.AccessKeys[0].SecretKey)
	if a := want[*ogenclient.Authorization](t, r(bot.GetUsersSelfAuthorization(ctx, ogenclient.GetUsersSelfAuthorizationParams{}))); a.ID != su.AccessKeys[0].ID {
		t.Fatalf("GET /v2/users/self/authorization as the service user: key %s, want %s", a.ID, su.AccessKeys[0].ID)
	}

	// ------------------------------------------------------------ invitations
	// The administrator's side, to a person: sent by the notifier, sent
	// again on request, revoked.
	inv := want[*ogenclient.Invitation](t, r(op.PostAccountsByIdInvitations(ctx, &ogenclient.RoleInvitationCreate{UserEmail: devEmail, Role: role.Href},
		ogenclient.PostAccountsByIdInvitationsParams{ID: root})))
	want[*ogenclient.GetAccountsByIdInvitationsOKHeaders](t, r(op.GetAccountsByIdInvitations(ctx, ogenclient.GetAccountsByIdInvitationsParams{ID: root})))
	want[*ogenclient.Invitation](t, r(op.GetAccountsByIdInvitationsByInvitationId(ctx,
		ogenclient.GetAccountsByIdInvitationsByInvitationIdParams{ID: root, InvitationID: inv.ID})))
	want[*ogenclient.Invitation](t, r(op.PatchAccountsByIdInvitationsByInvitationId(ctx,
		&ogenclient.InvitationResend{State: ogenclient.NewOptInvitationResendState(ogenclient.InvitationResendStateQueued)},
		ogenclient.PatchAccountsByIdInvitationsByInvitationIdParams{ID: root, InvitationID: inv.ID})))
	want[*ogenclient.Invitation](t, r(op.DeleteAccountsByIdInvitationsByInvitationId(ctx,
		ogenclient.DeleteAccountsByIdInvitationsByInvitationIdParams{ID: root, InvitationID: inv.ID})))
	ginv := want[*ogenclient.Invitation](t, r(op.PostAccountsByIdGroupInvitations(ctx, &ogenclient.GroupInvitationCreate{UserEmail: devEmail, Group: group.Href},
		ogenclient.PostAccountsByIdGroupInvitationsParams{ID: root})))
	want[*ogenclient.GetAccountsByIdGroupInvitationsOKHeaders](t, r(op.GetAccountsByIdGroupInvitations(ctx, ogenclient.GetAccountsByIdGroupInvitationsParams{ID: root})))
	want[*ogenclient.Invitation](t, r(op.GetAccountsByIdGroupInvitationsByInvitationId(ctx,
		ogenclient.GetAccountsByIdGroupInvitationsByInvitationIdParams{ID: root, InvitationID: ginv.ID})))
	want[*ogenclient.Invitation](t, r(op.PatchAccountsByIdGroupInvitationsByInvitationId(ctx,
		&ogenclient.InvitationResend{State: ogenclient.NewOptInvitationResendState(ogenclient.InvitationResendStateQueued)},
		ogenclient.PatchAccountsByIdGroupInvitationsByInvitationIdParams{ID: root, InvitationID: ginv.ID})))
	want[*ogenclient.Invitation](t, r(op.DeleteAccountsByIdGroupInvitationsByInvitationId(ctx,
		ogenclient.DeleteAccountsByIdGroupInvitationsByInvitationIdParams{ID: root, InvitationID: ginv.ID})))

	// The invitee's side, as the service user: its invitations are
	// accepted at creation (it has no mailbox), so nothing waits for the
	// notifier; answering "accepted" again changes nothing.
	sinv := want[*ogenclient.Invitation](t, r(op.PostAccountsByIdInvitations(ctx, &ogenclient.RoleInvitationCreate{UserEmail: su.Email, Role: role.Href},
		ogenclient.PostAccountsByIdInvitationsParams{ID: root})))
	sginv := want[*ogenclient.Invitation](t, r(op.PostAccountsByIdGroupInvitations(ctx, &ogenclient.GroupInvitationCreate{UserEmail: su.Email, Group: group.Href},
		ogenclient.PostAccountsByIdGroupInvitationsParams{ID: root})))
	want[*ogenclient.GetUsersByIdInvitationsOKHeaders](t, r(bot.GetUsersByIdInvitations(ctx, ogenclient.GetUsersByIdInvitationsParams{ID: "self"})))
	want[*ogenclient.Invitation](t, r(bot.GetUsersByIdInvitationsByInvitationId(ctx,
		ogenclient.GetUsersByIdInvitationsByInvitationIdParams{ID: "self", InvitationID: sinv.ID})))
	want[*ogenclient.Invitation](t, r(bot.PatchUsersByIdInvitationsByInvitationId(ctx, &ogenclient.InvitationAnswer{State: ogenclient.InvitationAnswerStateAccepted},
		ogenclient.PatchUsersByIdInvitationsByInvitationIdParams{ID: "self", InvitationID: sinv.ID})))
	want[*ogenclient.GetUsersByIdGroupInvitationsOKHeaders](t, r(bot.GetUsersByIdGroupInvitations(ctx, ogenclient.GetUsersByIdGroupInvitationsParams{ID: "self"})))
	want[*ogenclient.Invitation](t, r(bot.GetUsersByIdGroupInvitationsByInvitationId(ctx,
		ogenclient.GetUsersByIdGroupInvitationsByInvitationIdParams{ID: "self", InvitationID: sginv.ID})))
	want[*ogenclient.Invitation](t, r(bot.PatchUsersByIdGroupInvitationsByInvitationId(ctx, &ogenclient.InvitationAnswer{State: ogenclient.InvitationAnswerStateAccepted},
		ogenclient.PatchUsersByIdGroupInvitationsByInvitationIdParams{ID: "self", InvitationID: sginv.ID})))
	want[*ogenclient.GetUsersByIdRolesOKHeaders](t, r(bot.GetUsersByIdRoles(ctx, ogenclient.GetUsersByIdRolesParams{ID: "self"})))
	want[*ogenclient.Role](t, r(bot.GetUsersByIdRolesByRoleId(ctx, ogenclient.GetUsersByIdRolesByRoleIdParams{ID: "self", RoleID: role.ID})))
	want[*ogenclient.GetUsersByIdGroupsOKHeaders](t, r(bot.GetUsersByIdGroups(ctx, ogenclient.GetUsersByIdGroupsParams{ID: "self"})))
	want[*ogenclient.Group](t, r(bot.GetUsersByIdGroupsByGroupId(ctx, ogenclient.GetUsersByIdGroupsByGroupIdParams{ID: "self", GroupID: group.ID})))
	want[*ogenclient.Role](t, r(bot.DeleteUsersByIdRolesByRoleId(ctx, ogenclient.DeleteUsersByIdRolesByRoleIdParams{ID: "self", RoleID: role.ID})))
	want[*ogenclient.Group](t, r(bot.DeleteUsersByIdGroupsByGroupId(ctx, ogenclient.DeleteUsersByIdGroupsByGroupIdParams{ID: "self", GroupID: group.ID})))

	want[*ogenclient.ServiceUser](t, r(op.DeleteAccountsByIdServiceUsersByServiceUserId(ctx,
		ogenclient.DeleteAccountsByIdServiceUsersByServiceUserIdParams{ID: root, ServiceUserID: su.ID})))
	want[*ogenclient.Group](t, r(op.DeleteAccountsByIdGroupsByGroupId(ctx, ogenclient.DeleteAccountsByIdGroupsByGroupIdParams{ID: root, GroupID: group.ID})))
	want[*ogenclient.Role](t, r(op.DeleteAccountsByIdRolesByRoleId(ctx, ogenclient.DeleteAccountsByIdRolesByRoleIdParams{ID: root, RoleID: role.ID})))

	// ------------------------------------------------------------ applications
	alias := "clientgen-" + run + ".example.com"
	app := want[*ogenclient.ApplicationHeaders](t, r(op.PostApplications(ctx, &ogenclient.ApplicationInput{
		Name: ogenclient.NewOptString("Shop " + run), Aliases: []string{alias}}))).Response
	want[*ogenclient.GetApplicationsOKHeaders](t, r(op.GetApplications(ctx, ogenclient.GetApplicationsParams{})))
	want[*ogenclient.ApplicationHeaders](t, r(op.GetApplicationsById(ctx, ogenclient.GetApplicationsByIdParams{ID: app.ID})))
	want[*ogenclient.ApplicationHeaders](t, r(op.PatchApplicationsById(ctx,
		&ogenclient.PatchApplicationsByIdApplicationMergePatchJSON{Name: ogenclient.NewOptString("Shop 2 " + run)},
		ogenclient.PatchApplicationsByIdParams{ID: app.ID})))

	act := want[*ogenclient.ActionHeaders](t, r(op.PostApplicationsByIdActions(ctx, &ogenclient.ActionInput{ID: ogenclient.NewOptString("ping"),
		URL: ogenclient.NewOptURI(mustURL(t, "https://ops.example.com/ping"))}, ogenclient.PostApplicationsByIdActionsParams{ID: app.ID}))).Response
	want[*ogenclient.GetApplicationsByIdActionsOKHeaders](t, r(op.GetApplicationsByIdActions(ctx, ogenclient.GetApplicationsByIdActionsParams{ID: app.ID})))
	want[*ogenclient.ActionHeaders](t, r(op.GetApplicationsByIdActionsByActionId(ctx, ogenclient.GetApplicationsByIdActionsByActionIdParams{ID: app.ID, ActionID: act.ID})))
	want[*ogenclient.ActionHeaders](t, r(op.PatchApplicationsByIdActionsByActionId(ctx,
		&ogenclient.PatchApplicationsByIdActionsByActionIdApplicationJSON{Description: ogenclient.NewOptNilString("pings")},
		ogenclient.PatchApplicationsByIdActionsByActionIdParams{ID: app.ID, ActionID: act.ID})))
	// A merge patch's null resets a field, as the contract types it.
	if a := want[*ogenclient.ActionHeaders](t, r(op.PatchApplicationsByIdActionsByActionId(ctx,
		&ogenclient.PatchApplicationsByIdActionsByActionIdApplicationJSON{Description: ogenclient.OptNilString{Set: true, Null: true}},
		ogenclient.PatchApplicationsByIdActionsByActionIdParams{ID: app.ID, ActionID: act.ID}))); a.Response.Description != "" {
		t.Fatalf("PATCH an action's description to null: %+v", a.Response)
	}
	want[*ogenclient.Action](t, r(op.DeleteApplicationsByIdActionsByActionId(ctx, ogenclient.DeleteApplicationsByIdActionsByActionIdParams{ID: app.ID, ActionID: act.ID})))

	pc := want[*ogenclient.PageControlHeaders](t, r(op.PostApplicationsByIdPagecontrols(ctx, &ogenclient.PageControlInput{
		Name: ogenclient.NewOptString("Block bots"), Mode: ogenclient.NewOptString("request"),
		Conditions: ogenclient.NewOptPageControlInputConditions(ogenclient.PageControlInputConditions{"is_crawler": jx.Raw(`{}`)}),
		Actions: []ogenclient.PageControlAction{{Type: "deny", AdditionalProps: ogenclient.PageControlActionAdditional{
			"status_code": jx.Raw(`"403"`), "body": jx.Raw(`"no"`)}}},
	}, ogenclient.PostApplicationsByIdPagecontrolsParams{ID: app.ID}))).Response
	want[*ogenclient.GetApplicationsByIdPagecontrolsOKHeaders](t, r(op.GetApplicationsByIdPagecontrols(ctx, ogenclient.GetApplicationsByIdPagecontrolsParams{ID: app.ID})))
	want[*ogenclient.PageControlHeaders](t, r(op.GetApplicationsByIdPagecontrolsByPagecontrolId(ctx,
		ogenclient.GetApplicationsByIdPagecontrolsByPagecontrolIdParams{ID: app.ID, PagecontrolID: pc.ID})))
	want[*ogenclient.PageControlHeaders](t, r(op.PatchApplicationsByIdPagecontrolsByPagecontrolId(ctx,
		&ogenclient.PatchApplicationsByIdPagecontrolsByPagecontrolIdApplicationMergePatchJSON{Enabled: ogenclient.NewOptBool(false)},
		ogenclient.PatchApplicationsByIdPagecontrolsByPagecontrolIdParams{ID: app.ID, PagecontrolID: pc.ID})))
	want[*ogenclient.GetApplicationsByIdWebcontrolsOKHeaders](t, r(op.GetApplicationsByIdWebcontrols(ctx, ogenclient.GetApplicationsByIdWebcontrolsParams{ID: app.ID})))
	want[*ogenclient.WebControl](t, r(op.GetApplicationsByIdWebcontrolsByWebcontrolId(ctx,
		ogenclient.GetApplicationsByIdWebcontrolsByWebcontrolIdParams{ID: app.ID, WebcontrolID: pc.ID})))
	want[*ogenclient.PageControl](t, r(op.DeleteApplicationsByIdPagecontrolsByPagecontrolId(ctx,
		ogenclient.DeleteApplicationsByIdPagecontrolsByPagecontrolIdParams{ID: app.ID, PagecontrolID: pc.ID})))

	// ------------------------------------------------------------ tasks
	// Each waits for its task (?wait, the longest the contract allows);
	// only a task still running then (a loaded machine) is polled. A task
	// with parameters: a generated client can send them.
	task := func(typ ogenclient.TaskCreateType, target string, params ogenclient.TaskCreateParameters) ogenclient.Task {
		t.Helper()
		req := &ogenclient.TaskCreate{Type: typ}
		if target != "" {
			req.Target = ogenclient.NewOptTaskCreateTarget(ogenclient.NewStringTaskCreateTarget(target))
		}
		if params != nil {
			req.Parameters = ogenclient.NewOptTaskCreateParameters(params)
		}
		var done ogenclient.Task
		res, err := op.PostTasks(ctx, req, ogenclient.PostTasksParams{Wait: ogenclient.NewOptInt(5)})
		switch v := res.(type) {
		case *ogenclient.PostTasksOK:
			done = ogenclient.Task(*v)
		case *ogenclient.PostTasksCreated:
			done = ogenclient.Task(*v)
			for deadline := time.Now().Add(time.Minute); done.State == ogenclient.TaskStatePending || done.State == ogenclient.TaskStateRunning; {
				if time.Now().After(deadline) {
					t.Fatalf("POST /v2/tasks %s: still %s after a minute", typ, done.State)
				}
				time.Sleep(100 * time.Millisecond)
				done = *want[*ogenclient.Task](t, r(op.GetTasksById(ctx, ogenclient.GetTasksByIdParams{ID: done.ID})))
			}
		default:
			want[*ogenclient.PostTasksOK](t, r(res, err))
		}
		if err != nil || done.State != ogenclient.TaskStateSuccess {
			t.Fatalf("POST /v2/tasks %s: %+v, %v", typ, done, err)
		}
		return done
	}
	started := task(ogenclient.TaskCreateTypeStart, app.Href, nil)
	if m := task(ogenclient.TaskCreateTypeEnterMaintenance, app.Href, ogenclient.TaskCreateParameters{"maximum_duration": []byte("3600")}); string(m.Parameters["maximum_duration"]) != "3600" {
		t.Errorf("POST /v2/tasks enter-maintenance: parameters %v, want those sent", m.Parameters)
	}
	want[*ogenclient.GetTasksOKHeaders](t, r(op.GetTasks(ctx, ogenclient.GetTasksParams{})))
	want[*ogenclient.Task](t, r(op.GetTasksById(ctx, ogenclient.GetTasksByIdParams{ID: started.ID})))
	want[*ogenclient.GetTasksByIdLogsOKApplicationJSON](t, r(op.GetTasksByIdLogs(ctx, ogenclient.GetTasksByIdLogsParams{ID: started.ID})))

	// ------------------------------------------------------------ logs, metrics, archives
	// A custom log record, every member the contract requires.
	if ids := want[*ogenclient.PostApplicationsByIdLogsOKApplicationJSON](t, r(op.PostApplicationsByIdLogs(ctx,
		ogenclient.NewCustomLogPostApplicationsByIdLogsReq(ogenclient.CustomLog{
			Created: now, Stream: "deploy", Message: "v2 live", Address: "192.0.2.1", Filename: "deploy.log", Hostname: "ci-1",
		}), ogenclient.PostApplicationsByIdLogsParams{ID: app.ID}))); len(*ids) != 1 {
		t.Fatalf("POST /v2/applications/{id}/logs: %v", *ids)
	}
	want[*ogenclient.LogDocumentHeaders](t, r(op.GetApplicationsByIdLogs(ctx, ogenclient.GetApplicationsByIdLogsParams{ID: app.ID})))
	window := func(names string) (string, ogenclient.OptString, ogenclient.OptString, ogenclient.OptBool) {
		return names, ogenclient.NewOptString(from), ogenclient.NewOptString(to), ogenclient.NewOptBool(true)
	}
	{
		n, f, u, s := window("requests")
		want[*ogenclient.MetricsResult](t, r(op.GetApplicationsByIdMetrics(ctx, ogenclient.GetApplicationsByIdMetricsParams{ID: app.ID, Names: n, From: f, To: u, Summarize: s})))
		want[*ogenclient.MetricsResult](t, r(op.GetApplicationsMetrics(ctx, ogenclient.GetApplicationsMetricsParams{Names: n, From: f, To: u, Summarize: s})))
	}
	archive := "/v2/archived-logs/applications/" + app.ID + "/proxy-logs"
	task(ogenclient.TaskCreateTypePrepareForDownload, "", ogenclient.TaskCreateParameters{
		"reference": jsonString(archive), "from": jsonString(from), "to": jsonString(to)})
	want[*ogenclient.GetArchivedLogsOKApplicationJSON](t, r(op.GetArchivedLogs(ctx, ogenclient.GetArchivedLogsParams{})))
	want[*ogenclient.GetArchivedLogsApplicationsByIdByLogTypeOK](t, r(op.GetArchivedLogsApplicationsByIdByLogType(ctx,
		ogenclient.GetArchivedLogsApplicationsByIdByLogTypeParams{ID: app.ID, LogType: "proxy-logs", From: from, To: to})))
	want[*ogenclient.DeleteArchivedLogsApplicationsByIdByLogTypeOKApplicationJSON](t, r(op.DeleteArchivedLogsApplicationsByIdByLogType(ctx,
		ogenclient.DeleteArchivedLogsApplicationsByIdByLogTypeParams{ID: app.ID, LogType: "proxy-logs"})))

	// ------------------------------------------------------------ address sets
	set := want[*ogenclient.AddressSet](t, r(op.PostAddressSets(ctx, &ogenclient.AddressSetInput{Name: ogenclient.NewOptString("office " + run),
		Type:    ogenclient.NewOptAddressSetInputType(ogenclient.AddressSetInputTypeManual),
		Entries: []ogenclient.AddressSetInputEntriesItem{{Address: "192.0.2.0/24", Description: ogenclient.NewOptString("HQ")}}})))
	want[*ogenclient.GetAddressSetsOKHeaders](t, r(op.GetAddressSets(ctx, ogenclient.GetAddressSetsParams{})))
	want[*ogenclient.AddressSet](t, r(op.GetAddressSetsById(ctx, ogenclient.GetAddressSetsByIdParams{ID: set.ID})))
	want[*ogenclient.AddressSet](t, r(op.PatchAddressSetsById(ctx, &ogenclient.JSONPatch{{Op: ogenclient.JSONPatchItemOpAdd, Path: "/entries/-",
		Value: jx.Raw(`{"address":"198.51.100.4"}`)}}, ogenclient.PatchAddressSetsByIdParams{ID: set.ID})))
	want[*ogenclient.GetAddressSetsByIdAddressesOKHeaders](t, r(op.GetAddressSetsByIdAddresses(ctx, ogenclient.GetAddressSetsByIdAddressesParams{ID: set.ID})))
	{
		n, f, u, s := window("entries_added")
		want[*ogenclient.MetricsResult](t, r(op.GetAddressSetsByIdMetrics(ctx, ogenclient.GetAddressSetsByIdMetricsParams{ID: set.ID, Names: n, From: f, To: u, Summarize: s})))
		want[*ogenclient.MetricsResult](t, r(op.GetAddressSetsMetrics(ctx, ogenclient.GetAddressSetsMetricsParams{Names: n, From: f, To: u, Summarize: s})))
	}
	want[*ogenclient.AddressSet](t, r(op.DeleteAddressSetsById(ctx, ogenclient.DeleteAddressSetsByIdParams{ID: set.ID})))

	// ------------------------------------------------------------ metric prototypes
	proto := want[*ogenclient.MetricPrototypeHeaders](t, r(op.PostMetricPrototypes(ctx, &ogenclient.MetricPrototypeInput{DefaultName: "slow_pages_" + run,
		Expression: "count()", LogType: ogenclient.MetricPrototypeInputLogTypeProxyLogs, Filter: ogenclient.NewOptNilString("elapsed > 2000"),
		GroupBy: ogenclient.NewOptString("request_path")}))).Response
	want[*ogenclient.GetMetricPrototypesOKHeaders](t, r(op.GetMetricPrototypes(ctx, ogenclient.GetMetricPrototypesParams{})))
	want[*ogenclient.MetricPrototypeHeaders](t, r(op.GetMetricPrototypesById(ctx, ogenclient.GetMetricPrototypesByIdParams{ID: proto.ID})))
	want[*ogenclient.MetricPrototype](t, r(op.DeleteMetricPrototypesById(ctx, ogenclient.DeleteMetricPrototypesByIdParams{ID: proto.ID})))

	// ------------------------------------------------------------ application tests
	// The configuration as JSON (typed by the contract), then as a tar.
	testID := "clientgen-" + run
	cfg := ogenclient.TestConfiguration{Probabilities: 1, Models: ogenclient.TestConfigurationModels{"home": {
		Type:     ogenclient.NewOptTestModelType(ogenclient.TestModelTypeUserStaticSession),
		Requests: []ogenclient.TestRequest{{Name: "home", Method: ogenclient.TestRequestMethodGET, URL: "http://" + alias + "/"}},
	}}}
	want[*ogenclient.ApplicationTest](t, r(op.PutTestsById(ctx, &cfg, ogenclient.PutTestsByIdParams{ID: testID})))
	want[*ogenclient.GetTestsOKHeaders](t, r(op.GetTests(ctx, ogenclient.GetTestsParams{})))
	want[*ogenclient.ApplicationTest](t, r(op.GetTestsById(ctx, ogenclient.GetTestsByIdParams{ID: testID})))
	want[*ogenclient.ApplicationTest](t, r(op.PatchTestsById(ctx, &ogenclient.PatchTestsByIdReqApplicationXTar{Data: bytes.NewReader(testTar(t, cfg))},
		ogenclient.PatchTestsByIdParams{ID: testID})))
	want[*ogenclient.ApplicationTest](t, r(op.PostTests(ctx, &ogenclient.TestRunCreate{ID: testID, Duration: ogenclient.NewOptInt(1), VirtualUsers: ogenclient.NewOptInt(1)})))
	want[*ogenclient.ApplicationTest](t, r(op.DeleteTestsById(ctx, ogenclient.DeleteTestsByIdParams{ID: testID})))

	// ------------------------------------------------------------ deletes
	task(ogenclient.TaskCreateTypeStop, app.Href, nil)
	want[*ogenclient.Application](t, r(op.DeleteApplicationsById(ctx, ogenclient.DeleteApplicationsByIdParams{ID: app.ID})))
	want[*ogenclient.Account](t, r(op.DeleteAccountsById(ctx, ogenclient.DeleteAccountsByIdParams{ID: sub})))
}

func mustURL(t *testing.T, s string) url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return *u
}

func jsonString(s string) jx.Raw {
	b, _ := json.Marshal(s)
	return b
}

// testTar is an upload of cfg as test.json.
func testTar(t *testing.T, cfg ogenclient.TestConfiguration) []byte {
	t.Helper()
	body, err := cfg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "test.json", Mode: 0o644, Size: int64(len(body)), ModTime: time.Now(), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(body)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// operation is one operation of the document.
type operation struct {
	id, method string
	segments   []string // of the path template; "{...}" matches any one segment
}

// operations reads the operations of the served document.
func operations(t *testing.T, doc ogenclient.GetOpenapiJSONOK) []operation {
	t.Helper()
	var paths map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc["paths"], &paths); err != nil {
		t.Fatalf("the document's paths: %v", err)
	}
	var ops []operation
	for path, item := range paths {
		for method, raw := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
			default:
				continue
			}
			var o struct {
				OperationID string `json:"operationId"`
			}
			if err := json.Unmarshal(raw, &o); err != nil || o.OperationID == "" {
				t.Fatalf("%s %s: no operationId (%v)", method, path, err)
			}
			ops = append(ops, operation{id: o.OperationID, method: strings.ToUpper(method), segments: strings.Split(path, "/")})
		}
	}
	if len(ops) == 0 {
		t.Fatal("the document has no operations")
	}
	return ops
}

// match is the operation a request was for: of those whose template
// matches, the one with the most literal segments (/v2/users/self/...
// before /v2/users/{id}/...), as a router picks.
func match(ops []operation, method, path string) (operation, bool) {
	segs := strings.Split(path, "/")
	best, bestLiterals := operation{}, -1
	for _, o := range ops {
		if o.method != method || len(o.segments) != len(segs) {
			continue
		}
		literals := 0
		for i, s := range o.segments {
			switch {
			case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") && segs[i] != "":
			case s == segs[i]:
				literals++
			default:
				literals = -1
			}
			if literals < 0 {
				break
			}
		}
		if literals > bestLiterals {
			best, bestLiterals = o, literals
		}
	}
	return best, bestLiterals >= 0
}

// covered fails the scenario unless every operation of the document was
// called and answered with a success (2xx).
func covered(t *testing.T, ops []operation, calls []call) {
	t.Helper()
	done := map[string]bool{}
	for _, c := range calls {
		o, ok := match(ops, c.method, c.path)
		if !ok {
			t.Errorf("%s %s: no operation of the document", c.method, c.path)
			continue
		}
		if c.status >= 200 && c.status < 300 {
			done[o.id] = true
		}
	}
	var missing []string
	for _, o := range ops {
		if !done[o.id] {
			missing = append(missing, o.id)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d of %d operations of the document not called with a success: %s", len(missing), len(ops), strings.Join(missing, ", "))
		return
	}
	t.Logf("covered: %d of %d operations of the document, in %d requests", len(done), len(ops), len(calls))
}
