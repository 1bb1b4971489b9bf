package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/outbox"
	"cads/shared/store"
)

// OutboxStore is what submitting a task writes.
type OutboxStore interface {
	Now() time.Time
	CreateTask(ctx context.Context, t domain.Task, m *store.OutboxMarker) error
}

// Outbox hands tasks to the task queue through the generic outbox
// (shared/outbox): the task and its held marker are written in one
// transaction before the message is sent, and the outbox sweep sends the
// message again whenever the marker is due (send failed, or the worker
// died), until the task finishes and FinishTask deletes the marker.
type Outbox struct {
	st OutboxStore
	q  *outbox.Queue
}

// NewOutbox returns the task outbox writing to st and sending through q
// (the outbox of the task queue).
func NewOutbox(st OutboxStore, q *outbox.Queue) *Outbox { return &Outbox{st: st, q: q} }

// NewTask makes a pending task of account for principal.
func NewTask(now time.Time, account, principal string, r Request) (domain.Task, error) {
	params, err := json.Marshal(r.Params)
	if err != nil {
		return domain.Task{}, fmt.Errorf("encode task parameters: %w", err)
	}
	t := domain.Task{ID: ids.New(), Account: account, Type: r.Type, App: r.App, Parameters: string(params),
		State: domain.TaskPending, CreatedBy: principal, Created: now, Updated: now,
		Log: []domain.TaskLogLine{{Created: now.UTC(), Severity: domain.SeverityInfo, Activity: domain.ActivitySubmit, Message: "queued"}}}
	if r.App != "" {
		t.Target = AppHref(r.App)
	}
	return t, nil
}

// Submit writes the task (pending, with its marker) and sends its message.
// Once the write succeeded the task will run: a failed send is logged and
// left to the sweep, not reported to the caller.
func (o *Outbox) Submit(ctx context.Context, t domain.Task) error {
	body, err := json.Marshal(message{Task: t.ID})
	if err != nil {
		return fmt.Errorf("encode task message: %w", err)
	}
	m := o.q.Marker(string(body))
	if err := o.st.CreateTask(ctx, t, &m); err != nil {
		return err
	}
	_ = o.q.Send(ctx, &m)
	return nil
}
