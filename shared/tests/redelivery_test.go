package tests_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/loadgen"
	"cads/shared/outbox"
	"cads/shared/store"
	"cads/shared/tests"
	"cads/shared/tests/testsapi"
	"cads/shared/wire"
)

// crashVisibility is the visibility timeout, in seconds, of a run message
// the tests receive and never delete: a runner that died holding it. It
// comes back when that runs out, as on SQS (where the queue's own 5400 s,
// six times the runner's timeout, run out); the tests end it at once
// (testenv.Expire) rather than wait it out. It is longer than a run, so
// a receipt stays valid while its run lasts.
const crashVisibility = 30

// takeRun receives the one message of the test runs queue, polling for up
// to 10 s.
func (e *env) takeRun() events.SQSMessage {
	e.t.Helper()
	url := e.deps.QueueURLs[wire.TestRunsQueue]
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := e.deps.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			MaxNumberOfMessages: 1, WaitTimeSeconds: 1, VisibilityTimeout: crashVisibility})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(out.Messages) == 1 {
			m := out.Messages[0]
			return events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), EventSource: "aws:sqs"}
		}
	}
	e.t.Fatal("no message on the test runs queue")
	return events.SQSMessage{}
}

// redeliveredRun ends the visibility timeout of msg, received and never
// deleted, as if the time had passed, and receives it again.
func (e *env) redeliveredRun(msg events.SQSMessage) events.SQSMessage {
	e.t.Helper()
	testenv.Expire(e.t, e.deps.SQS, e.deps.QueueURLs[wire.TestRunsQueue], msg.ReceiptHandle)
	got := e.takeRun()
	if got.MessageId != msg.MessageId || got.Body != msg.Body {
		e.t.Fatalf("redelivery %+v is not the message %+v", got, msg)
	}
	return got
}

// laterStore is the runner's store seen from a clock shift later.
func laterStore(st *store.Store, shift time.Duration) tests.RunnerStore {
	r := tests.NewRunnerStore(st)
	r.Now = func() time.Time { return st.Now().Add(shift) }
	return r
}

func (e *env) deleteRun(msg events.SQSMessage) {
	e.t.Helper()
	if _, err := e.deps.SQS.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.deps.QueueURLs[wire.TestRunsQueue]), ReceiptHandle: aws.String(msg.ReceiptHandle)}); err != nil {
		e.t.Fatal(err)
	}
}

// handleRun runs h on msg as the event source does; it fails the test if
// h reports the message as failed.
func (e *env) handleRun(h tests.RunHandler, msg events.SQSMessage) {
	e.t.Helper()
	ev := events.SQSEvent{Records: []events.SQSMessage{msg}}
	roundTrip(e.t, &ev)
	resp, err := h(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		e.t.Fatalf("runner: %v %+v", err, resp)
	}
}

