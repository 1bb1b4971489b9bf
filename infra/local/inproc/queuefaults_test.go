package inproc_test

// Queue faults: SQS refusing sends after the request's DynamoDB write has
// committed. A proxy in front of the embedded SQS server (goaws) fails
// SendMessage and SendMessageBatch while armed; everything else (receive,
// delete, queue management) passes. The functions' real handlers run with
// the real table (minidyn) and the real queues behind that proxy. Every
// write that owes a message wrote its outbox marker with it: the request
// succeeds, and the task worker's scheduled sweep sends the message once
// SQS is back, with exactly one visible effect.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/localaws"
	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/bootstrap"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/notifier"
	"cads/shared/outbox"
	"cads/shared/roles"
	"cads/shared/store"
	"cads/shared/tasks"
	"cads/shared/tasks/tasksapi"
	"cads/shared/tests/testsapi"
	"cads/shared/wire"
	"cads/shared/wire/addresssetswire"
	"cads/shared/wire/aggregatorwire"
	"cads/shared/wire/applicationswire"
	"cads/shared/wire/roleswire"
	"cads/shared/wire/taskworkerwire"
	"cads/shared/wire/testswire"
)

// qfMode is what the SQS proxy does to sends once armed.
type qfMode int

const (
	qfPass qfMode = iota
	// qfRefuse answers 503 ServiceUnavailable without passing the send
	// on: nothing is queued (SQS down).
	qfRefuse
	// qfLoseAnswer passes the send on, so the message is queued, and
	// then answers 500 InternalError: the sender sees a failure, and the
	// SDK's retries each queue another copy (the ambiguous failure).
	qfLoseAnswer
)

// qfProxy sits between the SDK and goaws.
type qfProxy struct {
	goaws *httputil.ReverseProxy
	mu    sync.Mutex
	mode  qfMode
	// failed counts the sends answered with an error since arm.
	failed int
}

func (p *qfProxy) arm(m qfMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.failed = m, 0
}

// disarm lets sends through again and returns how many were failed.
func (p *qfProxy) disarm() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = qfPass
	return p.failed
}

// qfAction is the SQS action of a request. The SDK of go.mod speaks SQS'
// JSON protocol (X-Amz-Target: AmazonSQS.<Action>); the query protocol of
// older SDKs names it in the form body's Action field.
func qfAction(r *http.Request) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		_, a, _ := strings.Cut(t, ".")
		return a
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		v, _ := url.ParseQuery(string(b))
		return v.Get("Action")
	}
	return r.URL.Query().Get("Action")
}

func (p *qfProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mode := qfPass
	if a := qfAction(r); a == "SendMessage" || a == "SendMessageBatch" {
		p.mu.Lock()
		mode = p.mode
		if mode != qfPass {
			p.failed++
		}
		p.mu.Unlock()
	}
	switch mode {
	case qfRefuse:
		qfError(w, http.StatusServiceUnavailable, `{"__type":"com.amazonaws.sqs#ServiceUnavailable","message":"The request has failed due to a temporary failure of the server."}`)
	case qfLoseAnswer:
		p.goaws.ServeHTTP(httptest.NewRecorder(), r)
		qfError(w, http.StatusInternalServerError, `{"__type":"com.amazonaws.sqs#InternalError","message":"We encountered an internal error. Please try again."}`)
	default:
		p.goaws.ServeHTTP(w, r)
	}
}

// qfError answers as SQS' JSON protocol does.
func qfError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// qfEnv is a bootstrapped table (minidyn) and the template's queues
// (goaws) behind the proxy, with the functions' dependencies wired to
// them.
type qfEnv struct {
	t     *testing.T
	dyn   testenv.Dynamo
	proxy *qfProxy
	deps  wire.Deps
	boot  bootstrap.Result
	op    caller.Principal
	log   *slog.Logger
}

