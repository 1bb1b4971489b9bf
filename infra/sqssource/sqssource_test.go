package sqssource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"cads/infra/localaws"
	"cads/infra/sam"
)

// Set up once by TestMain: one goaws server with every test's queue.
var (
	client *sqs.Client
	queues map[string]localaws.QueueInfo
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		ctx := context.Background()
		endpoint, stop, err := localaws.StartSQS(ctx, "")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop(ctx)
		client, err = localaws.SQSClient(ctx, endpoint)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		tp, err := sam.Load("testdata/queues.yaml")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		queues, err = localaws.EnsureQueues(ctx, client, tp.Queues, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// logBuf is a log sink the pollers write to while the test reads it.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// recorder is a handler whose behaviour per call is scripted and which
// remembers every record it saw.
type recorder struct {
	mu      sync.Mutex
	calls   int
	seen    map[string]int // body -> deliveries
	records []events.SQSMessage
	ctxs    []context.Context
	script  func(call int, ev events.SQSEvent) (events.SQSEventResponse, error)
}

func (r *recorder) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	r.mu.Lock()
	r.calls++
	call := r.calls
	if r.seen == nil {
		r.seen = map[string]int{}
	}
	for _, rec := range ev.Records {
		r.seen[rec.Body]++
		r.records = append(r.records, rec)
	}
	r.ctxs = append(r.ctxs, ctx)
	r.mu.Unlock()
	if r.script == nil {
		return events.SQSEventResponse{}, nil
	}
	return r.script(call, ev)
}

func (r *recorder) deliveries(body string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[body]
}

func run(t *testing.T, s *Source) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func source(q string, h Handler) *Source {
	info := queues[q]
	return &Source{
		Client: client, QueueURL: info.URL, QueueARN: info.ARN,
		WaitTime: time.Second, Handler: h,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func send(t *testing.T, q string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		_, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{
			QueueUrl: aws.String(queues[q].URL), MessageBody: aws.String(b),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"kind": {DataType: aws.String("String"), StringValue: aws.String("test")},
				"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// messagesIn counts messages in a queue, visible or in flight.
func messagesIn(t *testing.T, q string) string {
	t.Helper()
	out, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queues[q].URL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"]
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSuccessDeletesAndBuildsLambdaEvent(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	send(t, "Success", "a", "b", "c")
	run(t, source("Success", rec.handle))

	waitFor(t, "3 records", 3*time.Second, func() bool {
		return rec.deliveries("a")+rec.deliveries("b")+rec.deliveries("c") == 3
	})
	waitFor(t, "deletion", time.Second, func() bool { return messagesIn(t, "Success") == "0" })

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.records {
		if r.EventSource != "aws:sqs" || r.EventSourceARN != queues["Success"].ARN || r.AWSRegion != localaws.Region {
			t.Errorf("source fields: %+v", r)
		}
		if r.MessageId == "" || r.ReceiptHandle == "" || r.Md5OfBody == "" {
			t.Errorf("ids: %+v", r)
		}
		if v := r.MessageAttributes["kind"]; aws.ToString(v.StringValue) != "test" || v.DataType != "String" {
			t.Errorf("string attribute: %+v", v)
		}
		if v := r.MessageAttributes["blob"]; string(v.BinaryValue) != string([]byte{0, 1, 2, 255}) || v.DataType != "Binary" {
			t.Errorf("binary attribute: %+v", v)
		}
		if r.Attributes["SentTimestamp"] == "" || r.Attributes["ApproximateReceiveCount"] == "" {
			t.Errorf("attributes: %v", r.Attributes)
		}
	}
	for _, ctx := range rec.ctxs {
		if lc, ok := lambdacontext.FromContext(ctx); !ok || lc.AwsRequestID == "" {
			t.Error("handler context has no Lambda request id")
		}
	}
}

func TestPartialFailureRedeliversOnlyFailedUntilDLQ(t *testing.T) {
	t.Parallel()
	rec := &recorder{script: func(_ int, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			if r.Body == "bad" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	}}
	send(t, "Partial", "ok-1", "bad", "ok-2")
	s := source("Partial", rec.handle)
	s.ReportBatchItemFailures = true
	began := time.Now()
	run(t, s)

	dlq := queues["PartialDLQ"]
	var inDLQ []string
	waitFor(t, "bad in the DLQ", 5*time.Second, func() bool {
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			inDLQ = append(inDLQ, aws.ToString(m.Body))
		}
		return len(inDLQ) > 0
	})
	t.Logf("failed message reached the DLQ after %v", time.Since(began).Round(10*time.Millisecond))
	if !slices.Equal(inDLQ, []string{"bad"}) {
		t.Errorf("DLQ holds %v", inDLQ)
	}
	for body, want := range map[string]int{"ok-1": 1, "ok-2": 1, "bad": 2} {
		if got := rec.deliveries(body); got != want {
			t.Errorf("%s delivered %d times, want %d", body, got, want)
		}
	}
	if n := messagesIn(t, "Partial"); n != "0" {
		t.Errorf("%s messages left in the queue", n)
	}
}

func TestHandlerErrorAndPanicRedeliverAll(t *testing.T) {
	t.Parallel()
	// By delivery, not by call: two pollers may split the batch, and each
	// part must go through the panic, the error and the success.
	rec := &recorder{}
	rec.script = func(_ int, ev events.SQSEvent) (events.SQSEventResponse, error) {
		switch rec.deliveries(ev.Records[0].Body) {
		case 1:
			panic("boom")
		case 2:
			return events.SQSEventResponse{}, errors.New("downstream unavailable")
		}
		return events.SQSEventResponse{}, nil
	}
	send(t, "Failing", "x", "y")
	s := source("Failing", rec.handle)
	s.BatchSize = 2
	run(t, s)

	waitFor(t, "third delivery of both", 5*time.Second, func() bool {
		return rec.deliveries("x") == 3 && rec.deliveries("y") == 3
	})
	waitFor(t, "deletion", time.Second, func() bool { return messagesIn(t, "Failing") == "0" })
}

func TestUnknownItemIdentifierFailsWholeBatch(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	rec.script = func(_ int, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if rec.deliveries(ev.Records[0].Body) == 1 {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "not-a-message-id"}}}, nil
		}
		return events.SQSEventResponse{}, nil
	}
	send(t, "Unknown", "p", "q")
	s := source("Unknown", rec.handle)
	s.BatchSize = 2
	s.ReportBatchItemFailures = true
	run(t, s)

	waitFor(t, "second delivery of both", 4*time.Second, func() bool {
		return rec.deliveries("p") == 2 && rec.deliveries("q") == 2
	})
	waitFor(t, "deletion", time.Second, func() bool { return messagesIn(t, "Unknown") == "0" })
}

func TestBatchingWindowGathersMoreThanTen(t *testing.T) {
	t.Parallel()
	var bodies []string
	for i := range 15 {
		bodies = append(bodies, fmt.Sprint("m", i))
	}
	send(t, "Big", bodies...)
	var mu sync.Mutex
	var sizes []int
	s := source("Big", func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(ev.Records))
		return events.SQSEventResponse{}, nil
	})
	s.BatchSize = 15
	s.MaxBatchingWindow = time.Second
	// One poller: a second one would take part of the 15 into its own
	// batch, as on AWS.
	s.Pollers = 1
	run(t, s)
	waitFor(t, "a batch", 3*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sizes) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if sizes[0] != 15 {
		t.Errorf("batch sizes %v, want one batch of 15", sizes)
	}
}

