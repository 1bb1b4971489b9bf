// Package sqssource is the local stand-in for Lambda's SQS event source
// mapping: it long-polls a queue, hands batches to a handler as
// events.SQSEvent and deletes what the handler processed, with AWS'
// rules for errors and partial batch responses.
package sqssource

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"cads/shared/retry"
)

// Handler is a Lambda handler for SQS events.
type Handler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// DefaultPollers is how many batches a Source handles at once when
// Pollers is 0. Lambda polls a queue with several pollers, so one function
// sees concurrent batches, and a message whose visibility ends while its
// first delivery is still running is handed out again; two pollers make
// every local run and test exercise that.
const DefaultPollers = 2

// Source polls one queue for one handler with Pollers concurrent pollers,
// each receiving and handling one batch at a time.
type Source struct {
	Client   *sqs.Client
	QueueURL string
	QueueARN string // becomes eventSourceARN; its region becomes awsRegion

	// BatchSize is the most records per event (default 10, Lambda's).
	// Above 10 it needs MaxBatchingWindow, as on AWS, since one
	// ReceiveMessage returns at most 10 messages.
	BatchSize int
	// MaxBatchingWindow is how long to keep gathering messages for a batch
	// once the first arrived (MaximumBatchingWindowInSeconds).
	MaxBatchingWindow time.Duration
	// WaitTime is the long-poll duration (default and maximum 20 s;
	// SQS counts in whole seconds, so it is rounded up).
	WaitTime time.Duration
	// ReportBatchItemFailures honours the handler's batchItemFailures
	// (FunctionResponseTypes: [ReportBatchItemFailures]).
	ReportBatchItemFailures bool
	// Timeout is the function timeout: the handler's context deadline, and
	// a handler returning after it counts as failed. 0 = no deadline.
	Timeout time.Duration
	// Pollers is how many batches are handled at once (the event source's
	// ScalingConfig.MaximumConcurrency); 0 means DefaultPollers.
	Pollers int

	Handler Handler
	Logger  *slog.Logger // default slog.Default()
}

// Run polls until ctx is done and returns nil then. A batch being handled
// when ctx ends is finished (its context is not cancelled) and its
// processed messages are deleted, so a shutdown does not cause
// redeliveries. It returns an error for a misconfigured Source or a queue
// that does not exist; other receive errors are logged and retried.
func (s *Source) Run(ctx context.Context) error {
	if s.Client == nil || s.QueueURL == "" || s.Handler == nil {
		return errors.New("sqssource: Client, QueueURL and Handler are required")
	}
	batchSize := s.BatchSize
	if batchSize == 0 {
		batchSize = 10
	}
	if batchSize < 0 || batchSize > 10000 || (batchSize > 10 && s.MaxBatchingWindow <= 0) {
		return fmt.Errorf("sqssource: BatchSize %d: want 1..10, or up to 10000 with MaxBatchingWindow", s.BatchSize)
	}
	pollers := s.Pollers
	if pollers == 0 {
		pollers = DefaultPollers
	}
	if pollers < 1 {
		return fmt.Errorf("sqssource: Pollers %d: want at least 1", s.Pollers)
	}
	// The first poller to find the queue missing ends them all (poll
	// returns no other error).
	g, gctx := errgroup.WithContext(ctx)
	for i := 1; i <= pollers; i++ {
		g.Go(func() error { return s.poll(gctx, s.logger().With("queue", s.queueName(), "poller", i), batchSize) })
	}
	return g.Wait()
}

// poll is one poller: receive a batch, handle it, repeat until ctx ends.
func (s *Source) poll(ctx context.Context, log *slog.Logger, batchSize int) error {
	failures := 0
	for {
		if ctx.Err() != nil {
			return nil
		}
		msgs, err := s.receiveBatch(ctx, batchSize)
		if len(msgs) > 0 {
			s.process(ctx, log, msgs)
		}
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if queueMissing(err) {
			return fmt.Errorf("sqssource: queue %s: %w", s.QueueURL, err)
		}
		failures++
		d := retry.Delay(failures, 100*time.Millisecond, 5*time.Second)
		log.WarnContext(ctx, "sqs receive failed; retrying", "err", err, "retry_in", d)
		if retry.Wait(ctx, d) != nil {
			return nil
		}
	}
}

func (s *Source) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Source) queueName() string {
	if s.QueueARN != "" {
		return s.QueueARN[strings.LastIndex(s.QueueARN, ":")+1:]
	}
	return s.QueueURL[strings.LastIndex(s.QueueURL, "/")+1:]
}

func (s *Source) region() string {
	if parts := strings.Split(s.QueueARN, ":"); len(parts) == 6 && parts[3] != "" {
		return parts[3]
	}
	return s.Client.Options().Region
}

// receiveBatch long-polls for the first messages, then keeps receiving
// until the batch is full or the batching window is over. Messages already
// received are returned even with an error: they are in flight and must be
// handled or they would wait out their visibility timeout.
func (s *Source) receiveBatch(ctx context.Context, batchSize int) ([]types.Message, error) {
	wait := s.WaitTime
	if wait <= 0 || wait > 20*time.Second {
		wait = 20 * time.Second
	}
	msgs, err := s.receive(ctx, min(batchSize, 10), wait)
	if err != nil || len(msgs) == 0 || s.MaxBatchingWindow <= 0 {
		return msgs, err
	}
	deadline := time.Now().Add(s.MaxBatchingWindow)
	for len(msgs) < batchSize {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			break
		}
		more, err := s.receive(ctx, min(batchSize-len(msgs), 10), left)
		msgs = append(msgs, more...)
		if err != nil {
			return msgs, err
		}
	}
	return msgs, nil
}

