// Package inproc_test invokes the functions in-process as Lambda would (the
// event through JSON, the real handler and constructor, DynamoDB and SQS on
// the embedded servers): DynamoDB and SQS faults injected between them, and
// the handler benchmarks. A test binary of its own: go test runs it beside
// infra/local's other tests (goaws keeps its queues in package state, so
// two of its servers cannot run apart in one process).
package inproc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/truora/minidyn/server"

	"cads/infra/localaws"
	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/bootstrap"
	"cads/shared/caller"
	"cads/shared/ddb"
	"cads/shared/store"
	"cads/shared/wire"
	"cads/shared/wire/accountswire"
	"cads/shared/wire/addresssetswire"
	"cads/shared/wire/applicationswire"
	"cads/shared/wire/notifierwire"
	"cads/shared/wire/roleswire"
	"cads/shared/wire/taskswire"
	"cads/shared/wire/userswire"
)

// faultMode is what the injector does to DynamoDB calls once armed.
type faultMode int

const (
	faultNone faultMode = iota
	// faultInternal makes minidyn fail every call from the armed one on
	// (its EmulateFailure): a DynamoDB outage in the middle of a request.
	faultInternal
	// faultThrottle answers every call with ThrottlingException.
	faultThrottle
	// faultTxThrottle cancels TransactWriteItems with a ThrottlingError
	// reason, as DynamoDB reports throttling inside a transaction; other
	// calls pass.
	faultTxThrottle
	// faultConflict refuses writes as DynamoDB does when another
	// transaction holds an item: TransactWriteItems canceled for
	// TransactionConflict, a single-item write with
	// TransactionConflictException; reads pass.
	faultConflict
	// faultThroughput refuses writes with
	// ProvisionedThroughputExceededException; reads pass.
	faultThroughput
)

// injector sits between the SDK and minidyn.
type injector struct {
	srv *server.Server
	mu  sync.Mutex
	// calls counts requests since arm; from call number at on, mode applies.
	calls, at int
	mode      faultMode
	fired     bool
	// left is how many writes faultConflict and faultThroughput still
	// refuse (negative: all); refused counts those they did.
	left, refused int
}

// armWrites refuses the next n writes (n < 0: every one) with mode.
func (in *injector) armWrites(mode faultMode, n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls, in.at, in.mode, in.fired, in.left, in.refused = 0, 1, mode, false, n, 0
}

func (in *injector) refusedWrites() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.refused
}

// isWrite: the calls DynamoDB refuses for contention on an item.
func isWrite(target string) bool {
	for _, op := range []string{"TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem"} {
		if strings.HasSuffix(target, "."+op) {
			return true
		}
	}
	return false
}

func (in *injector) arm(mode faultMode, at int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls, in.at, in.mode, in.fired = 0, at, mode, false
}

// disarm stops injecting and says whether any call was failed.
func (in *injector) disarm() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.srv.EmulateFailure(server.FailureConditionNone)
	in.mode = faultNone
	return in.fired
}

