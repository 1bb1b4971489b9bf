package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

func TestParse(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ok := []struct {
		expr, from, next string
	}{
		{"rate(1 minute)", "2026-03-01T10:00:30Z", "2026-03-01T10:01:30Z"},
		{"rate(5 minutes)", "2026-03-01T10:00:00Z", "2026-03-01T10:05:00Z"},
		{"rate(1 hour)", "2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z"},
		{"rate(2 days)", "2026-03-01T10:00:00Z", "2026-03-03T10:00:00Z"},
		{"cron(0 12 * * ? *)", "2026-03-01T12:00:00Z", "2026-03-02T12:00:00Z"},
		{"cron(0/15 * * * ? *)", "2026-03-01T10:07:00Z", "2026-03-01T10:15:00Z"},
		{"cron(30 9 ? * MON-FRI *)", "2026-03-06T10:00:00Z", "2026-03-09T09:30:00Z"}, // Friday -> Monday
		{"cron(0 8 1 JAN,JUL ? 2027)", "2026-03-01T00:00:00Z", "2027-01-01T08:00:00Z"},
		{"cron(0 0 ? * 1 *)", "2026-03-02T00:00:00Z", "2026-03-08T00:00:00Z"}, // 1 is Sunday
	}
	for _, c := range ok {
		e, err := Parse(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if got := e.Next(at(c.from)); !got.Equal(at(c.next)) {
			t.Errorf("%s after %s: %s, want %s", c.expr, c.from, got.Format(time.RFC3339), c.next)
		}
		if e.String() != c.expr {
			t.Errorf("String %q", e.String())
		}
	}
	bad := []struct{ expr, want string }{
		{"every minute", "want rate(...) or cron(...)"},
		{"rate(1 minutes)", "singular for 1"},
		{"rate(5 minute)", "singular for 1"},
		{"rate(0 minutes)", "positive integer"},
		{"rate(1 week)", "unit"},
		{"cron(0 12 * * *)", "6 fields"},
		{"cron(0 12 * * * *)", "exactly one of day-of-month and day-of-week"},
		{"cron(0 12 L * ? *)", "not supported by the local scheduler"},
		{"cron(0 12 ? * 6#3 *)", "not supported by the local scheduler"},
		{"cron(61 12 * * ? *)", "not a value in 0..59"},
	}
	for _, c := range bad {
		if _, err := Parse(c.expr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.expr, err, c.want)
		}
	}
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
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

type call struct {
	ctx     context.Context
	payload []byte
}

func TestSchedulerRunsAtTheRateWithTheScheduledEvent(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := NewManualClock(start)
	logs := &logBuf{}
	calls := make(chan call, 10)
	every, _ := Parse("rate(1 minute)")
	daily, _ := Parse("cron(0 12 * * ? *)")
	s := &Scheduler{Clock: clock, AccountID: "111122223333", Region: "eu-west-1", Logger: slog.New(slog.NewJSONHandler(logs, nil))}
	rule := Rule{Function: "Fn", FunctionARN: "arn:aws:lambda:eu-west-1:111122223333:function:Fn", Name: "sweep",
		ARN: "arn:aws:events:eu-west-1:111122223333:rule/sweep", Expr: every, Timeout: 5 * time.Second,
		Invoke: func(ctx context.Context, p []byte) error { calls <- call{ctx, p}; return nil }}
	withInput := Rule{Function: "Fn", Name: "noon", ARN: "arn:aws:events:eu-west-1:111122223333:rule/noon", Expr: daily,
		Input:  json.RawMessage(`{"job":"noon"}`),
		Invoke: func(ctx context.Context, p []byte) error { calls <- call{ctx, p}; return errors.New("noon failed") }}
	stop := s.Start(t.Context(), []Rule{rule, withInput})
	defer stop(context.Background())

	// Armed before Start returned: nothing runs until the clock moves.
	if err := clock.WaitForWaiters(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-calls:
		t.Fatalf("ran before its time: %s", c.payload)
	default:
	}

	for i := 1; i <= 2; i++ {
		clock.Advance(time.Minute)
		c := <-calls
		var ev events.CloudWatchEvent
		if err := json.Unmarshal(c.payload, &ev); err != nil {
			t.Fatal(err)
		}
		want := start.Add(time.Duration(i) * time.Minute)
		if ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" || ev.Version != "0" || ev.ID == "" ||
			ev.AccountID != "111122223333" || ev.Region != "eu-west-1" || !ev.Time.Equal(want) ||
			len(ev.Resources) != 1 || ev.Resources[0] != rule.ARN || string(ev.Detail) != "{}" {
			t.Errorf("run %d: event %s", i, c.payload)
		}
		// The raw JSON uses EventBridge's field names.
		for _, k := range []string{`"detail-type":"Scheduled Event"`, `"source":"aws.events"`, `"resources":["arn:aws:events:`} {
			if !bytes.Contains(c.payload, []byte(k)) {
				t.Errorf("payload lacks %s: %s", k, c.payload)
			}
		}
		lc, ok := lambdacontext.FromContext(c.ctx)
		dl, hasDeadline := c.ctx.Deadline()
		if !ok || lc.AwsRequestID == "" || lc.InvokedFunctionArn != rule.FunctionARN || !hasDeadline || time.Until(dl) > 5*time.Second {
			t.Errorf("run %d: lambda context %+v, deadline %v %v", i, lc, dl, hasDeadline)
		}
		if err := clock.WaitForWaiters(t.Context(), 2); err != nil {
			t.Fatal(err)
		}
	}

	// The cron rule: noon of the same day, with its Input as the payload.
	clock.Advance(2*time.Hour - 2*time.Minute)
	var got []string
	for range 2 {
		got = append(got, string((<-calls).payload))
	}
	if !strings.Contains(strings.Join(got, " "), `{"job":"noon"}`) {
		t.Errorf("noon payloads %v", got)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := logs.String()
	for _, want := range []string{`"msg":"schedule ran","function":"Fn","rule":"sweep"`, `"rule":"noon"`, `"error":"noon failed"`, `"msg":"schedule armed"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
}

func TestSchedulerTimeoutAndPanicAreFailures(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	logs := &logBuf{}
	every, _ := Parse("rate(1 minute)")
	done := make(chan struct{}, 2)
	s := &Scheduler{Clock: clock, Logger: slog.New(slog.NewJSONHandler(logs, nil))}
	stop := s.Start(t.Context(), []Rule{
		{Function: "Slow", Name: "slow", Expr: every, Timeout: 10 * time.Millisecond, Invoke: func(ctx context.Context, _ []byte) error {
			defer func() { done <- struct{}{} }()
			<-ctx.Done() // a handler that honours its deadline, returning nil late
			return nil
		}},
		{Function: "Crash", Name: "crash", Expr: every, Invoke: func(context.Context, []byte) error {
			defer func() { done <- struct{}{} }()
			panic("boom")
		}},
	})
	clock.Advance(time.Minute)
	<-done
	<-done
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := logs.String()
	for _, want := range []string{`"function":"Slow"`, "Task timed out after 0.01 seconds", `"function":"Crash"`, "panic: boom"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Count(log, `"level":"ERROR","msg":"schedule ran"`) != 2 {
		t.Errorf("want two failed runs:\n%s", log)
	}
}