func newQFEnv(t *testing.T) *qfEnv {
	t.Helper()
	ctx := context.Background()
	e := &qfEnv{t: t, dyn: testenv.NewDynamo(t), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.deps = wire.New(e.log, e.dyn.Client, e.dyn.Table)

	endpoint, stop, err := localaws.StartSQS(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy = &qfProxy{goaws: httputil.NewSingleHostReverseProxy(target)}
	hs := httptest.NewServer(e.proxy)
	t.Cleanup(hs.Close)
	e.deps.SQS, err = localaws.SQSClient(ctx, hs.URL, func(o *sqs.Options) {
		o.Retryer = fastRetryer()
	})
	if err != nil {
		t.Fatal(err)
	}
	qs, err := localaws.EnsureQueues(ctx, e.deps.SQS, testenv.Template(t).Queues, func(id string) string { return "qf-" + strings.ToLower(id) })
	if err != nil {
		t.Fatal(err)
	}
	e.deps.QueueURLs = map[string]string{}
	for id, q := range qs {
		e.deps.QueueURLs[id] = q.URL
	}
	e.boot, e.op = testenv.Bootstrap(t, e.deps.Store)
	return e
}

// handler returns fn's handler; for req.fn.
func handler(h apigw.ProxyHandler) func(wire.Deps) apigw.ProxyHandler {
	return func(wire.Deps) apigw.ProxyHandler { return h }
}

func (e *qfEnv) do(r req) events.APIGatewayProxyResponse { return invoke(e.t, e.deps, r) }

// ok sends r and returns the body of its 2xx answer.
func (e *qfEnv) ok(r req) map[string]any {
	e.t.Helper()
	resp := e.do(r)
	if resp.StatusCode/100 != 2 {
		e.t.Fatalf("%s %s: %d %s", r.method, r.resource, resp.StatusCode, resp.Body)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
		e.t.Fatalf("%s %s: %v in %s", r.method, r.resource, err, resp.Body)
	}
	return out
}

// snapshot is every item of the table, by its key.
func (e *qfEnv) snapshot() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	p := dynamodb.NewScanPaginator(e.dyn.Client, &dynamodb.ScanInput{TableName: aws.String(e.dyn.Table)})
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
			k := fmt.Sprint(m[store.AttrPK], " ", m[store.AttrSK])
			if _, dup := out[k]; dup || m[store.AttrPK] == nil {
				e.t.Fatalf("snapshot: no unique key for item %v", m)
			}
			b, _ := json.Marshal(m)
			out[k] = string(b)
		}
	}
	return out
}

// receive takes up to 10 messages off queue id (a long poll of a
// second); they come back after visibility seconds unless deleted.
func (e *qfEnv) receive(id string, visibility int32) []events.SQSMessage {
	e.t.Helper()
	out, err := e.deps.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.deps.QueueURLs[id]),
		MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: visibility})
	if err != nil {
		e.t.Fatalf("receive from %s: %v", id, err)
	}
	var msgs []events.SQSMessage
	for _, m := range out.Messages {
		msgs = append(msgs, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), EventSource: "aws:sqs"})
	}
	return msgs
}

// consume hands msgs to h as the event source does and deletes those
// it did not report as failed; it returns how many failed.
func (e *qfEnv) consume(id string, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), msgs []events.SQSMessage) int {
	e.t.Helper()
	ev := events.SQSEvent{Records: msgs}
	throughJSON(e.t, &ev)
	resp, err := h(context.Background(), ev)
	if err != nil {
		e.t.Fatalf("%s consumer: %v", id, err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for _, m := range msgs {
		if failed[m.MessageId] {
			continue
		}
		if _, err := e.deps.SQS.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.deps.QueueURLs[id]), ReceiptHandle: aws.String(m.ReceiptHandle)}); err != nil {
			e.t.Fatal(err)
		}
	}
	return len(failed)
}

// drain consumes queue id until a long poll finds it empty, and returns
// how many messages it handled.
func (e *qfEnv) drain(id string, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) int {
	e.t.Helper()
	n := 0
	for {
		msgs := e.receive(id, 30)
		if len(msgs) == 0 {
			return n
		}
		if f := e.consume(id, h, msgs); f > 0 {
			e.t.Fatalf("%s consumer failed %d messages", id, f)
		}
		n += len(msgs)
	}
}

// producers is an outbox whose markers are due at once, for the
// producing functions built by hand below: the sweep's turn needs no
// waiting.
func (e *qfEnv) producers() *outbox.Outbox {
	o := outbox.New(e.deps.Store.Tasks, outbox.SQS{Client: e.deps.SQS, URLs: e.deps.QueueURLs}, e.log)
	o.ResendAfter = 0
	return o
}

