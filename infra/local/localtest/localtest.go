// Package localtest starts the whole local platform for a test, as
// `make run` does, but on a free loopback port with its own state
// directory, and stops it when the test ends.
package localtest

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"cads/infra/local"
	"cads/infra/localaws"
	"cads/infra/schedule"
	"cads/infra/testenv"
)

// Logs collects the platform's log lines. Its goroutines write while the
// test reads, so it is locked.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start starts the platform with every log line, debug and up, going to
// the returned Logs, which the test's output shows if it fails. Every
// response of the API is checked against its OpenAPI document (Contract):
// a response the document does not describe fails the test. opts
// adjust the options before the start (a round-trip counter, say). The
// schedules' clock is a schedule.ManualClock that nothing moves: a test
// that runs schedules sets its own.
func Start(t testing.TB, opts ...func(*local.Options)) (*local.Platform, *Logs) {
	t.Helper()
	contract, err := sharedContract()
	if err != nil {
		t.Fatal(err)
	}
	logs := &Logs{}
	o := local.Options{
		Template: filepath.Join(testenv.Root(t), "template.yaml"),
		Parsed:   testenv.Template(t),
		APIAddr:  "127.0.0.1:0",
		StateDir: t.TempDir(),
		Log:      slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		// Tests assert what a change does to the very next request; the
		// warm path's bound is tested with a clock in shared/access (and by
		// tests that set it back on).
		AuthzStaleness: -1,
		// Schedules run only when the test moves this clock: a sweep
		// firing a minute into a long test would change the table and
		// the round-trip counts the test is measuring.
		Clock: schedule.NewManualClock(time.Now()),
		// Every response the test gets is checked against the API's
		// OpenAPI document.
		WrapHTTP: contract.Middleware(t),
	}
	// CADS_DYNAMO_REALISM (unset by default) starts the platform's
	// DynamoDB in realistic mode; a test's own options still win.
	realism, err := localaws.RealismFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	o.DynamoRealism = realism
	for _, opt := range opts {
		opt(&o)
	}
	if o.DynamoRealism != nil {
		t.Logf("DynamoDB in realistic mode: %s", o.DynamoRealism)
	}
	p, err := local.Start(context.Background(), o)
	if err != nil {
		t.Fatalf("start the local platform: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		_ = p.Close(context.Background())
		if t.Failed() {
			t.Logf("platform log:\n%s", logs.String())
		}
	})
	return p, logs
}

// sharedContract is the contract every Start of a test binary checks
// against, loaded and validated once: a Contract is only read, and tests
// that start a platform per case spent more on loading the document than
// on starting the platform.
var sharedContract = sync.OnceValues(func() (*Contract, error) { return LoadContract(context.Background()) })
