// Package outbox hands messages to SQS queues without losing any when a
// write in the table must be followed by a queue message (a task to run,
// an address-set event to fold, an invitation to deliver, a test run to
// execute). The producer writes an outbox marker (store.OutboxMarker: the
// queue, the body, a due time) in the same transaction as its write; once
// that committed, the message is owed:
//
//  1. right after the commit the producer sends it (best effort: a
//     failure is logged, never reported to the caller, whose write stands);
//  2. a marker that is not held is deleted once its message was sent; a
//     held one is deleted by its consumer, in the transaction that records
//     the message's effect;
//  3. a sweep (Outbox.Sweep, run by the task worker every minute) sends the
//     message of every marker whose due time passed, and moves it ResendAfter
//     further, so a lost send or a lost message is sent again.
//
// Delivery is therefore at least once: a send whose answer was lost, a
// sweep that runs before the producer's delete, or a held marker whose
// consumer is still at work all send a duplicate. Every consumer is
// idempotent (docs/hardening.md).
package outbox

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/store"
)

// Store is what the outbox reads and writes besides the producers' own
// transactions.
type Store interface {
	Now() time.Time
	DueOutbox(ctx context.Context, now time.Time, max int) ([]store.OutboxMarker, error)
	PostponeOutbox(ctx context.Context, m *store.OutboxMarker, next time.Time) (bool, error)
	DeleteOutbox(ctx context.Context, m store.OutboxMarker) (bool, error)
}

// Sender puts message bodies on a queue named by its logical id in
// template.yaml. SQS is the one implementation.
type Sender interface {
	Send(ctx context.Context, queue string, bodies ...string) error
}

// Defaults of the outbox.
const (
	// DefaultResendAfter is how long a marker waits before a sweep sends
	// its message again; longer than a task worker's lease, so a live
	// task is rarely disturbed by a duplicate (which it would ignore).
	DefaultResendAfter = 2 * time.Minute
	// DefaultSweepBatch bounds the markers one sweep handles.
	DefaultSweepBatch = 100
	// sweepParallel bounds the conditional writes a sweep has in flight.
	sweepParallel = 16
)

// Outbox sends the messages of markers: right after their write, and
// again from the sweep.
type Outbox struct {
	st   Store
	send Sender
	log  *slog.Logger
	// ResendAfter is how long after its write (or its last send by a
	// sweep) a marker falls due.
	ResendAfter time.Duration
	// SweepBatch bounds the markers one sweep handles; the rest wait for
	// the next sweep.
	SweepBatch int
}

// New returns an outbox sending through send.
func New(st Store, send Sender, log *slog.Logger) *Outbox {
	return &Outbox{st: st, send: send, log: log, ResendAfter: DefaultResendAfter, SweepBatch: DefaultSweepBatch}
}

// Queue is the outbox of one queue: what a producer holds.
type Queue struct {
	o    *Outbox
	name string
}

// Queue returns the outbox of the queue with logical id name.
func (o *Outbox) Queue(name string) *Queue { return &Queue{o: o, name: name} }

// Name is the queue's logical id.
func (q *Queue) Name() string { return q.name }

// Marker returns the marker of a message with body, to be written with
// the producer's transaction: due ResendAfter from now.
func (q *Queue) Marker(body string) store.OutboxMarker {
	return store.OutboxMarker{Queue: q.name, Body: body, Due: q.o.st.Now().Add(q.o.ResendAfter)}
}

// Send sends the message of m, whose write has committed, and deletes m
// unless it is held. It is best effort: a failure is logged and returned
// for the caller's information only (the sweep sends the message later),
// never to be reported to the API caller.
func (q *Queue) Send(ctx context.Context, m *store.OutboxMarker) error {
	if err := q.o.send.Send(ctx, m.Queue, m.Body); err != nil {
		q.o.log.WarnContext(ctx, "message written to the outbox but not sent; the outbox sweep sends it", "queue", m.Queue, "marker", m.Key(), "error", err.Error())
		return err
	}
	if m.Held {
		return nil
	}
	// The caller may be gone; the delete only saves a duplicate.
	if _, err := q.o.st.DeleteOutbox(context.WithoutCancel(ctx), *m); err != nil {
		q.o.log.WarnContext(ctx, "message sent but its outbox marker not deleted; the sweep sends it once more", "queue", m.Queue, "marker", m.Key(), "error", err.Error())
	}
	return nil
}

// Sweep sends the messages of markers whose due time has passed, at most
// SweepBatch of them, and returns how many it sent. Each marker is first
// moved ResendAfter into the future with a conditional write, so
// concurrent sweeps send each due marker once per due time; the writes run
// in parallel, so a backlog costs about one round trip more than one
// marker. Messages go in batches per queue; a marker that is not held is
// deleted once its message was sent.
func (o *Outbox) Sweep(ctx context.Context) (int, error) {
	now := o.st.Now()
	due, err := o.st.DueOutbox(ctx, now, o.SweepBatch)
	if err != nil {
		return 0, err
	}
	if len(due) == 0 {
		return 0, nil
	}
	moved := make([]bool, len(due))
	errs := make([]error, len(due))
	parallel(len(due), func(i int) {
		moved[i], errs[i] = o.st.PostponeOutbox(ctx, &due[i], now.Add(o.ResendAfter))
	})
	// Markers this sweep moved are sent even if another write failed: left
	// unsent they would wait ResendAfter for the next sweep.
	moveErr := errors.Join(errs...)
	if moveErr != nil {
		o.log.WarnContext(ctx, "outbox sweep could not move every due marker; the next sweep retries them", "error", moveErr.Error())
	}
	byQueue := map[string][]int{}
	for i := range due {
		if moved[i] {
			byQueue[due[i].Queue] = append(byQueue[due[i].Queue], i)
		}
	}
	queues := slices.Sorted(maps.Keys(byQueue))
	var (
		sendErrs []error
		sent     []int
	)
	for _, q := range queues {
		idx := byQueue[q]
		bodies := make([]string, len(idx))
		for j, i := range idx {
			bodies[j] = due[i].Body
		}
		if err := o.send.Send(ctx, q, bodies...); err != nil {
			sendErrs = append(sendErrs, err)
			continue
		}
		sent = append(sent, idx...)
	}
	var drop []int
	for _, i := range sent {
		if !due[i].Held {
			drop = append(drop, i)
		}
	}
	delErrs := make([]error, len(drop))
	parallel(len(drop), func(j int) {
		_, delErrs[j] = o.st.DeleteOutbox(ctx, due[drop[j]])
	})
	if err := errors.Join(delErrs...); err != nil {
		o.log.WarnContext(ctx, "outbox sweep sent messages whose markers it could not delete; they are sent once more", "error", err.Error())
	}
	if len(sent) > 0 {
		o.log.InfoContext(ctx, "outbox sweep sent messages", "count", len(sent))
	}
	if len(sent) == 0 && moveErr != nil {
		return 0, errors.Join(append(sendErrs, moveErr)...)
	}
	return len(sent), errors.Join(sendErrs...)
}

// parallel runs fn(0..n-1), at most sweepParallel at a time.
func parallel(n int, fn func(i int)) {
	var g errgroup.Group // fn records its own failures
	g.SetLimit(sweepParallel)
	for i := range n {
		g.Go(func() error { fn(i); return nil })
	}
	_ = g.Wait()
}