// sweep is the task worker's scheduled invocation as wired (an event
// without records: the outbox sweep of every queue).
func (e *qfEnv) sweep() {
	e.t.Helper()
	testenv.AwaitIndexes() // the outbox is found through an index
	resp, err := taskworkerwire.Local(e.deps)(context.Background(), events.SQSEvent{})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		e.t.Fatalf("scheduled sweep: %v %+v", err, resp)
	}
}

// markers are the outbox markers of the table, due or not.
func (e *qfEnv) markers() []store.OutboxMarker {
	e.t.Helper()
	testenv.AwaitIndexes() // the outbox is found through an index
	due, err := e.deps.Store.Tasks.DueOutbox(context.Background(), time.Now().Add(time.Hour), 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return due
}

var qfModes = []struct {
	name string
	mode qfMode
}{{"refused", qfRefuse}, {"answer lost", qfLoseAnswer}}

// qfDataPlane counts the lifecycle calls the task worker makes.
type qfDataPlane struct {
	*tasks.FakeDataPlane
	setState atomic.Int32
}

func (d *qfDataPlane) SetState(ctx context.Context, app domain.Application, state string) error {
	d.setState.Add(1)
	return d.FakeDataPlane.SetState(ctx, app, state)
}

// POST /v2/tasks while SQS fails the send: the task is committed with its
// outbox marker, so the request answers 201 with the pending task as
// always. Once SQS is back, the sweep (the worker's scheduled empty
// invocation) sends it, and it runs exactly once, however many copies of
// its message reached the queue.
func TestQueueSendFailureTasks(t *testing.T) {
	const js = "application/json"
	for _, m := range qfModes {
		t.Run(m.name, func(t *testing.T) {
			e := newQFEnv(t)
			ctx := context.Background()
			// The tasks function and the worker as wire builds them, with
			// a short resend delay so that the sweep's turn comes quickly.
			ob := outbox.New(e.deps.Store.Tasks, outbox.SQS{Client: e.deps.SQS, URLs: e.deps.QueueURLs}, e.log)
			ob.ResendAfter = 500 * time.Millisecond
			tasksFn := apigw.Lambda(e.log, tasksapi.New(tasksapi.NewStore(e.deps.Store), access.New(access.NewStore(e.deps.Store), e.log), tasks.NewOutbox(e.deps.Store.Tasks, ob.Queue(wire.TasksQueue)), e.log))
			dp := &qfDataPlane{FakeDataPlane: tasks.NewFakeDataPlane(e.log, tasks.LoopbackOnly)}
			worker := tasks.NewWorker(tasks.NewWorkerStore(e.deps.Store), dp, ob, e.log)

			app := e.ok(req{fn: applicationswire.Handler, as: e.op, method: "POST", resource: "/v2/applications", contentType: js,
				body: `{"name": "Queue fault shop", "aliases": ["shop.queuefault.example.com"]}`})["id"].(string)
			e.proxy.arm(m.mode)
			resp := e.do(req{fn: handler(tasksFn), as: e.op, method: "POST", resource: "/v2/tasks", contentType: js,
				body: fmt.Sprintf(`{"type": "start", "target": "/v2/applications/%s"}`, app)})
			failedSends := e.proxy.disarm()
			if failedSends == 0 {
				t.Fatal("no send was failed")
			}
			var out tasks.Task
			if err := json.Unmarshal([]byte(resp.Body), &out); err != nil || resp.StatusCode != http.StatusCreated || out.ID == "" || out.State != domain.TaskPending {
				t.Fatalf("POST /v2/tasks while SQS fails: %d %s; want 201 with the pending task", resp.StatusCode, resp.Body)
			}
			if m.mode == qfRefuse {
				if msgs := e.receive(wire.TasksQueue, 30); len(msgs) != 0 {
					t.Fatalf("a refused send queued %d messages", len(msgs))
				}
			}

			// SQS is back: the scheduled sweep and the queue's event
			// source, as deployed, until the task has finished.
			task := func() domain.Task {
				tk, err := e.deps.Store.Tasks.GetTask(ctx, e.op.AccountID, out.ID)
				if err != nil {
					t.Fatal(err)
				}
				return tk
			}
			handled := 0
			deadline := time.Now().Add(20 * time.Second)
			for !task().Finished() {
				if time.Now().After(deadline) {
					t.Fatalf("the task never ran: %+v", task())
				}
				e.consume(wire.TasksQueue, worker.Handle, nil) // the schedule's empty invocation: a sweep
				// One message at a time, visible again soon if a claim
				// held by another copy makes the worker retry it.
				if msgs := e.receive(wire.TasksQueue, 1); len(msgs) > 0 {
					for _, msg := range msgs {
						e.consume(wire.TasksQueue, worker.Handle, []events.SQSMessage{msg})
					}
					handled += len(msgs)
				}
			}
			// Its outbox marker went with the outcome, so no sweep sends
			// it again, and every copy still queued finds it finished.
			testenv.AwaitIndexes() // the outbox is found through an index
			if due, err := e.deps.Store.Tasks.DueOutbox(ctx, time.Now().Add(time.Hour), 10); err != nil || len(due) != 0 {
				t.Fatalf("outbox markers left after the task finished: %+v %v", due, err)
			}
			handled += e.drain(wire.TasksQueue, worker.Handle)
			// Answers lost: each of the SDK's attempts queued a copy.
			if m.mode == qfLoseAnswer && handled < failedSends {
				t.Fatalf("%d sends failed after reaching the queue, but only %d messages arrived", failedSends, handled)
			}
			t.Logf("%d sends failed; the worker got %d messages", failedSends, handled)
			got := task()
			a, err := e.deps.Store.Applications.GetApplication(ctx, e.op.AccountID, app)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != domain.TaskSuccess || got.Attempts != 1 || dp.setState.Load() != 1 || a.State != domain.AppRunning {
				t.Fatalf("task %s after %d attempts, %d data plane calls, application %s; want success once", got.State, got.Attempts, dp.setState.Load(), a.State)
			}
		})
	}
}

// qfNotifier counts notifications by invitation.
type qfNotifier struct {
	mu sync.Mutex
	by map[string]int
}

func (n *qfNotifier) Notify(_ context.Context, note notifier.Notification) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.by == nil {
		n.by = map[string]int{}
	}
	n.by[note.Invitation]++
	return nil
}

