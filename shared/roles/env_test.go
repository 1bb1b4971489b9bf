package roles_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/bootstrap"
	"cads/shared/builtin"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/store"
	"cads/shared/wire"
	"cads/shared/wire/authorizerwire"
	"cads/shared/wire/notifierwire"
	"cads/shared/wire/roleswire"
)

// env is one test's installation: a fresh table (minidyn), the template's
// queues (goaws), the bootstrap, and the functions wired as the Lambda
// mains wire them. call goes through the REQUEST authorizer and then the
// roles function, both with real API Gateway event types passed through
// JSON, as the gateway does.
type env struct {
	t      *testing.T
	dyn    testenv.Dynamo
	deps   wire.Deps
	st     *store.Store
	boot   bootstrap.Result
	op     string // the operator's secret
	root   string
	logs   *bytes.Buffer
	queue  string
	roles  apigw.ProxyHandler
	authz  func(context.Context, events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error)
	notify func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dyn: testenv.NewDynamo(t), logs: &bytes.Buffer{}}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.deps = wire.New(log, e.dyn.Client, e.dyn.Table)
	// The round trips counted here are the family's own; the cost tour
	// counts them with the audit trail's (docs/performance.md).
	e.deps.Audit = nil
	e.st = e.deps.Store

	e.deps.SQS, e.deps.QueueURLs = testenv.NewQueues(t)
	e.queue = e.deps.QueueURLs[wire.NotificationsQueue]
	e.boot, _ = testenv.Bootstrap(t, e.st)
	e.op, e.root = e.boot.Secret, e.boot.RootAccount
	e.roles = roleswire.Handler(e.deps)
	e.authz = authorizerwire.Handler(e.deps)
	e.notify = notifierwire.Handler(e.deps)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", e.logs.String())
		}
	})
	e.dyn.Counter.Reset()
	return e
}

type reply struct {
	Status int
	Body   map[string]any
	List   []map[string]any
	Raw    string
	Header map[string]string
}

func (r reply) str(k string) string { s, _ := r.Body[k].(string); return s }

// msg is the error message of an error reply (the authorizer's reason for
// a 403 from it).
func (r reply) msg() string {
	if e, ok := r.Body["error"].(map[string]any); ok {
		s, _ := e["message"].(string)
		return s
	}
	return r.Raw
}

// authorize runs the authorizer alone: "Allow", "Deny" or "Unauthorized",
// and the context it hands to functions.
func (e *env) authorize(secret, method, path string) (string, map[string]any) {
	e.t.Helper()
	path, _, _ = strings.Cut(path, "?")
	req := events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type: "REQUEST", HTTPMethod: method, Path: path, Resource: path,
		MethodArn: "arn:aws:execute-api:us-east-1:123456789012:localapi/api/" + method + path,
		Headers:   map[string]string{"Authorization": "Bearer " + secret},
	}
	roundTrip(e.t, &req)
	res, err := e.authz(context.Background(), req)
	if err != nil {
		if err.Error() == "Unauthorized" {
			return "Unauthorized", nil
		}
		e.t.Fatalf("authorizer failed: %v", err)
	}
	return res.PolicyDocument.Statement[0].Effect, res.Context
}

// allowed reports whether the authorizer lets secret make the request.
func (e *env) allowed(secret, method, path string) bool {
	eff, _ := e.authorize(secret, method, path)
	return eff == "Allow"
}

// call sends a request as the gateway would: authorizer, then the roles
// function with the authorizer's context. body is JSON-encoded unless it is
// a string (sent as is); ct defaults to application/json when there is a
// body.
func (e *env) call(secret, method, path string, body any, ct ...string) reply {
	e.t.Helper()
	eff, ctxm := e.authorize(secret, method, path)
	switch eff {
	case "Unauthorized":
		return reply{Status: 401}
	case "Deny":
		return reply{Status: 403, Raw: fmt.Sprint(ctxm[apigw.CtxMessage])}
	}
	return e.invoke(ctxm, method, path, body, ct...)
}

