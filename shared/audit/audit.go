// Package audit is the audit trail's record of one write request
// (docs/data-model.md, Audit events): what apigw knows of the request
// before its handler runs, carried in the context to the store's table
// client, which writes it in the same transaction as the request's first
// change, so that a change is never committed without its record nor a
// record without a change. It links nothing of the project, so the store
// and apigw can both use it.
package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"
)

// Store keeps the audit trail (docs/data-model.md, Audit events): the
// store's table client, which apigw.WithAudit and the wiring hand on.
type Store interface {
	Now() time.Time
	FinishAudit(ctx context.Context, rec *Record) error
	DropAudit(ctx context.Context, rec *Record) error
}

// Actor is who made a change.
type Actor struct {
	Principal string `json:"principal"` // href of the user or service user
	Kind      string `json:"kind"`      // user | service_user
	Key       string `json:"key"`       // href of the key the request was made with
	// OriginKey is the persistent key at the root of a minted key's
	// lineage (a session key's): who really acted.
	OriginKey string `json:"origin_key,omitempty"`
}

// Event is one audit event as stored and served.
type Event struct {
	ID            string    `json:"id"`
	Account       string    `json:"account"` // href of the account the change was made in
	Time          time.Time `json:"time"`
	Actor         Actor     `json:"actor"`
	Method        string    `json:"method"`
	Path          string    `json:"path"`
	Target        string    `json:"target"` // href of the resource changed
	Status        *int      `json:"status"` // nil: the change committed and the request ended before its answer was recorded
	RequestID     string    `json:"request_id"`
	SourceAddress string    `json:"source_address"`
	UserAgent     string    `json:"user_agent"`
	// Patch is the JSON Patch (RFC 6902) from the resource before a PATCH
	// or PUT to the resource after it.
	Patch json.RawMessage `json:"patch,omitempty"`
	// Resource is the resource a POST created or a DELETE deleted (or a
	// PUT created).
	Resource json.RawMessage `json:"resource,omitempty"`
	// Truncated says the change was too large to record (its patch or
	// resource is left out).
	Truncated bool `json:"truncated,omitempty"`
	// AccountID and Ancestors are the account's id and its ancestors, as
	// stored beside the event: what the reader decides an ancestor's view
	// with.
	AccountID string   `json:"-"`
	Ancestors []string `json:"-"`
}

// Record is the audit record of one write request in flight.
type Record struct {
	Event Event
	// AccountID is the account the event is in and Ancestors its
	// ancestors (root first): the event is listed under each of them.
	// AccountID "" is the installation's root account.
	AccountID string
	Ancestors []string
	// Expires is when DynamoDB's TTL may delete the event.
	Expires time.Time

	mu         sync.Mutex
	written    bool
	unrecorded bool
}

// Written reports whether a write of the request committed with the
// record.
func (r *Record) Written() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written
}

// Changed reports whether a write of the request committed, with the
// record or without it (MarkUnrecorded): the record is then due.
func (r *Record) Changed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written || r.unrecorded
}

// MarkUnrecorded records that a write committed that could not carry the
// record (a batch): the request's completion writes it.
func (r *Record) MarkUnrecorded() {
	r.mu.Lock()
	r.unrecorded = true
	r.mu.Unlock()
}

// MarkWritten records that a write committed with the record.
func (r *Record) MarkWritten() {
	r.mu.Lock()
	r.written = true
	r.mu.Unlock()
}

type recordKey struct{}

// With returns ctx carrying r: the writes made with it carry the event.
func With(ctx context.Context, r *Record) context.Context {
	return context.WithValue(ctx, recordKey{}, r)
}

// From returns the record ctx carries, nil for none.
func From(ctx context.Context) *Record {
	r, _ := ctx.Value(recordKey{}).(*Record)
	return r
}

// Without returns ctx carrying no record: writes that are not the
// request's change (the record's own completion).
func Without(ctx context.Context) context.Context {
	return context.WithValue(ctx, recordKey{}, (*Record)(nil))
}

// LogRefusal writes a refused request (401, 403) to the structured log
// with the fields an event has: refusals are not stored, so that no one
// can fill the trail with requests they may not make.
func LogRefusal(ctx context.Context, log *slog.Logger, ev Event) {
	status := 0
	if ev.Status != nil {
		status = *ev.Status
	}
	log.InfoContext(ctx, "refused", "audit", true, "status", status, "method", ev.Method, "path", ev.Path,
		"principal", ev.Actor.Principal, "key", ev.Actor.Key, "origin_key", ev.Actor.OriginKey,
		"request_id", ev.RequestID, "source_address", ev.SourceAddress, "user_agent", ev.UserAgent, "time", ev.Time)
}