func (n *qfNotifier) total() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := 0
	for _, c := range n.by {
		s += c
	}
	return s
}

func (n *qfNotifier) count(href string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.by[href]
}

// roles is the roles function with its notifications due at once.
func (e *qfEnv) roles() func(wire.Deps) apigw.ProxyHandler {
	return handler(apigw.Lambda(e.log, roles.New(roles.NewStore(e.deps.Store), access.New(access.NewStore(e.deps.Store), e.log), e.producers().Queue(wire.NotificationsQueue), e.log)))
}

// POST /v2/accounts/{id}/invitations while SQS fails the send: the
// invitation was written with its outbox marker, so the answer is 200
// with it queued. The sweep sends it once SQS is back, and the invitee is
// notified exactly once, whatever copies the lost answers queued.
func TestQueueSendFailureInvitationCreate(t *testing.T) {
	const js = "application/json"
	for _, m := range qfModes {
		t.Run(m.name, func(t *testing.T) {
			e := newQFEnv(t)
			n := &qfNotifier{}
			notify := notifier.NewNotifyHandler(e.deps.Store.Invitations, n, e.log)
			root := map[string]string{"id": e.boot.RootAccount}
			role := e.ok(req{fn: roleswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts/{id}/roles", params: root, contentType: js,
				body: `{"name": "Queue fault reader", "permissions": [{"method": "GET", "effect": "permit", "spec": ["/v2/applications/*"]}]}`})["href"].(string)

			e.proxy.arm(m.mode)
			resp := e.do(req{fn: e.roles(), as: e.op, method: "POST", resource: "/v2/accounts/{id}/invitations", params: root, contentType: js,
				body: fmt.Sprintf(`{"user_email": "outage@example.com", "role": %q}`, role)})
			failedSends := e.proxy.disarm()
			if failedSends == 0 {
				t.Fatal("no send was failed")
			}
			var out roles.Invitation
			if err := json.Unmarshal([]byte(resp.Body), &out); err != nil || resp.StatusCode != http.StatusOK || out.State != domain.InvitationQueued {
				t.Fatalf("POST invitation while SQS fails: %d %s; want 200 with the invitation queued", resp.StatusCode, resp.Body)
			}
			if mk := e.markers(); len(mk) != 1 || mk[0].Queue != wire.NotificationsQueue {
				t.Fatalf("outbox after the failed send: %+v", mk)
			}
			// Copies that reached the queue (the lost answers) deliver it.
			copies := e.drain(wire.NotificationsQueue, notify)
			if want := map[qfMode]int{qfRefuse: 0, qfLoseAnswer: failedSends}[m.mode]; copies != want {
				t.Fatalf("%d sends failed; %d messages reached the queue, want %d", failedSends, copies, want)
			}

			// SQS is back: the task worker's scheduled sweep sends it.
			e.sweep()
			if got := e.drain(wire.NotificationsQueue, notify); got != 1 {
				t.Fatalf("the sweep queued %d messages, want 1", got)
			}
			if n.count(out.Href) != 1 || n.total() != 1 {
				t.Fatalf("notified %d times (%d in all), want once", n.count(out.Href), n.total())
			}
			inv, err := e.deps.Store.Invitations.GetInvitation(context.Background(), e.boot.RootAccount, domain.InvitationRole, out.ID)
			if err != nil || inv.State != domain.InvitationSent {
				t.Fatalf("after delivery: %+v %v", inv, err)
			}
			if mk := e.markers(); len(mk) != 0 {
				t.Fatalf("markers left after delivery: %+v", mk)
			}
		})
	}
}