func (in *injector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	in.mu.Lock()
	in.calls++
	mode := in.mode
	if in.calls < in.at {
		mode = faultNone
	}
	if mode == faultTxThrottle && !strings.HasSuffix(target, ".TransactWriteItems") {
		mode = faultNone
	}
	if mode == faultConflict || mode == faultThroughput {
		if !isWrite(target) || in.left == 0 {
			mode = faultNone
		} else {
			in.left--
			in.refused++
		}
	}
	if mode != faultNone {
		in.fired = true
	}
	if mode == faultInternal {
		in.srv.EmulateFailure(server.FailureConditionInternalServerError)
	}
	// minidyn keeps its failure condition unsynchronised: serve under the
	// same lock that sets it, so a request never reads it while another
	// one arms it (the race detector caught exactly that). This makes the
	// test's DynamoDB calls sequential, which the scenarios do not depend on.
	defer in.mu.Unlock()
	switch mode {
	case faultThrottle:
		ddbError(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`)
	case faultTxThrottle:
		ddbError(w, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"Transaction cancelled, please refer cancellation reasons for specific reasons [ThrottlingError]","CancellationReasons":[{"Code":"ThrottlingError","Message":"Throughput exceeds the current capacity for one or more global secondary indexes."}]}`)
	case faultConflict:
		if strings.HasSuffix(target, ".TransactWriteItems") {
			ddbError(w, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]","CancellationReasons":[{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}]}`)
		} else {
			ddbError(w, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionConflictException","message":"Transaction is ongoing for the item"}`)
		}
	case faultThroughput:
		ddbError(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`)
	default:
		in.srv.ServeHTTP(w, r)
	}
}

func ddbError(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, body)
}

// faultEnv is a bootstrapped table behind an injector.
type faultEnv struct {
	t      *testing.T
	in     *injector
	client *dynamodb.Client
	table  string
	deps   wire.Deps
	boot   bootstrap.Result
	op     caller.Principal
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	ctx := context.Background()
	in := &injector{srv: server.NewServer()}
	hs := httptest.NewServer(in)
	t.Cleanup(hs.Close)
	client, err := localaws.DynamoClient(ctx, hs.URL, ddb.WithRetries(faultRetries))
	if err != nil {
		t.Fatal(err)
	}
	const table = "cads-faults"
	for _, tb := range testenv.Template(t).Tables {
		if err := localaws.EnsureTable(ctx, client, table, tb); err != nil {
			t.Fatal(err)
		}
	}
	deps := wire.New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, table)
	// The real queues, so that invitations and tasks are sent as deployed.
	deps.SQS, deps.QueueURLs = testenv.NewQueues(t)
	res, op := testenv.Bootstrap(t, deps.Store)
	return &faultEnv{t: t, in: in, client: client, table: table, deps: deps, boot: res, op: op}
}

// faultRetries is the clients' own retryer with millisecond waits, so
// that a call failed by an injected fault gives up quickly with the
// injected error.
var faultRetries = ddb.RetryPolicy{MaxAttempts: 6, Base: time.Millisecond, Max: 2 * time.Millisecond}

// fastRetryer keeps the SDK's retries (their default count) but backs
// off for a millisecond and has no retry quota: the SQS clients' retryer
// here, so that a call failed by an injected fault gives up quickly.
func fastRetryer() aws.Retryer {
	return retry.AddWithMaxBackoffDelay(retry.NewStandard(func(so *retry.StandardOptions) {
		so.RateLimiter = ratelimit.None
	}), time.Millisecond)
}

// req is one API call to a function.
type req struct {
	fn          func(wire.Deps) apigw.ProxyHandler
	as          caller.Principal
	method      string
	resource    string
	params      map[string]string
	contentType string
	body        string
}

func (e *faultEnv) do(r req) events.APIGatewayProxyResponse { return invoke(e.t, e.deps, r) }

// invoke sends r to its function as API Gateway would: the proxy event of
// the route, through JSON both ways, as Lambda does.
func invoke(t testing.TB, deps wire.Deps, r req) events.APIGatewayProxyResponse {
	t.Helper()
	path := r.resource
	for k, v := range r.params {
		path = strings.ReplaceAll(path, "{"+k+"}", v)
	}
	h := map[string]string{"Host": "127.0.0.1:3000"}
	if r.contentType != "" {
		h["Content-Type"] = r.contentType
	}
	mh := map[string][]string{}
	for k, v := range h {
		mh[k] = []string{v}
	}
	ev := events.APIGatewayProxyRequest{Resource: r.resource, Path: path, HTTPMethod: r.method, Headers: h, MultiValueHeaders: mh, PathParameters: r.params, Body: r.body,
		RequestContext: events.APIGatewayProxyRequestContext{ResourcePath: r.resource, HTTPMethod: r.method, Path: "/api" + path, Stage: "api", RequestID: "test", Authorizer: r.as.Context()}}
	throughJSON(t, &ev)
	resp, err := r.fn(deps)(context.Background(), ev)
	if err != nil {
		t.Fatalf("%s %s: function error %v", r.method, path, err)
	}
	throughJSON(t, &resp)
	return resp
}

// throughJSON replaces v by its JSON round trip.
func throughJSON[T any](t testing.TB, v *T) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	*v = out
}

// ok sends r with no fault and returns the "id" of a 2xx answer.
func (e *faultEnv) ok(r req) string {
	e.t.Helper()
	resp := e.do(r)
	var out struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(resp.Body), &out)
	if resp.StatusCode/100 != 2 {
		e.t.Fatalf("%s %s: %d %s", r.method, r.resource, resp.StatusCode, resp.Body)
	}
	return out.ID
}

// deliverInvitations runs the notifier on what the notifications queue
// holds, as the deployed trigger would: an invitation can be answered once
// it is delivered.
func (e *faultEnv) deliverInvitations() {
	e.t.Helper()
	ctx := context.Background()
	url := e.deps.QueueURLs[wire.NotificationsQueue]
	out, err := e.deps.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		e.t.Fatalf("receive notifications: %v", err)
	}
	var ev events.SQSEvent
	for _, m := range out.Messages {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body)})
	}
	resp, err := notifierwire.Handler(e.deps)(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		e.t.Fatalf("notifier: %v %+v", err, resp)
	}
	for _, m := range out.Messages {
		_, _ = e.deps.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
	}
}

// snapshot is every item of the table, by key.
func (e *faultEnv) snapshot() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	p := dynamodb.NewScanPaginator(e.client, &dynamodb.ScanInput{TableName: aws.String(e.table)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			e.t.Fatalf("scan: %v", err)
		}
		for _, it := range page.Items {
			var m map[string]any
			if err := attributevalue.UnmarshalMap(it, &m); err != nil {
				e.t.Fatal(err)
			}
			b, _ := json.Marshal(m)
			out[fmt.Sprint(m[store.AttrPK], " ", m[store.AttrSK])] = string(b)
		}
	}
	if len(out) < 2 {
		e.t.Fatalf("snapshot of %d items: the keys are not read", len(out))
	}
	return out
}

func diff(before, after map[string]string) []string {
	var d []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			d = append(d, "added "+k)
		} else if w != v {
			d = append(d, "changed "+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		}
	}
	return d
}

// leaks says whether an error body shows internals.
func leaks(body string) bool {
	l := strings.ToLower(body)
	for _, s := range []string{"emulated", "dynamodb", "internalservererror", "throttlingexception", "transaction", "operation error", "cads-faults"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// faultScenario is a multi-item write: setup (run without faults) makes
// what one attempt needs and returns the request.
type faultScenario struct {
	name  string
	setup func(e *faultEnv, i int) req
}

func faultScenarios() []faultScenario {
	const js = "application/json"
	return []faultScenario{
		{"account create", func(e *faultEnv, i int) req {
			return req{fn: accountswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts", contentType: js, body: fmt.Sprintf(`{"name": "fault customer %d"}`, i)}
		}},
		{"invitation accept", func(e *faultEnv, i int) req {
			email := fmt.Sprintf("invitee%d@example.com", i)
			user := e.ok(req{fn: userswire.Handler, as: e.op, method: "POST", resource: "/v2/users", contentType: js, body: fmt.Sprintf(`{"email": %q, "name": "Invitee"}`, email)})
			root := map[string]string{"id": e.boot.RootAccount}
			role := e.ok(req{fn: roleswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts/{id}/roles", params: root, contentType: js,
				body: fmt.Sprintf(`{"name": "Fault reader %d", "permissions": [{"method": "GET", "effect": "permit", "spec": ["/v2/applications/*"]}]}`, i)})
			inv := e.ok(req{fn: roleswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts/{id}/invitations", params: root, contentType: js,
				body: fmt.Sprintf(`{"user_email": %q, "role": "/v2/accounts/%s/roles/%s"}`, email, e.boot.RootAccount, role)})
			e.deliverInvitations()
			invitee := caller.Principal{ID: user, Kind: "user", Email: email, KeyID: "faultkey"}
			return req{fn: roleswire.Handler, as: invitee, method: "PATCH", resource: "/v2/users/{id}/invitations/{invitation_id}",
				params: map[string]string{"id": user, "invitation_id": inv}, contentType: js, body: `{"state": "accepted"}`}
		}},
		{"task create", func(e *faultEnv, i int) req {
			app := e.ok(req{fn: applicationswire.Handler, as: e.op, method: "POST", resource: "/v2/applications", contentType: js,
				body: fmt.Sprintf(`{"name": "Fault shop %d", "aliases": ["shop%d.fault.example.com"]}`, i, i)})
			return req{fn: taskswire.Handler, as: e.op, method: "POST", resource: "/v2/tasks", contentType: js, body: fmt.Sprintf(`{"type": "start", "target": "/v2/applications/%s"}`, app)}
		}},
		{"address-set patch", func(e *faultEnv, i int) req {
			set := e.ok(req{fn: addresssetswire.Handler, as: e.op, method: "POST", resource: "/v2/address-sets", contentType: js,
				body: fmt.Sprintf(`{"name": "fault exits %d", "type": "manual", "entries": [{"address": "192.0.2.0/24"}]}`, i)})
			return req{fn: addresssetswire.Handler, as: e.op, method: "PATCH", resource: "/v2/address-sets/{id}", params: map[string]string{"id": set},
				contentType: "application/json-patch+json", body: `[{"op": "add", "path": "/entries/-", "value": {"address": "198.51.100.7", "description": "added"}}, {"op": "replace", "path": "/name", "value": "renamed"}]`}
		}},
	}
}

// TestFaultMidWriteLeavesNoPartialState fails DynamoDB from the Nth call of
// a request on, for every N until the request no longer reaches a failing
// call: a request that fails must leave the table exactly as it found it,
// and its answer shows no internals.
func TestFaultMidWriteLeavesNoPartialState(t *testing.T) {
	for _, sc := range faultScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			e := newFaultEnv(t)
			failed, committed := 0, 0
			for n := 1; ; n++ {
				if n > 60 {
					t.Fatal("the request still meets the failure after 60 calls")
				}
				r := sc.setup(e, n)
				before := e.snapshot()
				e.in.arm(faultInternal, n)
				resp := e.do(r)
				fired := e.in.disarm()
				after := e.snapshot()
				if !fired {
					if resp.StatusCode/100 != 2 {
						t.Fatalf("without a fault: %d %s", resp.StatusCode, resp.Body)
					}
					t.Logf("%s: %d DynamoDB calls; a failure at each of calls 1-%d: %d answered 5xx with the table untouched, %d committed first", sc.name, n-1, n-1, failed, committed)
					return
				}
				switch {
				case resp.StatusCode/100 == 2:
					// The failure came after the commit (a best-effort
					// step); the change is whole, not partial.
					committed++
				case resp.StatusCode >= 500:
					failed++
					if d := diff(before, after); len(d) > 0 {
						t.Errorf("failure at call %d: %d %s, and the table changed: %v", n, resp.StatusCode, resp.Body, d)
					}
					if leaks(resp.Body) {
						t.Errorf("failure at call %d: body shows internals: %s", n, resp.Body)
					}
				default:
					t.Errorf("failure at call %d: %d %s (want 5xx, or 2xx if committed)", n, resp.StatusCode, resp.Body)
				}
			}
		})
	}
}

// TestThrottlingIs429 throttles every DynamoDB call (and, separately, only
// transactions, with DynamoDB's in-transaction ThrottlingError reason):
// the answer is 429 with Retry-After and no internals, never a 500.
func TestThrottlingIs429(t *testing.T) {
	for _, mode := range []struct {
		name string
		mode faultMode
	}{{"every call", faultThrottle}, {"transactions", faultTxThrottle}} {
		for _, sc := range faultScenarios() {
			t.Run(mode.name+"/"+sc.name, func(t *testing.T) {
				e := newFaultEnv(t)
				r := sc.setup(e, 1)
				before := e.snapshot()
				e.in.arm(mode.mode, 1)
				resp := e.do(r)
				fired := e.in.disarm()
				if !fired {
					if mode.mode == faultTxThrottle {
						t.Skipf("%s uses no transaction", sc.name)
					}
					t.Fatal("no call was throttled")
				}
				if resp.StatusCode != http.StatusTooManyRequests || resp.Headers["Retry-After"] == "" && len(resp.MultiValueHeaders["Retry-After"]) == 0 {
					t.Fatalf("%d %v %s, want 429 with Retry-After", resp.StatusCode, resp.Headers, resp.Body)
				}
				if leaks(resp.Body) {
					t.Errorf("body shows internals: %s", resp.Body)
				}
				if d := diff(before, e.snapshot()); len(d) > 0 {
					t.Errorf("throttled request changed the table: %v", d)
				}
				// And the same request goes through once DynamoDB recovers.
				if resp := e.do(r); resp.StatusCode/100 != 2 {
					t.Errorf("after recovery: %d %s", resp.StatusCode, resp.Body)
				}
			})
		}
	}
	t.Run("read", func(t *testing.T) {
		e := newFaultEnv(t)
		e.in.arm(faultThrottle, 1)
		resp := e.do(req{fn: accountswire.Handler, as: e.op, method: "GET", resource: "/v2/accounts"})
		e.in.disarm()
		if resp.StatusCode != http.StatusTooManyRequests || leaks(resp.Body) {
			t.Fatalf("%d %s, want 429", resp.StatusCode, resp.Body)
		}
	})
}

// contentionScenarios are creates that each write with a transaction or a
// conditional write: DynamoDB cancels them when another transaction holds
// one of their items.
func contentionScenarios() []faultScenario {
	const js = "application/json"
	root := func(e *faultEnv) map[string]string { return map[string]string{"id": e.boot.RootAccount} }
	return append(faultScenarios()[:1],
		faultScenario{"principal create", func(e *faultEnv, i int) req {
			return req{fn: userswire.Handler, as: e.op, method: "POST", resource: "/v2/users", contentType: js, body: fmt.Sprintf(`{"email": "busy%d@example.com", "name": "Busy"}`, i)}
		}},
		faultScenario{"role create", func(e *faultEnv, i int) req {
			return req{fn: roleswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts/{id}/roles", params: root(e), contentType: js,
				body: fmt.Sprintf(`{"name": "Busy reader %d", "permissions": [{"method": "GET", "effect": "permit", "spec": ["/v2/applications/*"]}]}`, i)}
		}},
		faultScenario{"invitation create", func(e *faultEnv, i int) req {
			email := fmt.Sprintf("guest%d@example.com", i)
			e.ok(req{fn: userswire.Handler, as: e.op, method: "POST", resource: "/v2/users", contentType: js, body: fmt.Sprintf(`{"email": %q, "name": "Guest"}`, email)})
			role := e.ok(req{fn: roleswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts/{id}/roles", params: root(e), contentType: js,
				body: fmt.Sprintf(`{"name": "Guest reader %d", "permissions": [{"method": "GET", "effect": "permit", "spec": ["/v2/applications/*"]}]}`, i)})
			return req{fn: roleswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts/{id}/invitations", params: root(e), contentType: js,
				body: fmt.Sprintf(`{"user_email": %q, "role": "/v2/accounts/%s/roles/%s"}`, email, e.boot.RootAccount, role)}
		}},
		faultScenario{"access key create", func(e *faultEnv, i int) req {
			return req{fn: userswire.Handler, as: e.op, method: "POST", resource: "/v2/users/{id}/access-keys", params: map[string]string{"id": e.op.ID},
				contentType: js, body: `{"type": "bearer"}`}
		}},
		faultScenario{"role patch", func(e *faultEnv, i int) req {
			role := e.ok(req{fn: roleswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts/{id}/roles", params: root(e), contentType: js,
				body: fmt.Sprintf(`{"name": "Patched reader %d", "permissions": [{"method": "GET", "effect": "permit", "spec": ["/v2/applications/*"]}]}`, i)})
			return req{fn: roleswire.Handler, as: e.op, method: "PATCH", resource: "/v2/accounts/{id}/roles/{role_id}",
				params: map[string]string{"id": e.boot.RootAccount, "role_id": role}, contentType: js, body: `{"description": "patched"}`}
		}},
	)
}

// TestContentionIsRetried refuses the first writes of a request for
// contention (a transaction conflict, exceeded throughput) as DynamoDB
// does when another writer holds an item: the request succeeds. When the
// contention never ends, the answer is a 429 with Retry-After, quickly,
// with nothing written and no internals: never a 500.
func TestContentionIsRetried(t *testing.T) {
	for _, mode := range []struct {
		name string
		mode faultMode
	}{{"conflict", faultConflict}, {"throughput", faultThroughput}} {
		for _, sc := range contentionScenarios() {
			t.Run(mode.name+"/"+sc.name, func(t *testing.T) {
				e := newFaultEnv(t)
				r := sc.setup(e, 1)
				e.in.armWrites(mode.mode, faultRetries.MaxAttempts-1)
				resp := e.do(r)
				refused := e.in.refusedWrites()
				e.in.disarm()
				if refused == 0 {
					t.Fatal("no write was refused")
				}
				if resp.StatusCode/100 != 2 {
					t.Fatalf("after %d refused writes: %d %s, want 2xx", refused, resp.StatusCode, resp.Body)
				}

				r = sc.setup(e, 2)
				before := e.snapshot()
				e.in.armWrites(mode.mode, -1)
				start := time.Now()
				resp = e.do(r)
				took := time.Since(start)
				e.in.disarm()
				if resp.StatusCode != http.StatusTooManyRequests || resp.Headers["Retry-After"] == "" && len(resp.MultiValueHeaders["Retry-After"]) == 0 {
					t.Fatalf("endless contention: %d %v %s, want 429 with Retry-After", resp.StatusCode, resp.Headers, resp.Body)
				}
				if took > 5*time.Second {
					t.Errorf("endless contention answered after %v", took)
				}
				if leaks(resp.Body) {
					t.Errorf("body shows internals: %s", resp.Body)
				}
				if d := diff(before, e.snapshot()); len(d) > 0 {
					t.Errorf("refused request changed the table: %v", d)
				}
			})
		}
	}
}
