package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/sync/errgroup"

	"cads/shared/applications/appconfig"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/store"
)

// WorkerStore is what the worker reads and writes.
type WorkerStore struct {
	Now   func() time.Time
	Tasks interface {
		CAStore
		ClaimTask(ctx context.Context, id, owner string, now, leaseUntil time.Time) (domain.Task, error)
		ReleaseTask(ctx context.Context, account, id, owner, lastError string) error
		FinishTask(ctx context.Context, f store.TaskFinish) error
	}
	Applications interface {
		GetApplication(ctx context.Context, account, id string) (domain.Application, error)
		BeginTransition(ctx context.Context, account, id, from, mid, task string) error
		GetAction(ctx context.Context, account, app, id string) (domain.Action, error)
	}
}

// NewWorkerStore is a WorkerStore over the table's repositories.
func NewWorkerStore(st *store.Store) WorkerStore {
	return WorkerStore{Now: st.Now, Tasks: st.Tasks, Applications: st.Applications}
}

// Worker defaults. MaxAttempts must equal the task queue's maxReceiveCount
// in template.yaml (a test checks it): the attempt that exhausts it marks
// the task failed and lets its message go to the dead-letter queue.
const (
	MaxAttempts = 5
	// DefaultLease outlasts the worker function's 30 s timeout, so a
	// lease that has expired belongs to an invocation that is gone.
	DefaultLease = 45 * time.Second
)

// Worker runs tasks from the queue.
type Worker struct {
	st          WorkerStore
	dp          DataPlane
	sweep       Sweeper
	log         *slog.Logger
	MaxAttempts int
	Lease       time.Duration
	// Archives prepares log archives (prepare-for-download); without it
	// those tasks fail.
	Archives Archiver
}

// Archiver writes log archives (the logs family's, plugged in by the
// worker's wiring). A range it refuses (a budget, too many archives) is a
// Permanent error; store.ErrNotFound means the application is gone.
type Archiver interface {
	PrepareArchive(ctx context.Context, r ArchiveRequest) (ArchiveResult, error)
}

// ArchiveRequest is what a prepare-for-download task asks for.
type ArchiveRequest struct {
	Account, App, ArchiveType string
	From, To                  time.Time
	RetentionDays             int // 0: the default
	Task                      string
}

// ArchiveResult is a prepared archive: the task's message and result.
type ArchiveResult struct {
	Message string
	Result  any
}

// Permanent is an error that fails a task at once with msg: running it
// again cannot help.
func Permanent(msg string) error { return permanent{msg} }

// Sweeper sends the messages the outbox owes (outbox.Outbox): those of
// every kind, not only tasks, since the worker's schedule is the one
// sweep of the deployment.
type Sweeper interface {
	Sweep(ctx context.Context) (int, error)
}

// NewWorker returns a worker; sweep runs at the start of every
// invocation.
func NewWorker(st WorkerStore, dp DataPlane, sweep Sweeper, log *slog.Logger) *Worker {
	return &Worker{st: st, dp: dp, sweep: sweep, log: log, MaxAttempts: MaxAttempts, Lease: DefaultLease}
}