// invoke calls the roles function with an authorizer context, bypassing
// the authorizer (for handler-only checks and round-trip counts).
func (e *env) invoke(ctxm map[string]any, method, path string, body any, ct ...string) reply {
	e.t.Helper()
	rawPath, query, _ := strings.Cut(path, "?")
	req := events.APIGatewayProxyRequest{
		HTTPMethod: method, Path: rawPath, Resource: rawPath,
		Headers:        map[string]string{"Host": "127.0.0.1:3000"},
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: ids.New(), Stage: "api", Authorizer: ctxm},
	}
	if query != "" {
		req.QueryStringParameters = map[string]string{}
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			req.QueryStringParameters[k] = v
		}
	}
	if body != nil {
		if s, ok := body.(string); ok {
			req.Body = s
		} else {
			b, _ := json.Marshal(body)
			req.Body = string(b)
		}
		req.Headers["Content-Type"] = "application/json"
	}
	if len(ct) > 0 {
		req.Headers["Content-Type"] = ct[0]
	}
	roundTrip(e.t, &req)
	resp, err := e.roles(context.Background(), req)
	if err != nil {
		e.t.Fatalf("%s %s: function error %v", method, path, err)
	}
	r := reply{Status: resp.StatusCode, Raw: resp.Body, Header: map[string]string{}}
	for k, v := range resp.MultiValueHeaders {
		r.Header[k] = strings.Join(v, ", ")
	}
	for k, v := range resp.Headers {
		r.Header[k] = v
	}
	if strings.HasPrefix(strings.TrimSpace(resp.Body), "[") {
		_ = json.Unmarshal([]byte(resp.Body), &r.List)
	} else {
		_ = json.Unmarshal([]byte(resp.Body), &r.Body)
	}
	if resp.StatusCode >= 400 {
		var b apigw.Body
		if json.Unmarshal([]byte(resp.Body), &b) != nil || b.Status != resp.StatusCode || b.Error.Type == "" || b.Error.Message == "" {
			e.t.Fatalf("%s %s: %d without the API error body: %s", method, path, resp.StatusCode, resp.Body)
		}
	}
	return r
}

func roundTrip(t *testing.T, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// must fails the test unless r has status want.
func (e *env) must(r reply, want int, what string) reply {
	e.t.Helper()
	if r.Status != want {
		e.t.Fatalf("%s: status %d, want %d: %s", what, r.Status, want, r.Raw)
	}
	return r
}

// deliver runs the notifier on every message waiting in the notifications
// queue, as the SQS event source does, and returns how many it handled.
// The requests of these tests send before they answer, so what is to be
// delivered is on the queue already: short polls (no WaitTimeSeconds) end
// the loop at the first empty answer instead of a long poll's second.
func (e *env) deliver() int {
	e.t.Helper()
	ctx := context.Background()
	n := 0
	for {
		out, err := e.deps.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queue), MaxNumberOfMessages: 10})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return n
		}
		var ev events.SQSEvent
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), EventSource: "aws:sqs"})
		}
		roundTrip(e.t, &ev)
		res, err := e.notify(ctx, ev)
		if err != nil {
			e.t.Fatal(err)
		}
		failed := map[string]bool{}
		for _, f := range res.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			if !failed[aws.ToString(m.MessageId)] {
				n++
				if _, err := e.deps.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queue), ReceiptHandle: m.ReceiptHandle}); err != nil {
					e.t.Fatal(err)
				}
			}
		}
		if len(failed) > 0 {
			e.t.Fatalf("notifier failed %d messages", len(failed))
		}
	}
}

// receive takes the waiting notifications off the queue (they come back
// after the visibility timeout unless deleted).
func (e *env) receive() []events.SQSMessage {
	e.t.Helper()
	out, err := e.deps.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil || len(out.Messages) == 0 {
		e.t.Fatalf("no message on the queue (%v)", err)
	}
	var msgs []events.SQSMessage
	for _, m := range out.Messages {
		msgs = append(msgs, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), EventSource: "aws:sqs"})
	}
	return msgs
}

