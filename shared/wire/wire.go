// Package wire holds what every function's wiring shares: the
// dependencies (Deps), reading them from the environment, and the logical
// ids of the queues. It imports no resource family: each function has its
// own wiring package under shared/wire (authorizerwire, roleswire, ...)
// that builds that function's handler and imports only that function's
// families, so a Lambda binary links only the packages it serves. The
// Lambda mains, the local platform and the tests all call those packages,
// so a function is wired the same way everywhere.
package wire

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/shared/audit"
	"cads/shared/clock"
	"cads/shared/ddb"
	"cads/shared/logging"
	"cads/shared/store"
)

// Logical ids, in template.yaml, of the queues functions send to.
const (
	// TasksQueue carries task ids to the task worker.
	TasksQueue = "TasksQueue"
	// MetricsQueue is the aggregator's: the edge's ingest batches,
	// address-set events and expiry wake-ups.
	MetricsQueue = "MetricsQueue"
	// TestRunsQueue carries application test runs to the test runner.
	TestRunsQueue = "TestRunsQueue"
	// NotificationsQueue carries invitations to deliver to the notifier.
	NotificationsQueue = "NotificationsQueue"
)

// Deps are what functions need.
type Deps struct {
	Log *slog.Logger
	// Clock is the time of everything the function stores and decides:
	// the store's and access's clock (clock.System outside tests).
	Clock clock.Clock
	Store *store.Store
	// SQS and QueueURLs (by the queue's logical id in template.yaml) are set
	// for functions that send to queues.
	SQS       *sqs.Client
	QueueURLs map[string]string
	// Edge is where application test runs send their requests: the
	// platform's edge (EDGE_ADDR and EDGE_TLS_ADDR on AWS; the local
	// platform's stand-in edge locally).
	Edge Edge
	// AuthzStaleness bounds the authorizer's warm path (access.WithStaleness):
	// how long a warm container decides with what it read for a key. 0 (the
	// zero value, as in tests that build Deps by hand) reads the table on
	// every decision; the deployed authorizer uses access.DefaultStaleness
	// (authorizerwire.FromEnv).
	AuthzStaleness time.Duration
	// CORSAllowOrigin is the origin the API functions answer CORS for
	// (apigw.WithCORS): template.yaml's CorsAllowOrigin, through
	// CORS_ALLOW_ORIGIN on AWS and the template locally.
	CORSAllowOrigin string
	// AuditRetention is how long an audit event is kept: template.yaml's
	// AuditRetentionDays, through AUDIT_RETENTION_DAYS (0: the default,
	// apigw.DefaultAuditRetention).
	AuditRetention time.Duration
	// Audit keeps the audit trail of the API functions' writes: the Store
	// (New sets it). Tests that count a family's own round trips set it
	// to nil; the cost tour counts them with the trail.
	Audit audit.Store
}

// Edge addresses the platform's edge. It mirrors loadgen.Edge (the test
// runner converts it) so that Deps does not pull the load generator into
// every function.
type Edge struct {
	// Addr is host:port of the edge's plain HTTP endpoint.
	Addr string
	// TLSAddr is host:port of its HTTPS endpoint; "" when it has none.
	TLSAddr string
	// RootCAs verify the edge's certificates; nil means the system's.
	RootCAs *x509.CertPool
}

// QueueURL is the URL of the queue with logical id id, or "" when this
// deployment (or test) declares no such queue or has no SQS client: the
// caller then falls back to its no-queue behaviour.
func (d Deps) QueueURL(id string) string {
	if d.SQS == nil {
		return ""
	}
	return d.QueueURLs[id]
}

// CORSAllowOriginEnv carries template.yaml's CorsAllowOrigin to every
// function (Globals).
const CORSAllowOriginEnv = "CORS_ALLOW_ORIGIN"

// AuditRetentionEnv carries template.yaml's AuditRetentionDays to every
// function (Globals).
const AuditRetentionEnv = "AUDIT_RETENTION_DAYS"

