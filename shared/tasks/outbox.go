package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"cads/shared/ids"
	"cads/shared/store"
)

// Sender puts task ids on the task queue.
type Sender interface {
	Send(ctx context.Context, taskIDs ...string) error
}

// SQSSender sends to an SQS queue, ten messages per call.
type SQSSender struct {
	Client   *sqs.Client
	QueueURL string
}

// Send sends one message per task id.
func (s SQSSender) Send(ctx context.Context, taskIDs ...string) error {
	for start := 0; start < len(taskIDs); start += 10 {
		batch := taskIDs[start:min(start+10, len(taskIDs))]
		entries := make([]sqstypes.SendMessageBatchRequestEntry, 0, len(batch))
		for i, id := range batch {
			body, _ := json.Marshal(message{Task: id})
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))})
		}
		out, err := s.Client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.QueueURL), Entries: entries})
		if err != nil {
			return fmt.Errorf("send to task queue: %w", err)
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("send to task queue: %d of %d messages refused (%s)", len(out.Failed), len(entries), aws.ToString(out.Failed[0].Message))
		}
	}
	return nil
}

// NoQueue is the Sender of a deployment without a task queue: every send
// fails, so tasks wait in the outbox (and a misconfiguration is logged on
// every submit instead of tasks silently never running).
type NoQueue struct{}

// Send always fails.
func (NoQueue) Send(context.Context, ...string) error {
	return errors.New("no task queue is configured")
}

// OutboxStore is what the outbox writes.
type OutboxStore interface {
	Now() time.Time
	CreateTask(ctx context.Context, t store.Task, resendAt time.Time) error
	DueOutbox(ctx context.Context, now time.Time, max int) ([]store.OutboxEntry, error)
	PostponeOutbox(ctx context.Context, e store.OutboxEntry, next time.Time) (bool, error)
}

// Outbox hands tasks to the queue without losing any: the task and its
// outbox marker are written in one transaction before the message is
// sent, and Sweep re-sends the message of every task whose marker is due
// (send failed, or the worker died), until the task finishes and its
// marker goes.
type Outbox struct {
	st   OutboxStore
	send Sender
	log  *slog.Logger
	// ResendAfter is how long a task may wait for its message before a
	// sweep sends it again; longer than a worker's lease, so a live run is
	// rarely disturbed by a duplicate (which it would ignore anyway).
	ResendAfter time.Duration
	// SweepBatch bounds the markers one sweep handles.
	SweepBatch int
}

// Defaults of the outbox.
const (
	DefaultResendAfter = 2 * time.Minute
	DefaultSweepBatch  = 100
)

// NewOutbox returns an outbox sending through send.
func NewOutbox(st OutboxStore, send Sender, log *slog.Logger) *Outbox {
	return &Outbox{st: st, send: send, log: log, ResendAfter: DefaultResendAfter, SweepBatch: DefaultSweepBatch}
}

// NewTask makes a pending task of account for principal.
func NewTask(now time.Time, account, principal string, r Request) (store.Task, error) {
	params, err := json.Marshal(r.Params)
	if err != nil {
		return store.Task{}, fmt.Errorf("encode task parameters: %w", err)
	}
	t := store.Task{ID: ids.New(), Account: account, Type: r.Type, App: r.App, Parameters: string(params),
		State: store.TaskPending, CreatedBy: principal, Created: now, Updated: now}
	if r.App != "" {
		t.Target = AppHref(r.App)
	}
	return t, nil
}

// Submit writes the task (pending, with its marker) and sends its message.
// Once the write succeeded the task will run: a failed send is logged and
// left to the sweep, not reported to the caller.
func (o *Outbox) Submit(ctx context.Context, t store.Task) error {
	if err := o.st.CreateTask(ctx, t, t.Created.Add(o.ResendAfter)); err != nil {
		return err
	}
	if err := o.send.Send(ctx, t.ID); err != nil {
		o.log.WarnContext(ctx, "task written but not sent; the outbox sweep will send it", "task", t.ID, "error", err.Error())
	}
	return nil
}

// sweepParallel bounds the conditional writes one sweep has in flight.
const sweepParallel = 16

// Sweep re-sends the messages of tasks whose outbox marker is due and
// returns how many it sent. Each marker is first moved ResendAfter into
// the future with a conditional write, so concurrent sweeps send each due
// task once. The writes run in parallel: a backlog of a hundred markers
// costs one round trip more than one marker, not a hundred.
func (o *Outbox) Sweep(ctx context.Context) (int, error) {
	now := o.st.Now()
	due, err := o.st.DueOutbox(ctx, now, o.SweepBatch)
	if err != nil {
		return 0, err
	}
	moved := make([]bool, len(due))
	errs := make([]error, len(due))
	var wg sync.WaitGroup
	slots := make(chan struct{}, sweepParallel)
	for i, e := range due {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			moved[i], errs[i] = o.st.PostponeOutbox(ctx, e, now.Add(o.ResendAfter))
		})
	}
	wg.Wait()
	var send []string
	for i, e := range due {
		if moved[i] {
			send = append(send, e.TaskID)
		}
	}
	// Markers this sweep moved are sent even if another write failed: left
	// unsent they would wait ResendAfter for the next sweep.
	if err := errors.Join(errs...); err != nil && len(send) == 0 {
		return 0, err
	} else if err != nil {
		o.log.WarnContext(ctx, "outbox sweep could not move every due marker; the next sweep retries them", "error", err.Error())
	}
	if len(send) == 0 {
		return 0, nil
	}
	if err := o.send.Send(ctx, send...); err != nil {
		return 0, err
	}
	o.log.InfoContext(ctx, "outbox sweep re-sent tasks", "count", len(send))
	return len(send), nil
}