// account creates a sub-account of parent with its control roles, as the
// accounts function does (docs/api.md#sub-accounts), and returns it and its roles by name.
func (e *env) account(name, parent string) (domain.Account, map[string]domain.Role) {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.st.Accounts.GetAccount(ctx, parent)
	if err != nil {
		e.t.Fatal(err)
	}
	now := e.st.Now()
	a := domain.Account{ID: ids.New(), Name: name, Keyword: domain.Keyword(name), Parent: parent,
		Ancestors: append(append([]string{}, p.Ancestors...), parent), Created: now, Updated: now}
	defs, err := builtin.ControlRoles(a.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	roles := map[string]domain.Role{}
	var list []domain.Role
	for _, d := range defs {
		r := domain.Role{AccountID: a.ID, ID: ids.New(), Name: d.Name, Description: d.Description, Control: true,
			Permissions: d.Permissions, Version: 1, Created: now, Updated: now}
		roles[r.Name] = r
		list = append(list, r)
	}
	if err := e.st.Accounts.CreateAccount(ctx, a, list); err != nil {
		e.t.Fatal(err)
	}
	return a, roles
}

// rootRoles returns the root account's roles by name (the entitlement
// administrator pair under "Entitlement administrator" and "... (sub)").
func (e *env) rootRoles() map[string]domain.Role {
	e.t.Helper()
	rs, err := e.st.Roles.RolesOf(context.Background(), []string{e.root})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]domain.Role{}
	for _, r := range rs {
		k := r.Name
		if r.Inheritable {
			k += " (sub)"
		}
		out[k] = r
	}
	return out
}

// user creates a user with a key authenticated into account and grants it
// the given roles directly (as the bootstrap does), returning the secret.
func (e *env) user(email string, account domain.Account, held ...domain.Role) (string, caller.Principal) {
	e.t.Helper()
	ctx := context.Background()
	now := e.st.Now()
	u := domain.Principal{ID: ids.New(), Kind: domain.KindUser, Email: email, Created: now, Updated: now}
	if err := e.st.Principals.CreatePrincipal(ctx, u); err != nil {
		e.t.Fatal(err)
	}
	k := domain.AccessKey{ID: ids.New(), PrincipalID: u.ID, Type: "bearer", Durability: domain.DurabilityPersistent,
		Account: account.ID, AccountAncestors: account.Ancestors, Created: now}
	secret := access.NewSecret(u.ID, k.ID)
	k.SecretHash = access.HashSecret(secret)
	if err := e.st.Principals.CreateKey(ctx, k); err != nil {
		e.t.Fatal(err)
	}
	for _, r := range held {
		if err := e.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: u.ID, AccountID: r.AccountID, RoleID: r.ID, Via: "test", Created: now}); err != nil {
			e.t.Fatal(err)
		}
	}
	return secret, caller.Principal{ID: u.ID, Kind: domain.KindUser, Email: email, AccountID: account.ID, KeyID: k.ID}
}

// keyFor makes another key of a principal, authenticated into account.
func (e *env) keyFor(principal string, account domain.Account) string {
	e.t.Helper()
	k := domain.AccessKey{ID: ids.New(), PrincipalID: principal, Type: "bearer", Durability: domain.DurabilityPersistent,
		Account: account.ID, AccountAncestors: account.Ancestors, Created: e.st.Now()}
	secret := access.NewSecret(principal, k.ID)
	k.SecretHash = access.HashSecret(secret)
	if err := e.st.Principals.CreateKey(context.Background(), k); err != nil {
		e.t.Fatal(err)
	}
	return secret
}

func (e *env) rootAccount() domain.Account {
	e.t.Helper()
	a, err := e.st.Accounts.GetAccount(context.Background(), e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// eventually retries cond for up to 10 s (for the SQS event source).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
