// Package tests serves the application tests (docs/api.md#application-tests): test
// configurations uploaded as archives (tar, zip, gzip, bzip2) or JSON,
// checked for what they claim to be, stored as uploaded and returned byte
// for byte or converted to tar.bz2; and test runs, queued to a runner that
// executes them through a loadgen.Driver. docs/application-tests.md
// describes the configuration format, the archive handling and the limits.
package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/shared/domain"
	"cads/shared/loadgen"
	"cads/shared/retry"
	"cads/shared/store"
)

// RunnerStore is what the runner reads and writes.
type RunnerStore struct {
	Now   func() time.Time
	Tests interface {
		GetAppTest(ctx context.Context, account, id string) (domain.AppTest, error)
		AppTestBlobData(ctx context.Context, account, id string, b domain.AppTestBlob) ([]byte, error)
		UpdateAppTestRun(ctx context.Context, account, id, runID, from, to, run string, activeUntil time.Time) error
	}
	Applications interface {
		AliasAccounts(ctx context.Context, aliases []string) (map[string]string, error)
	}
}

// NewRunnerStore is a RunnerStore over the table's repositories.
func NewRunnerStore(st *store.Store) RunnerStore {
	return RunnerStore{Now: st.Now, Tests: st.Tests, Applications: st.Applications}
}

// RunHandler is the test runner: an SQS-triggered Lambda handler that
// reports batch item failures.
type RunHandler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// NewRunner executes queued runs through drv, which delivers every
// request to the platform's edge. Requests whose host is not (any more)
// an alias of the account's applications are not sent: they are counted
// as errors and named in the run's result. A run whose targets names
// an application sends an access record of every request, tagged with the
// run's load id, to sink (nil: none are sent). A run moves queued ->
// running -> succeeded|failed with conditional writes, so a redelivered
// message never runs it twice: a message whose run is already running
// waits (is retried) while the run's active window is open, as its runner
// may be at work, and after it ends the run as failed (its runner died);
// one for a finished, replaced or deleted run does nothing.
func NewRunner(st RunnerStore, drv loadgen.Driver, sink RecordSink, log *slog.Logger) RunHandler {
	r := &runner{st: st, drv: drv, sink: sink, log: log}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, rec := range ev.Records {
			if err := r.handle(ctx, rec.Body); err != nil {
				log.ErrorContext(ctx, "test run message not processed; it will be retried", "message", rec.MessageId, "error", err.Error())
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			}
		}
		return resp, nil
	}
}

type runner struct {
	st   RunnerStore
	drv  loadgen.Driver
	sink RecordSink
	log  *slog.Logger
}

func (r *runner) handle(ctx context.Context, body string) error {
	var msg RunMessage
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Account == "" || msg.Test == "" || msg.Run == "" {
		// Kept for inspection: it reaches the dead-letter queue.
		return fmt.Errorf("malformed test run message %q", body)
	}
	log := r.log.With("account", msg.Account, "test", msg.Test, "load_id", msg.Run)
	t, err := r.st.Tests.GetAppTest(ctx, msg.Account, msg.Test)
	if errors.Is(err, domain.ErrNotFound) {
		log.InfoContext(ctx, "test deleted before its run started")
		return nil
	}
	if err != nil {
		return err
	}
	if t.RunID != msg.Run {
		log.InfoContext(ctx, "run superseded by another; not started")
		return nil
	}
	var run Run
	if err := json.Unmarshal([]byte(t.Run), &run); err != nil {
		return fmt.Errorf("decode run %s: %w", msg.Run, err)
	}
	switch t.RunState {
	case RunQueued:
	case RunRunning:
		// SQS now and then delivers a message twice: while the run's
		// active window is open its runner may be at work, and this copy
		// waits for it. After the window only a runner that stopped
		// mid-run leaves this state behind. (A redelivery after a crash
		// comes after the queue's visibility timeout, which exceeds the
		// runner's own timeout.)
		if r.st.Now().UnixMilli() < t.RunActiveUntil {
			return fmt.Errorf("run %s is running in another invocation until %s; this copy of its message waits", msg.Run, time.UnixMilli(t.RunActiveUntil).UTC().Format(time.RFC3339))
		}
		return r.finish(ctx, log, t, run, RunRunning, nil, errors.New("the runner stopped before the run finished; start it again"))
	default:
		return nil
	}

	started := r.st.Now()
	run.State, run.Started = RunRunning, &started
	until := started.Add(time.Duration(run.Duration)*time.Second + RunGrace)
	if err := r.update(ctx, t, run, RunQueued, until); err != nil {
		if errors.Is(err, store.ErrRunChanged) || errors.Is(err, domain.ErrNotFound) {
			return nil
		}
		return err
	}
	// The configuration, then the claims of the hosts it names: an alias
	// may have been removed, or its application deleted, since the upload.
	cfg, err := r.config(ctx, t)
	if err != nil {
		return r.finish(ctx, log, t, run, RunRunning, nil, err)
	}
	plan := cfg.Plan(run.LoadID, time.Duration(run.Duration)*time.Second, run.VirtualUsers)
	own, err := OwnAliases(ctx, r.st.Applications, msg.Account, planURLs(&plan))
	if err != nil {
		return r.finish(ctx, log, t, run, RunRunning, nil, fmt.Errorf("the account's aliases could not be read: %w", err))
	}
	refused := refuseForeign(&plan, own)
	var em *emitter
	if app, ok := strings.CutPrefix(run.Targets, "/v2/applications/"); ok && r.sink != nil {
		em = newEmitter(ctx, r.sink, app, run.LoadID, log)
		plan.Observe = em.observe
	}
	res, err := r.drv.Run(ctx, plan)
	if em != nil {
		c := em.close()
		run.AccessRecords = &c
	}
	if len(refused) > 0 {
		log.WarnContext(ctx, "requests of a test run not sent: their hosts are not aliases of the account's applications", "refused", refused)
	}
	return r.finish(ctx, log, t, run, RunRunning, &res, err, refused...)
}