// PATCH of a delivered invitation ({"state": "queued"}: send it again)
// while SQS fails the send: 200 with it queued again, and the sweep
// delivers it once SQS is back: one more notification, no more.
func TestQueueSendFailureInvitationResend(t *testing.T) {
	const js = "application/json"
	for _, m := range qfModes {
		t.Run(m.name, func(t *testing.T) {
			e := newQFEnv(t)
			ctx := context.Background()
			n := &qfNotifier{}
			notify := notifier.NewNotifyHandler(e.deps.Store.Invitations, n, e.log)
			root := map[string]string{"id": e.boot.RootAccount}
			role := e.ok(req{fn: roleswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts/{id}/roles", params: root, contentType: js,
				body: `{"name": "Queue fault reader", "permissions": [{"method": "GET", "effect": "permit", "spec": ["/v2/applications/*"]}]}`})["href"].(string)
			created := e.ok(req{fn: roleswire.Handler, as: e.op, method: "POST", resource: "/v2/accounts/{id}/invitations", params: root, contentType: js,
				body: fmt.Sprintf(`{"user_email": "resend@example.com", "role": %q}`, role)})
			href, id := created["href"].(string), created["id"].(string)
			if e.drain(wire.NotificationsQueue, notify) != 1 || n.count(href) != 1 {
				t.Fatal("the invitation was not delivered")
			}

			e.proxy.arm(m.mode)
			resp := e.do(req{fn: e.roles(), as: e.op, method: "PATCH", resource: "/v2/accounts/{id}/invitations/{invitation_id}",
				params: map[string]string{"id": e.boot.RootAccount, "invitation_id": id}, contentType: js, body: `{"state": "queued"}`})
			failedSends := e.proxy.disarm()
			if failedSends == 0 {
				t.Fatal("no send was failed")
			}
			if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"state":"queued"`) {
				t.Fatalf("re-send while SQS fails: %d %s; want 200 with the invitation queued", resp.StatusCode, resp.Body)
			}
			// Still in the invitee's inbox while it waits.
			inbox, _, _, err := e.deps.Store.Invitations.PageInbox(ctx, "resend@example.com", domain.InvitationRole, "", false, 100)
			if err != nil || len(inbox) != 1 || inbox[0].ID != id {
				t.Fatalf("the invitee's inbox after the failed send: %+v %v", inbox, err)
			}
			e.drain(wire.NotificationsQueue, notify)
			e.sweep()
			e.drain(wire.NotificationsQueue, notify)
			if n.count(href) != 2 {
				t.Fatalf("%d notifications in all, want 2 (the first delivery and the re-send)", n.count(href))
			}
			after, err := e.deps.Store.Invitations.GetInvitation(ctx, e.boot.RootAccount, domain.InvitationRole, id)
			if err != nil || after.State != domain.InvitationSent || len(e.markers()) != 0 {
				t.Fatalf("after the re-send's delivery: %+v %v, markers %+v", after, err, e.markers())
			}
		})
	}
}

// POST /v2/tests (start a run) while SQS fails the send: the run was
// written with its outbox marker, so the answer is 200 with the run
// queued (not failed, not a 503), and the sweep queues it once SQS is
// back.
func TestQueueSendFailureTestRun(t *testing.T) {
	e := newQFEnv(t)
	ctx := context.Background()
	// A test names an alias of the account's applications.
	now := e.deps.Store.Now()
	if err := e.deps.Store.Applications.CreateApplication(ctx, domain.Application{ID: "qfapp", Account: e.op.AccountID, State: domain.AppStopped,
		Config: `{"name":"qf","aliases":["shop.example.com"]}`, Aliases: []string{"shop.example.com"}, Version: 1, Created: now, Updated: now}, domain.Quota{}); err != nil {
		t.Fatal(err)
	}
	cfg := `{"probabilities": 1, "models": {"home": {"type": "user.StaticSession", "requests": [{"name": "home", "method": "GET", "url": "http://shop.example.com/"}]}}}`
	e.ok(req{fn: testswire.Handler, as: e.op, method: "PUT", resource: "/v2/tests/{id}", params: map[string]string{"id": "qf"}, contentType: "application/json", body: cfg})
	testsFn := handler(apigw.Lambda(e.log, testsapi.New(testsapi.NewStore(e.deps.Store), access.New(access.NewStore(e.deps.Store), e.log), e.producers().Queue(wire.TestRunsQueue), e.log)))

	e.proxy.arm(qfRefuse)
	body := e.ok(req{fn: testsFn, as: e.op, method: "POST", resource: "/v2/tests", contentType: "application/json", body: `{"id": "qf", "duration": 1, "virtualUsers": 1}`})
	if n := e.proxy.disarm(); n == 0 {
		t.Fatal("no send was failed")
	}
	last, _ := body["last_run"].(map[string]any)
	if last["state"] != "queued" {
		t.Fatalf("the run while SQS fails: %v; want it queued", body)
	}
	if msgs := e.receive(wire.TestRunsQueue, 30); len(msgs) != 0 {
		t.Fatalf("a refused send queued %d messages", len(msgs))
	}
	e.sweep()
	msgs := e.receive(wire.TestRunsQueue, 30)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Body, fmt.Sprint(last["id"])) {
		t.Fatalf("the sweep queued %v, want the run's message", msgs)
	}
	if at, err := e.deps.Store.Tests.GetAppTest(ctx, e.op.AccountID, "qf"); err != nil || at.RunState != "queued" || len(e.markers()) != 0 {
		t.Fatalf("after the sweep: %+v %v, markers %+v", at, err, e.markers())
	}
}

// POST /v2/address-sets while SQS fails the send of its metrics event:
// the event was committed with the set in its (held) outbox marker, so
// the request answers 200 with the set; the sweep sends it, and the
// aggregator's fold removes the marker.
func TestQueueSendFailureAddressSet(t *testing.T) {
	e := newQFEnv(t)
	e.proxy.arm(qfRefuse)
	resp := e.do(req{fn: addresssetswire.Handler, as: e.op, method: "POST", resource: "/v2/address-sets", contentType: "application/json",
		body: `{"name": "queue fault exits", "type": "manual", "entries": [{"address": "192.0.2.0/24"}]}`})
	if n := e.proxy.disarm(); n == 0 {
		t.Fatal("no send was failed")
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST address set while SQS fails: %d %s", resp.StatusCode, resp.Body)
	}
	mk := e.markers()
	if len(mk) != 1 || mk[0].Queue != wire.MetricsQueue || !mk[0].Held {
		t.Fatalf("the set's metrics event is not in its outbox: %+v", mk)
	}
	if msgs := e.receive(wire.MetricsQueue, 30); len(msgs) != 0 {
		t.Fatalf("a refused send queued %d messages", len(msgs))
	}
	// Due two minutes after the write: the schedule's sweep of then.
	if _, err := e.deps.Store.Tasks.PostponeOutbox(context.Background(), &mk[0], time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	e.sweep()
	if got := e.drain(wire.MetricsQueue, aggregatorwire.Handler(e.deps)); got != 1 {
		t.Fatalf("the sweep queued %d metrics messages, want 1", got)
	}
	if mk := e.markers(); len(mk) != 0 {
		t.Fatalf("markers left after the fold: %+v", mk)
	}
}
