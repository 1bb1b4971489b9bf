package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"golang.org/x/sync/errgroup"
)

// Rule is one Schedule event: an EventBridge rule targeting a function.
type Rule struct {
	Function    string // the function's logical id, for the log
	FunctionARN string // goes into the Lambda context
	Name        string // the rule's name
	ARN         string // the rule's ARN: the event's only resource
	Expr        Expr
	// Input, when set, is sent instead of the scheduled event (the
	// template's Input property).
	Input json.RawMessage
	// Timeout is the function's Timeout: the invocation's context deadline,
	// and returning after it is a failure ("Task timed out"), as on Lambda.
	Timeout time.Duration
	// Invoke runs the function with the JSON payload EventBridge would send;
	// decoding it into the handler's event type is the caller's part, as
	// the Lambda runtime decodes it on AWS.
	Invoke func(ctx context.Context, payload []byte) error
}

// Scheduler runs rules on a clock.
type Scheduler struct {
	Clock     Clock  // default RealClock
	AccountID string // of the events: default 123456789012
	Region    string // default us-east-1
	Logger    *slog.Logger
}

// Start arms every rule before it returns (so a ManualClock has one waiter
// per rule once Start is back) and runs them until stop is called. Each run
// is an asynchronous invocation, as EventBridge makes: a run that outlasts
// the rate overlaps the next one. stop waits for runs in progress.
func (s *Scheduler) Start(ctx context.Context, rules []Rule) (stop func(context.Context) error) {
	clock := s.Clock
	if clock == nil {
		clock = RealClock{}
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// Neither group fails: a run logs its own failure.
	var loops, runs errgroup.Group
	for _, r := range rules {
		next := r.Expr.Next(clock.Now())
		if next.IsZero() {
			log.Warn("schedule never fires", "function", r.Function, "rule", r.Name, "schedule", r.Expr.String())
			continue
		}
		ch, release := clock.At(next)
		log.Info("schedule armed", "function", r.Function, "rule", r.Name, "schedule", r.Expr.String(), "next", next.UTC().Format(time.RFC3339))
		loops.Go(func() error {
			for {
				select {
				case <-ctx.Done():
					release()
					return nil
				case <-ch:
				}
				at := next
				runs.Go(func() error { s.run(ctx, log, r, at); return nil })
				// A clock that jumped (a suspended laptop) skips the missed
				// fires instead of running them all at once.
				now := clock.Now()
				for next = r.Expr.Next(next); !next.IsZero() && !next.After(now); next = r.Expr.Next(next) {
				}
				if next.IsZero() {
					return nil
				}
				ch, release = clock.At(next)
			}
		})
	}
	return func(wctx context.Context) error {
		cancel()
		_ = loops.Wait()
		done := make(chan struct{})
		go func() { _ = runs.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-wctx.Done():
			return fmt.Errorf("scheduled runs still in progress: %w", wctx.Err())
		}
	}
}

// Event is the event EventBridge sends for a scheduled rule firing at t.
func (s *Scheduler) Event(r Rule, t time.Time) events.CloudWatchEvent {
	account, region := s.AccountID, s.Region
	if account == "" {
		account = "123456789012"
	}
	if region == "" {
		region = "us-east-1"
	}
	return events.CloudWatchEvent{
		Version:    "0",
		ID:         newID(),
		DetailType: "Scheduled Event",
		Source:     "aws.events",
		AccountID:  account,
		Time:       t.UTC().Truncate(time.Second),
		Region:     region,
		Resources:  []string{r.ARN},
		Detail:     json.RawMessage(`{}`),
	}
}

// run makes one invocation and logs it as one line.
func (s *Scheduler) run(ctx context.Context, log *slog.Logger, r Rule, at time.Time) {
	began := time.Now()
	err := s.invoke(ctx, r, at)
	attrs := []any{"function", r.Function, "rule", r.Name, "schedule", r.Expr.String(),
		"scheduled_at", at.UTC().Format(time.RFC3339), "duration", time.Since(began).Round(time.Millisecond).String()}
	if err != nil {
		log.Error("schedule ran", append(attrs, "error", err.Error())...)
		return
	}
	log.Info("schedule ran", attrs...)
}

func (s *Scheduler) invoke(ctx context.Context, r Rule, at time.Time) (err error) {
	payload := []byte(r.Input)
	if len(payload) == 0 {
		if payload, err = json.Marshal(s.Event(r, at)); err != nil {
			return fmt.Errorf("encode scheduled event: %w", err)
		}
	}
	// The invocation is not cancelled when the platform stops: it runs to
	// its end or its deadline, as on Lambda.
	ictx := context.WithoutCancel(ctx)
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ictx, cancel = context.WithTimeout(ictx, r.Timeout)
		defer cancel()
	}
	ictx = lambdacontext.NewContext(ictx, &lambdacontext.LambdaContext{AwsRequestID: newID(), InvokedFunctionArn: r.FunctionARN})
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	err = r.Invoke(ictx, payload)
	if err == nil && errors.Is(ictx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("Task timed out after %.2f seconds", r.Timeout.Seconds())
	}
	return err
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