// config reads and parses the test's current configuration.
func (r *runner) config(ctx context.Context, t domain.AppTest) (*Config, error) {
	data, err := r.st.Tests.AppTestBlobData(ctx, t.Account, t.ID, t.Archive)
	if errors.Is(err, domain.ErrChanged) {
		if t, err = r.st.Tests.GetAppTest(ctx, t.Account, t.ID); err == nil {
			data, err = r.st.Tests.AppTestBlobData(ctx, t.Account, t.ID, t.Archive)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the test's configuration could not be read: %w", err)
	}
	a, err := Open(t.MediaType, data)
	if err != nil {
		return nil, fmt.Errorf("the test's configuration does not open: %w", err)
	}
	return ParseConfig(a)
}

// finish records the run's end: its result, or runErr as its message.
// The final write is retried a few times, as a lost write would leave the
// run's result unknown.
func (r *runner) finish(ctx context.Context, log *slog.Logger, t domain.AppTest, run Run, from string, res *loadgen.Result, runErr error, refused ...string) error {
	done := r.st.Now()
	run.Completed = &done
	if runErr != nil {
		run.State, run.Message = RunFailed, runErr.Error()
		log.WarnContext(ctx, "application test run failed", "error", runErr.Error())
	} else {
		run.State, run.Result = RunSucceeded, resultOut(*res)
		run.Result.Refused = refused
		a := run.Result.AggregateMetrics
		log.InfoContext(ctx, "application test run finished", "requests", a.RequestCount, "errors", a.ErrorCount,
			"duration_s", run.Result.Duration, "virtual_users", run.Result.VirtualUsers, "average_ttfb_ms", a.AverageTTFB, "throughput_rps", a.AverageThroughput)
	}
	return retry.Do(ctx, finishRetry, func(error) bool { return true }, func(int) error {
		err := r.update(ctx, t, run, from, time.Time{})
		if errors.Is(err, store.ErrRunChanged) || errors.Is(err, domain.ErrNotFound) {
			return nil // another writer settled the run, or the test is gone
		}
		return err
	})
}

// finishRetry is how the write of a run's outcome is tried again: the
// run took minutes, a passing failure must not lose its result.
var finishRetry = retry.Policy{Retries: 2, Base: 200 * time.Millisecond, Max: 400 * time.Millisecond}

func (r *runner) update(ctx context.Context, t domain.AppTest, run Run, from string, until time.Time) error {
	b, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encode run: %w", err)
	}
	return r.st.Tests.UpdateAppTestRun(ctx, t.Account, t.ID, run.ID, from, run.State, string(b), until)
}

// RunGrace is how long after its duration a run still counts as active:
// time to wait in the queue and to start. A run whose runner died stops
// blocking new runs once it has passed.
const RunGrace = 15 * time.Minute

// RunMessage is what the run queue carries.
type RunMessage struct {
	Account string `json:"account"`
	Test    string `json:"test"`
	Run     string `json:"run"`
}