func (s *Source) receive(ctx context.Context, n int, wait time.Duration) ([]types.Message, error) {
	// goaws takes WaitTimeSeconds 0 as "the queue's default", so never 0.
	secs := max(int32((wait+time.Second-1)/time.Second), 1)
	out, err := s.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(s.QueueURL),
		MaxNumberOfMessages:         int32(n),
		WaitTimeSeconds:             secs,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// process invokes the handler for one batch and deletes what succeeded.
func (s *Source) process(ctx context.Context, log *slog.Logger, msgs []types.Message) {
	began := time.Now()
	ev, err := s.event(msgs)
	var failed map[string]bool
	if err == nil {
		failed, err = s.invoke(ctx, ev)
	}
	if err != nil {
		failed = nil // the whole batch: delete nothing
	}

	// Deleting must survive the shutdown that may have begun meanwhile.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var keep []types.Message
	if err == nil {
		for _, m := range msgs {
			if !failed[aws.ToString(m.MessageId)] {
				keep = append(keep, m)
			}
		}
	}
	derr := s.delete(dctx, keep)

	nFailed := len(msgs) - len(keep)
	attrs := []any{"size", len(msgs), "failed", nFailed, "duration", time.Since(began).Round(time.Millisecond)}
	switch {
	case err != nil:
		log.WarnContext(ctx, "sqs batch failed; all messages return after their visibility timeout", append(attrs, "err", err)...)
	case nFailed > 0:
		log.WarnContext(ctx, "sqs batch partly failed; failed messages return after their visibility timeout", attrs...)
	default:
		log.InfoContext(ctx, "sqs batch processed", attrs...)
	}
	if derr != nil {
		log.WarnContext(ctx, "sqs delete failed; those messages will be redelivered", "err", derr)
	}
}

// event builds the event Lambda would send and passes it through JSON, as
// the real invocation does, so handlers see exactly the decoded form.
func (s *Source) event(msgs []types.Message) (events.SQSEvent, error) {
	region := s.region()
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		rec := events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             map[string]string{},
			MessageAttributes:      map[string]events.SQSMessageAttribute{},
			EventSourceARN:         s.QueueARN,
			EventSource:            "aws:sqs",
			AWSRegion:              region,
		}
		for k, v := range m.Attributes {
			rec.Attributes[k] = v
		}
		for k, v := range m.MessageAttributes {
			rec.MessageAttributes[k] = events.SQSMessageAttribute{
				StringValue:      v.StringValue,
				BinaryValue:      v.BinaryValue,
				StringListValues: orEmpty(v.StringListValues),
				BinaryListValues: orEmpty(v.BinaryListValues),
				DataType:         aws.ToString(v.DataType),
			}
		}
		ev.Records = append(ev.Records, rec)
	}
	var out events.SQSEvent
	if err := roundTrip(ev, &out); err != nil {
		return out, fmt.Errorf("encode SQS event: %w", err)
	}
	return out, nil
}

// Lambda sends empty lists, not null, for these.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func roundTrip(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// invoke runs the handler and returns the message ids to keep, or an error
// meaning the whole batch failed.
func (s *Source) invoke(ctx context.Context, ev events.SQSEvent) (map[string]bool, error) {
	// Lambda does not cancel a running invocation when the poller stops.
	hctx := context.WithoutCancel(ctx)
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(hctx, s.Timeout)
		defer cancel()
	}
	hctx = lambdacontext.NewContext(hctx, &lambdacontext.LambdaContext{AwsRequestID: requestID()})

	resp, err := s.call(hctx, ev)
	if err == nil && errors.Is(hctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("handler ran past its %v timeout", s.Timeout)
	}
	if err != nil {
		return nil, err
	}
	if !s.ReportBatchItemFailures {
		if len(resp.BatchItemFailures) > 0 {
			s.logger().WarnContext(ctx, "handler reported batchItemFailures, but ReportBatchItemFailures is off: deleting the whole batch, as AWS would",
				"queue", s.queueName(), "failures", len(resp.BatchItemFailures))
		}
		return nil, nil
	}
	// The response crosses JSON on AWS too; an identifier that is empty or
	// not in the batch makes Lambda treat the whole batch as failed.
	var r struct {
		BatchItemFailures []struct {
			ItemIdentifier *string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := roundTrip(resp, &r); err != nil {
		return nil, fmt.Errorf("malformed SQS batch response: %w", err)
	}
	inBatch := make(map[string]bool, len(ev.Records))
	for _, rec := range ev.Records {
		inBatch[rec.MessageId] = true
	}
	failed := map[string]bool{}
	for _, f := range r.BatchItemFailures {
		id := ""
		if f.ItemIdentifier != nil {
			id = *f.ItemIdentifier
		}
		if !inBatch[id] {
			return nil, fmt.Errorf("batchItemFailures names %q, which is not a messageId of the batch", id)
		}
		failed[id] = true
	}
	return failed, nil
}

// call recovers a panic into a failed invocation, as a crashed Lambda
// runtime would be.
func (s *Source) call(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger().ErrorContext(ctx, "sqs handler panicked", "queue", s.queueName(), "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return s.Handler(ctx, ev)
}

func (s *Source) delete(ctx context.Context, msgs []types.Message) error {
	var errs []error
	for start := 0; start < len(msgs); start += 10 {
		chunk := msgs[start:min(start+10, len(msgs))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		out, err := s.Client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.QueueURL), Entries: entries})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range out.Failed {
			errs = append(errs, fmt.Errorf("delete entry %s: %s %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	return errors.Join(errs...)
}

func queueMissing(err error) bool {
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return true
	}
	// goaws answers AWS.SimpleQueueService.NonExistentQueue.
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && strings.Contains(apiErr.ErrorCode(), "NonExistentQueue")
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