// AuditRetention reads a number of days of AuditRetentionEnv; "" is 0,
// the default.
func AuditRetention(days string) (time.Duration, error) {
	if days == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(days)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s: %q is not a positive number of days", AuditRetentionEnv, days)
	}
	return time.Duration(n) * 24 * time.Hour, nil
}

// queueEnvPrefix names the environment variables that carry queue URLs:
// QUEUE_URL_<logical id>: !Ref <logical id> in template.yaml (on AWS, Ref
// of a queue is its URL).
const queueEnvPrefix = "QUEUE_URL_"

// Option adds to what FromEnv builds.
type Option func(ctx context.Context, d *Deps) error

// WithAuthzStaleness sets Deps.AuthzStaleness: the functions that decide
// with package access pass access.DefaultStaleness, so their warm
// containers reuse what they read for a caller within that bound.
func WithAuthzStaleness(bound time.Duration) Option {
	return func(_ context.Context, d *Deps) error { d.AuthzStaleness = bound; return nil }
}

// WithSQS builds the SQS client for the queues named by QUEUE_URL_*
// (AWS_ENDPOINT_URL_SQS points it at a local server). Only the functions
// that send to queues pass it: the others then do not link the SQS client.
func WithSQS(ctx context.Context, d *Deps) error {
	if len(d.QueueURLs) == 0 {
		return nil
	}
	cfg, err := ddb.LoadConfig(ctx)
	if err != nil {
		return fmt.Errorf("sqs client: %w", err)
	}
	d.SQS = sqs.NewFromConfig(cfg)
	return nil
}

// FromEnv reads TABLE_NAME, LOG_LEVEL, EDGE_ADDR, EDGE_TLS_ADDR and
// QUEUE_URL_*, builds the DynamoDB client from the SDK's default
// configuration (AWS_ENDPOINT_URL_DYNAMODB points it at a local server),
// then applies opts. A queue URL without WithSQS is a start error: the
// function would otherwise silently never send to that queue.
func FromEnv(ctx context.Context, opts ...Option) (Deps, error) {
	log := logging.New(os.Stderr, os.Getenv("LOG_LEVEL"))
	table := os.Getenv("TABLE_NAME")
	if table == "" {
		return Deps{}, fmt.Errorf("TABLE_NAME is not set")
	}
	db, err := ddb.NewClient(ctx)
	if err != nil {
		return Deps{}, fmt.Errorf("dynamodb client: %w", err)
	}
	d := New(log, db, table)
	d.Edge = Edge{Addr: os.Getenv("EDGE_ADDR"), TLSAddr: os.Getenv("EDGE_TLS_ADDR")}
	d.CORSAllowOrigin = os.Getenv(CORSAllowOriginEnv)
	if d.AuditRetention, err = AuditRetention(os.Getenv(AuditRetentionEnv)); err != nil {
		return Deps{}, err
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if id, ok := strings.CutPrefix(k, queueEnvPrefix); ok && v != "" {
			if d.QueueURLs == nil {
				d.QueueURLs = map[string]string{}
			}
			d.QueueURLs[id] = v
		}
	}
	for _, opt := range opts {
		if err := opt(ctx, &d); err != nil {
			return Deps{}, err
		}
	}
	if d.SQS == nil && len(d.QueueURLs) > 0 {
		ids := make([]string, 0, len(d.QueueURLs))
		for id := range d.QueueURLs {
			ids = append(ids, queueEnvPrefix+id)
		}
		slices.Sort(ids)
		return Deps{}, fmt.Errorf("%s set, but this function is wired without an SQS client (wire.WithSQS)", strings.Join(ids, ", "))
	}
	return d, nil
}

// New builds Deps from a client, on the wall clock.
func New(log *slog.Logger, db *dynamodb.Client, table string) Deps {
	return NewClocked(log, db, table, clock.System)
}

// NewClocked builds Deps from a client on clock c: tests that advance a
// clock.Manual instead of sleeping.
func NewClocked(log *slog.Logger, db *dynamodb.Client, table string, c clock.Clock) Deps {
	st := store.New(db, table, store.WithClock(c))
	return Deps{Log: log, Clock: c, Store: st, Audit: st.Audit}
}
