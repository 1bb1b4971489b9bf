package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/outbox"
	"cads/shared/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// recorder is a Sender that keeps what it was given, or refuses while
// down.
type recorder struct {
	mu   sync.Mutex
	down bool
	sent map[string][]string
}

func (r *recorder) Send(_ context.Context, queue string, bodies ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return errors.New("queue service unavailable")
	}
	if r.sent == nil {
		r.sent = map[string][]string{}
	}
	r.sent[queue] = append(r.sent[queue], bodies...)
	return nil
}

func (r *recorder) setDown(down bool) { r.mu.Lock(); r.down = down; r.mu.Unlock() }

func (r *recorder) take() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sent
	r.sent = nil
	for _, b := range out {
		slices.Sort(b)
	}
	return out
}

type fixture struct {
	st  *store.Store
	d   testenv.Dynamo
	rec *recorder
	o   *outbox.Outbox
}

func newFixture(t *testing.T) *fixture {
	d := testenv.NewDynamo(t)
	f := &fixture{st: store.New(d.Client, d.Table), d: d, rec: &recorder{}}
	f.o = outbox.New(f.st.Tasks, f.rec, quiet)
	f.o.ResendAfter = 0 // due at once: the sweep's turn needs no waiting
	// The account the tests are written to: a test's create checks that
	// it exists and is not being deleted.
	if err := f.st.Accounts.CreateAccount(context.Background(), domain.Account{ID: "a1", Name: "a1", Ancestors: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// task writes a task with its (held) marker, as the task outbox does.
func (f *fixture) task(t *testing.T, q *outbox.Queue, id string) store.OutboxMarker {
	t.Helper()
	now := f.st.Now()
	m := q.Marker("task " + id)
	if err := f.st.Tasks.CreateTask(context.Background(), domain.Task{ID: id, Account: "a1", Type: "start", State: domain.TaskPending, CreatedBy: "u", Created: now, Updated: now}, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// run writes an application test's run with its marker (not held), as
// the tests function does.
func (f *fixture) run(t *testing.T, q *outbox.Queue, test string) store.OutboxMarker {
	t.Helper()
	ctx := context.Background()
	now := f.st.Now()
	at := domain.AppTest{Account: "a1", ID: test, Description: "d", MediaType: "application/x-tar", Summary: `{}`,
		Archive: store.NewAppTestBlob("b-"+test, []byte("x")), ArchiveUpdated: now, Version: 1, Created: now, Updated: now}
	if err := f.st.Tests.CreateAppTest(ctx, at, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	m := q.Marker("run " + test)
	if err := f.st.Tests.StartAppTestRun(ctx, "a1", test, "r-"+test, "queued", "{}", now.Add(time.Hour), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fixture) due(t *testing.T) []store.OutboxMarker {
	t.Helper()
	due, err := f.st.Tasks.DueOutbox(context.Background(), f.st.Now().Add(time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return due
}

// After the commit: a sent marker that is not held goes; a held one stays
// for its consumer; a failed send leaves both for the sweep, which sends
// them once the queue is back, deleting the one that is not held.
func TestSendThenSweep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tasks, runs := f.o.Queue("TasksQueue"), f.o.Queue("TestRunsQueue")

	mt, mr := f.task(t, tasks, "t1"), f.run(t, runs, "x1")
	if err := tasks.Send(ctx, &mt); err != nil {
		t.Fatal(err)
	}
	if err := runs.Send(ctx, &mr); err != nil {
		t.Fatal(err)
	}
	if got := f.rec.take(); fmt.Sprint(got) != "map[TasksQueue:[task t1] TestRunsQueue:[run x1]]" {
		t.Fatalf("sent %v", got)
	}
	if due := f.due(t); len(due) != 1 || due[0].Body != "task t1" {
		t.Fatalf("markers after the sends: %+v; want the held task marker only", due)
	}

	f.rec.setDown(true)
	mt2, mr2 := f.task(t, tasks, "t2"), f.run(t, runs, "x2")
	if tasks.Send(ctx, &mt2) == nil || runs.Send(ctx, &mr2) == nil {
		t.Fatal("a refused send reported success")
	}
	// The sweep meets the outage too: nothing sent, markers kept.
	if n, err := f.o.Sweep(ctx); err == nil || n != 0 {
		t.Fatalf("sweep while the queue is down: %d %v", n, err)
	}
	if due := f.due(t); len(due) != 3 {
		t.Fatalf("markers after the outage: %+v", due)
	}
	f.rec.setDown(false)
	n, err := f.o.Sweep(ctx)
	if err != nil || n != 3 {
		t.Fatalf("sweep: %d %v; want the 3 due markers sent", n, err)
	}
	if got := f.rec.take(); fmt.Sprint(got) != "map[TasksQueue:[task t1 task t2] TestRunsQueue:[run x2]]" {
		t.Fatalf("sweep sent %v", got)
	}
	var left []string
	for _, m := range f.due(t) {
		left = append(left, m.Body)
	}
	slices.Sort(left)
	if fmt.Sprint(left) != "[task t1 task t2]" {
		t.Fatalf("markers after the sweep: %v; want the held ones only", left)
	}
}

// Concurrent sweeps send each due marker once; one sweep handles at most
// SweepBatch markers, with its writes in parallel.
func TestSweepOncePerDueTimeAndBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	q := f.o.Queue("TestRunsQueue")
	const n = 30
	for i := range n {
		f.run(t, q, fmt.Sprintf("x%02d", i))
	}
	f.o.SweepBatch = 20
	// Moved an hour ahead, a marker one sweep took is not due for another.
	f.o.ResendAfter = time.Hour
	var wg sync.WaitGroup
	counts := make([]int, 4)
	for i := range counts {
		wg.Go(func() {
			c, err := f.o.Sweep(ctx)
			if err != nil {
				t.Error(err)
			}
			counts[i] = c
		})
	}
	wg.Wait()
	sent := f.rec.take()["TestRunsQueue"]
	total := 0
	for _, c := range counts {
		if c > f.o.SweepBatch {
			t.Fatalf("one sweep sent %d, more than its batch of %d", c, f.o.SweepBatch)
		}
		total += c
	}
	if total != len(sent) || len(slices.Compact(slices.Clone(sent))) != len(sent) {
		t.Fatalf("sweeps report %d, sent %d: %v", total, len(sent), sent)
	}
	// Whatever the first round left (another sweep's lost races) goes in
	// the next.
	for range 3 {
		if _, err := f.o.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sent = append(sent, f.rec.take()["TestRunsQueue"]...)
	slices.Sort(sent)
	if len(sent) != n || len(slices.Compact(sent)) != n || len(f.due(t)) != 0 {
		t.Fatalf("after the sweeps: %d sent (%d distinct), %d markers left; want each of %d once", len(sent), len(slices.Compact(sent)), len(f.due(t)), n)
	}

	// Round trips of a sweep of 20: the query, then 20 moves and 20
	// deletes in parallel, so the wall time is about three round trips.
	f.o.ResendAfter = 0
	for i := range 20 {
		f.run(t, q, fmt.Sprintf("y%02d", i))
	}
	f.o.ResendAfter = time.Hour
	f.d.Counter.Reset()
	if c, err := f.o.Sweep(ctx); err != nil || c != 20 {
		t.Fatalf("sweep: %d %v", c, err)
	}
	if got := f.d.Counter.Total(); got != 41 {
		t.Fatalf("a sweep of 20 made %d calls, want 41 (query, 20 moves, 20 deletes)", got)
	}
}

// The SQS sender against the embedded SQS server: batches of ten, and a
// queue it knows no URL for is an error, not a silent drop.
func TestSQSSender(t *testing.T) {
	client, urls := testenv.NewQueues(t)
	s := outbox.SQS{Client: client, URLs: urls}
	ctx := context.Background()
	var bodies []string
	for i := range 23 {
		bodies = append(bodies, fmt.Sprintf("m%02d", i))
	}
	if err := s.Send(ctx, "TestRunsQueue", bodies...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < len(bodies) {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(urls["TestRunsQueue"]), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			got = append(got, aws.ToString(m.Body))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, bodies) {
		t.Fatalf("received %v", got)
	}
	if err := s.Send(ctx, "NoSuchQueue", "x"); err == nil {
		t.Fatal("a send to an unknown queue succeeded")
	}
	if err := (outbox.SQS{}).Send(ctx, "TestRunsQueue", "x"); err == nil {
		t.Fatal("a send without a client succeeded")
	}
}