func TestCleanShutdownFinishesBatch(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var handlerCtxErr error
	s := source("Shutdown", func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		handlerCtxErr = ctx.Err()
		return events.SQSEventResponse{}, nil
	})
	s.WaitTime = 20 * time.Second
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	// Idle first: cancelling must end a 20 s long poll at once.
	time.Sleep(200 * time.Millisecond)
	send(t, "Shutdown", "last")
	<-started
	cancel()
	began := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	t.Logf("Run returned %v after cancel", time.Since(began).Round(time.Millisecond))
	if handlerCtxErr != nil {
		t.Errorf("in-flight handler saw %v", handlerCtxErr)
	}
	if n := messagesIn(t, "Shutdown"); n != "0" {
		t.Errorf("the batch in flight at shutdown was not deleted: %s left", n)
	}

	// And idle: Run returns promptly with a long poll open.
	ctx2, cancel2 := context.WithCancel(t.Context())
	go func() { done <- s.Run(ctx2) }()
	time.Sleep(200 * time.Millisecond)
	cancel2()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Run did not return after cancel during a long poll")
	}
}

// Two pollers handle two batches at the same time: each handler waits
// for the other to be in flight.
func TestPollersHandleBatchesConcurrently(t *testing.T) {
	t.Parallel()
	var inFlight sync.WaitGroup
	inFlight.Add(2)
	both := make(chan struct{})
	go func() { inFlight.Wait(); close(both) }()
	logs := &logBuf{}
	s := source("Concurrent", func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		inFlight.Done()
		select {
		case <-both:
			return events.SQSEventResponse{}, nil
		case <-time.After(5 * time.Second):
			return events.SQSEventResponse{}, errors.New("the other batch never ran alongside this one")
		}
	})
	s.BatchSize = 1
	s.Logger = slog.New(slog.NewTextHandler(logs, nil))
	send(t, "Concurrent", "c1", "c2")
	stop := run(t, s)
	select {
	case <-both:
	case <-time.After(5 * time.Second):
		t.Fatal("the two batches were not handled concurrently")
	}
	waitFor(t, "deletion", 2*time.Second, func() bool { return messagesIn(t, "Concurrent") == "0" })
	stop()
	for _, want := range []string{"poller=1", "poller=2", `msg="sqs batch processed"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// A message whose visibility timeout ends while its first delivery is
// still being handled is delivered again, to the other poller, at the same
// time: handlers must tolerate concurrent duplicates, and this makes them
// meet one locally.
func TestConcurrentDuplicateDelivery(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	second := make(chan struct{})
	var once sync.Once
	rec.script = func(_ int, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if rec.deliveries("dup") >= 2 {
			once.Do(func() { close(second) })
			return events.SQSEventResponse{}, nil
		}
		select { // the first delivery outlasts the 1 s visibility timeout
		case <-second:
			return events.SQSEventResponse{}, nil
		case <-time.After(5 * time.Second):
			return events.SQSEventResponse{}, errors.New("no second delivery while the first was in flight")
		}
	}
	send(t, "Duplicate", "dup")
	stop := run(t, source("Duplicate", rec.handle))
	select {
	case <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("the message was not redelivered while its first delivery ran")
	}
	stop()
}

func TestRunRefusesBadSetup(t *testing.T) {
	t.Parallel()
	h := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	}
	if err := (&Source{Client: client, QueueURL: queues["Big"].URL}).Run(t.Context()); err == nil {
		t.Error("no handler: want an error")
	}
	if err := (&Source{Client: client, QueueURL: queues["Big"].URL, Handler: h, BatchSize: 50}).Run(t.Context()); err == nil {
		t.Error("BatchSize 50 without window: want an error")
	}
	if err := (&Source{Client: client, QueueURL: queues["Big"].URL, Handler: h, Pollers: -1}).Run(t.Context()); err == nil {
		t.Error("Pollers -1: want an error")
	}
	missing := strings.TrimSuffix(queues["Big"].URL, "Big") + "NoSuchQueue"
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	err := (&Source{Client: client, QueueURL: missing, Handler: h, WaitTime: time.Second}).Run(ctx)
	if err == nil || ctx.Err() != nil {
		t.Errorf("missing queue: got %v (ctx %v), want an error at once", err, ctx.Err())
	}
}