// SQSHandler is the worker's Lambda signature.
type SQSHandler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// Handle is the SQS handler: it sweeps the outbox alongside running every
// record of the batch in parallel (the sweep shares nothing with the
// records, so no task waits for it) and reports the records to redeliver.
// An event without records (the scheduled invocation) only sweeps.
func (w *Worker) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var (
		mu   sync.Mutex
		resp events.SQSEventResponse
		g    errgroup.Group // each record's outcome is in resp; the batch size bounds the fan-out
	)
	g.Go(func() error {
		// Sweep logs what it re-sent; only its failure is reported here.
		if _, err := w.sweep.Sweep(ctx); err != nil {
			w.log.WarnContext(ctx, "outbox sweep failed", "error", err.Error())
		}
		return nil
	})
	for _, rec := range ev.Records {
		g.Go(func() error {
			if w.Process(ctx, rec.Body) == Retry {
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return resp, nil
}

// Outcome says what becomes of a message.
type Outcome int

const (
	// Done: delete the message.
	Done Outcome = iota
	// Retry: leave the message to be redelivered (or, once its receives
	// are exhausted, moved to the dead-letter queue).
	Retry
)

// permanent is a failure that running again cannot fix: the task fails
// at once with this message.
type permanent struct{ msg string }

func (p permanent) Error() string { return p.msg }

func failf(format string, args ...any) error { return permanent{fmt.Sprintf(format, args...)} }

// finish is a task's successful outcome: its message, result and the
// effects FinishTask applies with it.
type finish struct {
	message string
	result  any
	fin     store.TaskFinish
}

// Process runs the task a message names.
func (w *Worker) Process(ctx context.Context, body string) Outcome {
	var m message
	if err := json.Unmarshal([]byte(body), &m); err != nil || !ids.Valid(m.Task) {
		// Nothing to mark failed: let the redrive policy move it to the DLQ.
		w.log.ErrorContext(ctx, "poison message: not a task message", "body", domain.Clip(body, 200))
		return Retry
	}
	owner := ids.New()
	now := w.st.Now()
	t, err := w.st.Tasks.ClaimTask(ctx, m.Task, owner, now, now.Add(w.Lease))
	switch {
	case errors.Is(err, domain.ErrNotFound):
		w.log.ErrorContext(ctx, "poison message: no such task", "task", m.Task)
		return Retry
	case errors.Is(err, store.ErrLeaseHeld):
		if t.Finished() || !t.Due(now) {
			// A duplicate or redelivered message; or a scheduled task
			// delivered early, which stays pending: its held marker is
			// due at its time, when the outbox sweep sends it again.
			return Done
		}
		return Retry // another invocation runs it; look again later
	case err != nil:
		w.log.WarnContext(ctx, "claim task failed", "task", m.Task, "error", err.Error())
		return Retry
	}
	log := w.log.With("task", t.ID, "type", t.Type, "attempt", t.Attempts)
	if t.Attempts > w.MaxAttempts {
		// Earlier attempts died without recording an outcome.
		w.fail(ctx, log, t, owner, fmt.Sprintf("gave up after %d attempts; last error: %s", w.MaxAttempts, orNone(t.LastError)))
		return Retry
	}

	err = w.runAndFinish(ctx, log, t, owner)
	var p permanent
	switch {
	case err == nil:
		return Done
	case errors.Is(err, store.ErrLeaseLost):
		log.WarnContext(ctx, "task lease lost before finishing; the invocation holding it finishes it")
		return Done
	case errors.As(err, &p):
		w.fail(ctx, log, t, owner, p.msg)
		return Done
	}
	// Retryable.
	if t.Attempts >= w.MaxAttempts {
		w.fail(ctx, log, t, owner, fmt.Sprintf("failed after %d attempts: %v", t.Attempts, err))
		return Retry
	}
	log.WarnContext(ctx, "task attempt failed; it will be retried", "error", err.Error())
	if rerr := w.st.Tasks.ReleaseTask(ctx, t.Account, t.ID, owner, err.Error()); rerr != nil && !errors.Is(rerr, store.ErrLeaseLost) {
		log.WarnContext(ctx, "release task failed", "error", rerr.Error())
	}
	return Retry
}

// runAndFinish runs the task and writes its outcome with its effects. An
// effect conditional on the application's version (a configuration
// change) that lost to a concurrent edit is recomputed from a fresh read.
func (w *Worker) runAndFinish(ctx context.Context, log *slog.Logger, t domain.Task, owner string) error {
	for try := 0; ; try++ {
		f, err := w.run(ctx, t)
		if err != nil {
			return err
		}
		f.fin.Account, f.fin.ID, f.fin.Owner, f.fin.State, f.fin.Message = t.Account, t.ID, owner, domain.TaskSuccess, f.message
		if f.result != nil {
			b, err := json.Marshal(f.result)
			if err != nil {
				return failf("encode result: %v", err)
			}
			f.fin.Result = string(b)
		}
		err = w.st.Tasks.FinishTask(ctx, f.fin)
		if err == nil {
			log.InfoContext(ctx, "task succeeded", "message", f.message)
			return nil
		}
		// A lost race (ErrChanged, itself a conflict) is run again first.
		if errors.Is(err, domain.ErrChanged) {
			if try >= 5 {
				return err
			}
			continue
		}
		// An alias another application holds, or more alias changes than
		// one transaction can claim: running again cannot fix either.
		if domain.ErrorCode(err) == domain.Conflict {
			return failf("%s", domain.ErrorMessage(err))
		}
		if errors.Is(err, store.ErrTooManyAliasChanges) {
			return failf("aliases: one change may add and remove at most %d host names together; make it in steps", store.MaxAliasWrites)
		}
		return err
	}
}

// fail marks the task failed and, if it holds a transition of its
// application, puts the application back in the state it came from.
func (w *Worker) fail(ctx context.Context, log *slog.Logger, t domain.Task, owner, msg string) {
	fin := store.TaskFinish{Account: t.Account, ID: t.ID, Owner: owner, State: domain.TaskFailed, Message: msg}
	if t.App != "" {
		if app, err := w.st.Applications.GetApplication(ctx, t.Account, t.App); err == nil && app.TransitionTask == t.ID {
			fin.Transition = &store.Transition{App: app.ID, Task: t.ID, To: app.TransitionFrom, Restore: true}
		}
	}
	err := w.st.Tasks.FinishTask(ctx, fin)
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		log.ErrorContext(ctx, "could not record the task's failure", "error", err.Error(), "message", msg)
		return
	}
	log.WarnContext(ctx, "task failed", "message", msg)
}

func (w *Worker) run(ctx context.Context, t domain.Task) (finish, error) {
	if lc, ok := Lifecycles[t.Type]; ok {
		return w.lifecycle(ctx, t, lc)
	}
	switch t.Type {
	case TypePatchApplication:
		return w.patch(ctx, t)
	case TypeRunAction:
		return w.runAction(ctx, t)
	case TypeGenerateOriginCertificate:
		return w.certificate(ctx, t)
	case TypeInvalidateCache:
		return w.invalidate(ctx, t)
	case TypePrepareForDownload:
		return w.prepare(ctx, t)
	}
	return finish{}, failf("unknown task type %q", t.Type)
}

// application reads the task's application; a missing one fails the task.
func (w *Worker) application(ctx context.Context, t domain.Task) (domain.Application, error) {
	app, err := w.st.Applications.GetApplication(ctx, t.Account, t.App)
	if errors.Is(err, domain.ErrNotFound) {
		return app, failf("application %s no longer exists", t.App)
	}
	return app, err
}

// lifecycle moves the application from one of lc.From through lc.Via to
// lc.To. Each step is conditional, so a redelivered task resumes its own
// transition and never applies twice, and concurrent tasks on the same
// application cannot both pass the same state.
func (w *Worker) lifecycle(ctx context.Context, t domain.Task, lc Lifecycle) (finish, error) {
	var (
		from string
		app  domain.Application
		err  error
	)
	for try := 0; ; try++ {
		app, err = w.application(ctx, t)
		if err != nil {
			return finish{}, err
		}
		if app.TransitionTask == t.ID {
			from = app.TransitionFrom // resuming after a crash
			break
		}
		if t.Ends != "" && (app.State != domain.AppMaintenance || app.StateTask != t.Ends) {
			// The maintenance this end was scheduled for is over already
			// (exited, stopped, or entered again by another task).
			return finish{
				message: fmt.Sprintf("nothing to do: application %s is %s, no longer in the maintenance task %s began", app.ID, app.State, t.Ends),
				result:  map[string]string{"from": app.State, "state": app.State},
			}, nil
		}
		if !slices.Contains(lc.From, app.State) {
			return finish{}, failf("cannot %s application %s: it is %s; %s is allowed only when it is %s",
				verb(t.Type), app.ID, app.State, t.Type, strings.Join(lc.From, " or "))
		}
		err = w.st.Applications.BeginTransition(ctx, app.Account, app.ID, app.State, lc.Via, t.ID)
		if err == nil {
			from, app.State, app.TransitionTask, app.TransitionFrom = app.State, lc.Via, t.ID, app.State
			break
		}
		if !errors.Is(err, domain.ErrChanged) || try >= 3 {
			return finish{}, err
		}
	}
	if err := w.dp.SetState(ctx, app, lc.To); err != nil {
		return finish{}, fmt.Errorf("data plane: %w", err)
	}
	f := finish{
		message: fmt.Sprintf("application %s is %s", app.ID, lc.To),
		result:  map[string]string{"from": from, "state": lc.To},
		fin:     store.TaskFinish{Transition: &store.Transition{App: app.ID, Task: t.ID, To: lc.To}},
	}
	if t.Type == TypeEnterMaintenance {
		fu, err := w.scheduledExit(t)
		if err != nil {
			return finish{}, err
		}
		if fu != nil {
			f.fin.FollowUp = fu
			f.message += fmt.Sprintf("; it exits maintenance at %s (task %s)", fu.Marker.Due.Format(time.RFC3339), Href(fu.Task.ID))
		}
	}
	return f, nil
}

// scheduledExit is the exit_maintenance task an enter_maintenance task
// with maximum_duration creates as it succeeds: pending until the
// duration has passed since now, its held marker due then, so the outbox
// sweep hands it to the queue on time (within the sweep's minute).
func (w *Worker) scheduledExit(t domain.Task) (*store.FollowUp, error) {
	var p EnterParams
	if t.Parameters != "" {
		if err := json.Unmarshal([]byte(t.Parameters), &p); err != nil {
			return nil, failf("stored parameters do not parse: %v", err)
		}
	}
	if p.MaximumDuration == nil {
		return nil, nil
	}
	now := w.st.Now()
	at := now.Add(time.Duration(*p.MaximumDuration) * time.Second)
	exit, err := NewTask(now, t.Account, t.CreatedBy, Request{Type: TypeExitMaintenance, App: t.App, Params: struct{}{}})
	if err != nil {
		return nil, err
	}
	exit.NotBefore, exit.Ends = at.UnixMilli(), t.ID
	exit.Message = fmt.Sprintf("scheduled for %s: ends the maintenance that task %s began (maximum_duration %d s)", at.Format(time.RFC3339), Href(t.ID), *p.MaximumDuration)
	body, err := json.Marshal(message{Task: exit.ID})
	if err != nil {
		return nil, fmt.Errorf("encode task message: %w", err)
	}
	return &store.FollowUp{Task: exit, Marker: store.OutboxMarker{Queue: QueueID, Body: string(body), Due: at}}, nil
}

func verb(typ string) string {
	return strings.ReplaceAll(typ, "_", " ")
}

// patch applies a patch-application task's changes to the configuration
// as it is now, conditional on its version (re-read on a conflict), in the
// transaction that finishes the task.
func (w *Worker) patch(ctx context.Context, t domain.Task) (finish, error) {
	var p PatchParams
	if err := json.Unmarshal([]byte(t.Parameters), &p); err != nil {
		return finish{}, failf("stored parameters do not parse: %v", err)
	}
	app, err := w.application(ctx, t)
	if err != nil {
		return finish{}, err
	}
	cur, err := appconfig.Parse(app.Config)
	if err != nil {
		return finish{}, err
	}
	next, err := appconfig.Apply(cur, p.Changes)
	if err != nil {
		return finish{}, failf("the patch no longer applies: %s", errorMessage(err))
	}
	changed := appconfig.Changed(cur, next)
	if len(changed) == 0 {
		// Already as asked (a concurrent patch made the same change).
		return finish{message: "configuration already as requested", result: map[string]any{"changed": []string{}, "version": app.Version}}, nil
	}
	return finish{
		message: fmt.Sprintf("configuration of application %s updated", app.ID),
		result:  map[string]any{"changed": changed, "version": app.Version + 1},
		fin: store.TaskFinish{Config: &store.ConfigChange{Account: t.Account, App: app.ID, From: app.Version, Config: next.Encode(),
			Aliases: next.Aliases, FromAliases: cur.Aliases}},
	}, nil
}

func errorMessage(err error) string {
	if e, ok := domain.AsError(err); ok {
		return e.Message
	}
	return err.Error()
}

func (w *Worker) runAction(ctx context.Context, t domain.Task) (finish, error) {
	var p RunActionParams
	if err := json.Unmarshal([]byte(t.Parameters), &p); err != nil {
		return finish{}, failf("stored parameters do not parse: %v", err)
	}
	act, err := w.st.Applications.GetAction(ctx, t.Account, t.App, p.ID)
	if errors.Is(err, domain.ErrNotFound) {
		return finish{}, failf("application %s has no action %q (any more)", t.App, p.ID)
	}
	if err != nil {
		return finish{}, err
	}
	res, err := w.dp.RunAction(ctx, ActionCall{Task: t.ID, App: t.App, Action: act})
	var ae *ActionError
	if errors.As(err, &ae) && !ae.Retryable {
		return finish{}, failf("action %s: %s", act.ID, ae.Msg)
	}
	if err != nil {
		return finish{}, fmt.Errorf("action %s: %w", act.ID, err)
	}
	return finish{message: fmt.Sprintf("action %s answered %d", act.ID, res.StatusCode), result: res}, nil
}

func (w *Worker) certificate(ctx context.Context, t domain.Task) (finish, error) {
	var p CertificateParams
	if err := json.Unmarshal([]byte(t.Parameters), &p); err != nil {
		return finish{}, failf("stored parameters do not parse: %v", err)
	}
	hosts := p.Hostnames
	if len(hosts) == 0 {
		app, err := w.application(ctx, t)
		if err != nil {
			return finish{}, err
		}
		cfg, err := appconfig.Parse(app.Config)
		if err != nil {
			return finish{}, err
		}
		hosts = cfg.Aliases
	}
	now := w.st.Now()
	ca, err := accountCA(ctx, w.st.Tasks, t.Account, now)
	if err != nil {
		return finish{}, err
	}
	notAfter := now.Add(DefaultCertLifetime)
	if p.Expiry != nil {
		notAfter = *p.Expiry
	}
	res, err := ca.issue(p.Key, hosts, notAfter, now)
	if err != nil {
		return finish{}, failf("%v", err)
	}
	return finish{message: fmt.Sprintf("origin certificate issued for %s", strings.Join(hosts, ", ")), result: res}, nil
}

func (w *Worker) invalidate(ctx context.Context, t domain.Task) (finish, error) {
	var p InvalidateParams
	if err := json.Unmarshal([]byte(t.Parameters), &p); err != nil {
		return finish{}, failf("stored parameters do not parse: %v", err)
	}
	if _, err := w.application(ctx, t); err != nil {
		return finish{}, err
	}
	inv := store.Invalidation{App: t.App, Task: t.ID, URLs: p.URLs, Tags: p.Tags, Created: w.st.Now()}
	if err := w.dp.InvalidateCache(ctx, inv); err != nil {
		return finish{}, fmt.Errorf("data plane: %w", err)
	}
	scope := "all"
	switch {
	case p.Tags != nil:
		scope = "tags"
	case p.URLs != nil:
		scope = "urls"
	}
	return finish{
		message: "invalidation recorded for the data plane",
		result:  map[string]any{"scope": scope, "urls": p.URLs, "tags": p.Tags},
		fin:     store.TaskFinish{Invalidation: &inv},
	}, nil
}

// prepare writes the archive a prepare-for-download task asks for. A
// range past a budget fails the task, naming the limit; nothing is
// written unless the whole archive is.
func (w *Worker) prepare(ctx context.Context, t domain.Task) (finish, error) {
	var p PrepareParams
	if err := json.Unmarshal([]byte(t.Parameters), &p); err != nil || p.From == nil || p.To == nil {
		return finish{}, failf("stored parameters do not parse: %v", err)
	}
	if w.Archives == nil {
		return finish{}, failf("log archives are not available in this deployment")
	}
	app, typ, err := domain.ParseArchiveReference(p.Reference)
	if err != nil {
		return finish{}, failf("%v", err)
	}
	days := 0
	if p.Retention != nil {
		days = *p.Retention
	}
	res, err := w.Archives.PrepareArchive(ctx, ArchiveRequest{Account: t.Account, App: app, ArchiveType: typ, From: *p.From, To: *p.To, RetentionDays: days, Task: t.ID})
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return finish{}, failf("application %s no longer exists", app)
	case err != nil:
		return finish{}, err
	}
	return finish{message: res.Message, result: res.Result}, nil
}

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}