// storedTest reads the test's item: its run state, run and active time.
func (e *env) storedTest(id string) domain.AppTest {
	e.t.Helper()
	t, err := e.st.Tests.GetAppTest(context.Background(), e.op.AccountID, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

func storedRun(t *testing.T, at domain.AppTest) tests.Run {
	t.Helper()
	var r tests.Run
	if err := json.Unmarshal([]byte(at.Run), &r); err != nil {
		t.Fatalf("run %q: %v", at.Run, err)
	}
	return r
}

// postRun uploads test id and starts a run of it; it returns the run's
// load id.
func (e *env) postRun(id, body string) string {
	e.t.Helper()
	up := uploads(e.t, base)["tar.bz2"]
	if r := e.raw(e.op, "PUT", id, up.mediaType, up.data); r.Status != 200 {
		e.t.Fatalf("PUT: %d %s", r.Status, r.Raw)
	}
	r := e.call(e.op, "POST", "/v2/tests", map[string]string{"Content-Type": "application/json"}, []byte(body))
	if r.Status != 200 {
		e.t.Fatalf("POST run: %d %s", r.Status, r.Raw)
	}
	return lastRun(e.t, r)["load_id"].(string)
}

// metricsDepth is how many messages the metrics queue holds, visible or
// not. It reads the queue's attributes instead of receiving: receiving
// ten large ingest messages the moment a run's load has ended sometimes
// loses the answer on the client side ("use of closed network
// connection"); the SDK retries, and the ten messages stay in flight for
// the queue's 360 s visibility timeout.
func (e *env) metricsDepth() int {
	e.t.Helper()
	return testenv.QueueDepth(e.t, e.deps.SQS, e.deps.QueueURLs[wire.MetricsQueue])
}

// A runner that finished a run (result written, access records sent) and
// died before deleting its message: the redelivered message runs no load,
// sends no records and leaves the stored run as it was, however often it
// comes back.
func TestRunnerRedeliveryAfterCompletionDoesNotRunAgain(t *testing.T) {
	e := newEnv(t)
	srv := e.edge
	loadID := e.postRun("shop", `{"id":"shop","duration":1,"virtualUsers":2,"targets":"/v2/applications/app1"}`)

	msg := e.takeRun()
	e.handleRun(e.runner, msg)
	// The runner dies here: the message is never deleted.
	done := e.storedTest("shop")
	run := storedRun(t, done)
	seen := srv.count(loadID)
	if done.RunState != tests.RunSucceeded || run.Result == nil || seen == 0 || run.Result.AggregateMetrics.RequestCount != seen {
		t.Fatalf("the run did not complete: state %s, %d requests seen, run %s", done.RunState, seen, done.Run)
	}
	if run.AccessRecords == nil || run.AccessRecords.Sent != seen || run.AccessRecords.Failed != 0 {
		t.Fatalf("access records %+v for %d requests", run.AccessRecords, seen)
	}
	// One ingest message per 100 records.
	depth := e.metricsDepth()
	if depth != (seen+99)/100 {
		t.Fatalf("the metrics queue holds %d messages for %d access records", depth, seen)
	}

	for i := range 2 {
		msg = e.redeliveredRun(msg)
		e.handleRun(e.runner, msg)
		if n := srv.count(loadID); n != seen {
			t.Fatalf("redelivery %d ran the load again: the target saw %d requests, then %d", i+1, seen, n)
		}
		if again := e.storedTest("shop"); !reflect.DeepEqual(again, done) {
			t.Fatalf("redelivery %d changed the stored run:\n before %+v\n after  %+v", i+1, done, again)
		}
	}
	e.deleteRun(msg)
	if d := e.metricsDepth(); d != depth {
		t.Fatalf("redeliveries sent %d more ingest messages", d-depth)
	}
}

// dyingDriver runs the real load, then ends the runner's goroutine as if
// its process died: the run is left running, its result never written.
type dyingDriver struct{ loadgen.Local }

func (d dyingDriver) Run(ctx context.Context, p loadgen.Plan) (loadgen.Result, error) {
	_, _ = d.Local.Run(ctx, p)
	runtime.Goexit()
	panic("unreachable")
}

// A runner that marked the run running, sent load and died before
// recording the result: the redelivered message finds the run running
// and ends it as failed, as documented (docs/application-tests.md: "a
// message that finds its run running (its runner died) ends it as
// failed"). It does not send the load again, and the test can be run
// again at once.
func TestRunnerRedeliveryWhileRunningEndsTheRun(t *testing.T) {
	e := newEnv(t)
	srv := e.edge
	loadID := e.postRun("shop", `{"id":"shop","duration":1,"virtualUsers":2}`)

	msg := e.takeRun()
	dying := tests.NewRunner(tests.NewRunnerStore(e.st), dyingDriver{loadgen.Local{Edge: loadgen.Edge(e.deps.Edge)}}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		ev := events.SQSEvent{Records: []events.SQSMessage{msg}}
		_, _ = dying(context.Background(), ev)
		t.Error("the dying runner returned")
	}()
	<-exited
	mid := e.storedTest("shop")
	sent := srv.count(loadID)
	if mid.RunState != tests.RunRunning || storedRun(t, mid).Started == nil || sent == 0 {
		t.Fatalf("the dead runner left state %s after %d requests (run %s)", mid.RunState, sent, mid.Run)
	}

	// A copy inside the run's active window may be a duplicate of a live
	// run's message: it waits (is retried) and changes nothing.
	msg = e.redeliveredRun(msg)
	ev := events.SQSEvent{Records: []events.SQSMessage{msg}}
	if resp, err := e.runner(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("a copy during the active window: %v %+v, want it retried", err, resp)
	}
	if again := e.storedTest("shop"); !reflect.DeepEqual(again, mid) || srv.count(loadID) != sent {
		t.Fatalf("a copy during the active window changed the run: %+v", again)
	}
	// After the window (the clock moved past it) the runner is known dead.
	later := tests.NewRunner(laterStore(e.st, time.Duration(mid.RunActiveUntil-time.Now().UnixMilli())*time.Millisecond+time.Second),
		loadgen.Local{Edge: loadgen.Edge(e.deps.Edge)}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	msg = e.redeliveredRun(msg)
	e.handleRun(later, msg)
	ended := e.storedTest("shop")
	run := storedRun(t, ended)
	if ended.RunState != tests.RunFailed || run.Completed == nil || run.Result != nil || !strings.Contains(run.Message, "runner stopped before the run finished") {
		t.Fatalf("after the redelivery: state %s, run %s", ended.RunState, ended.Run)
	}
	if n := srv.count(loadID); n != sent {
		t.Fatalf("the redelivery sent load again: %d requests, then %d", sent, n)
	}
	if ended.RunActiveUntil != 0 {
		t.Fatalf("the failed run still blocks the test until %d", ended.RunActiveUntil)
	}
	// A further copy changes nothing. (Handed over directly: the queue's
	// maxReceiveCount, 3, has been reached.)
	e.handleRun(later, msg)
	if again := e.storedTest("shop"); !reflect.DeepEqual(again, ended) || srv.count(loadID) != sent {
		t.Fatalf("a third delivery changed the run: %+v", again)
	}
	e.deleteRun(msg)

	// The test is free: a new run starts and runs once.
	r := e.call(e.op, "POST", "/v2/tests", map[string]string{"Content-Type": "application/json"}, []byte(`{"id":"shop","duration":1,"virtualUsers":1}`))
	if r.Status != 200 {
		t.Fatalf("a new run after the failed one: %d %s", r.Status, r.Raw)
	}
	next := lastRun(t, r)["load_id"].(string)
	if e.drain() != 1 || srv.count(next) == 0 || e.storedTest("shop").RunState != tests.RunSucceeded {
		t.Fatalf("the new run: %d requests, state %s", srv.count(next), e.storedTest("shop").RunState)
	}
}

// refusingSender is SQS in an outage: every send fails.
type refusingSender struct{}

func (refusingSender) Send(context.Context, string, ...string) error {
	return errors.New("service unavailable")
}

// A run whose send SQS refused was written with its outbox marker: POST
// answers 200 with the run queued, and the outbox sweep sends it once
// SQS is back; the runner runs it once, and a second copy of its message
// (as a sweep sends after a lost answer) runs nothing.
func TestRunSendRefusedIsStartedByTheSweepOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	down := outbox.New(e.st.Tasks, refusingSender{}, e.deps.Log)
	down.ResendAfter = 0
	e.tests = apigw.Lambda(e.deps.Log, testsapi.New(testsapi.NewStore(e.st), access.New(access.NewStore(e.st), e.deps.Log), down.Queue(wire.TestRunsQueue), e.deps.Log))
	loadID := e.postRun("shop", `{"id":"shop","duration":1,"virtualUsers":1}`)
	if at := e.storedTest("shop"); at.RunState != tests.RunQueued || at.RunID != loadID {
		t.Fatalf("the accepted run: %+v", at)
	}
	if got := e.drain(); got != 0 {
		t.Fatalf("a refused send queued %d messages", got)
	}

	sweep := outbox.New(e.st.Tasks, outbox.SQS{Client: e.deps.SQS, URLs: e.deps.QueueURLs}, e.deps.Log)
	testenv.AwaitIndexes() // the outbox is found through an index
	if n, err := sweep.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	msg := e.takeRun()
	// Not deleted from the queue afterwards: nothing below reads it again.
	e.handleRun(e.runner, msg)
	done := e.storedTest("shop")
	seen := e.edge.count(loadID)
	if done.RunState != tests.RunSucceeded || seen == 0 {
		t.Fatalf("the swept run: state %s, %d requests", done.RunState, seen)
	}
	testenv.AwaitIndexes() // the outbox is found through an index
	if due, err := e.st.Tasks.DueOutbox(ctx, time.Now().Add(time.Hour), 10); err != nil || len(due) != 0 {
		t.Fatalf("markers after the sweep: %+v %v", due, err)
	}
	e.handleRun(e.runner, msg) // a second copy
	if n := e.edge.count(loadID); n != seen || !reflect.DeepEqual(e.storedTest("shop"), done) {
		t.Fatalf("a second copy ran again: %d requests (was %d), %+v", n, seen, e.storedTest("shop"))
	}
}
