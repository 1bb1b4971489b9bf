package tasksapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/retry"
	"cads/shared/routes"
	"cads/shared/store"
	"cads/shared/tasks"
)

// Store is what the tasks API reads and writes.
type Store struct {
	Now   func() time.Time
	Tasks interface {
		tasks.OutboxStore
		GetTask(ctx context.Context, account, id string) (domain.Task, error)
		PageTasks(ctx context.Context, account string, from, to time.Time, after string, desc bool, n int) ([]domain.Task, []string, bool, error)
	}
	Applications interface {
		GetApplication(ctx context.Context, account, id string) (domain.Application, error)
		GetAction(ctx context.Context, account, app, id string) (domain.Action, error)
	}
}

// NewStore is a Store over the table's repositories.
func NewStore(st *store.Store) Store {
	return Store{Now: st.Now, Tasks: st.Tasks, Applications: st.Applications}
}

// Deciders makes second decisions with the authorizer's engine.
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
}

// MaxWait bounds POST /v2/tasks?wait=<seconds>.
const MaxWait = 5

type handler struct {
	st     Store
	dec    Deciders
	outbox *tasks.Outbox
	log    *slog.Logger
}

// New returns the tasks function's HTTP handler.
func New(st Store, dec Deciders, outbox *tasks.Outbox, log *slog.Logger) *apigw.Router {
	h := &handler{st: st, dec: dec, outbox: outbox, log: log}
	mux := apigw.NewRouter(routes.Tasks)
	mux.HandleFunc("postTasks", h.wrap(h.create))
	mux.HandleFunc("getTasks", h.wrap(h.list))
	mux.HandleFunc("getTasksById", h.wrap(h.get))
	mux.HandleFunc("getTasksByIdLogs", h.wrap(h.logs))
	return mux
}

type endpoint = apigw.Endpoint

func (h *handler) wrap(e endpoint) http.HandlerFunc { return apigw.HandleInAccount(h.log, e) }

// create is POST /v2/tasks: validate, decide the task's own permission
// (docs/api.md#tasks) with the authorizer's engine, check the target, then write the
// task through the outbox. 201 while it runs; 200 once it has finished,
// which ?wait=<seconds> (at most MaxWait) gives it time to do.
func (h *handler) create(r *http.Request, p caller.Principal) (int, any, error) {
	ctx := r.Context()
	wait, err := waitParam(r)
	if err != nil {
		return 0, nil, err
	}
	var body json.RawMessage
	if err := apigw.DecodeJSON(r, &body, tasks.KeyText); err != nil {
		return 0, nil, err
	}
	req, err := tasks.ParsePost(body, h.st.Now())
	if err != nil {
		return 0, nil, err
	}

	// The decision's data and the target are read in parallel; the target
	// is looked at only once the decision allows it, so a refused caller
	// learns nothing about it.
	var (
		g              errgroup.Group // the answers are needed to choose the error
		dec            *access.Decider
		appErr, actErr error
	)
	g.Go(func() (err error) { dec, err = h.dec.Decider(ctx, p); return err })
	if req.App != "" {
		g.Go(func() error { _, appErr = h.st.Applications.GetApplication(ctx, p.AccountID, req.App); return nil })
		if a, ok := req.Params.(tasks.RunActionParams); ok {
			g.Go(func() error { _, actErr = h.st.Applications.GetAction(ctx, p.AccountID, req.App, a.ID); return nil })
		}
	}
	if decErr := g.Wait(); decErr != nil {
		return 0, nil, decErr
	}
	if req.App != "" {
		method, path := tasks.Permission[req.Type], tasks.PermissionPath(req)
		d, err := dec.Decide(ctx, method, path)
		if err != nil {
			return 0, nil, err
		}
		if !d.Allowed {
			return 0, nil, domain.Errorf(domain.Forbidden, "a %s task needs %s %s besides POST /v2/tasks: %s", req.Type, method, path, d.Explain())
		}
		if errors.Is(appErr, domain.ErrNotFound) {
			return 0, nil, domain.Errorf(domain.NotFound, "no application %q", req.App)
		}
		if appErr != nil {
			return 0, nil, appErr
		}
		if errors.Is(actErr, domain.ErrNotFound) {
			return 0, nil, domain.Errorf(domain.NotFound, "application %s has no action %q", req.App, req.Params.(tasks.RunActionParams).ID)
		}
		if actErr != nil {
			return 0, nil, actErr
		}
	}
	t, err := tasks.NewTask(h.st.Now(), p.AccountID, p.ID, req)
	if err != nil {
		return 0, nil, err
	}
	if err := h.outbox.Submit(ctx, t); err != nil {
		return 0, nil, err
	}
	if wait > 0 {
		t = h.await(ctx, t, wait)
	}
	if t.Finished() {
		return http.StatusOK, tasks.Out(t), nil
	}
	return http.StatusCreated, tasks.Out(t), nil
}

// await polls the task until it finishes or wait ends, with a growing
// pause (100 ms doubling to 1 s) so a slow task costs few reads.
func (h *handler) await(ctx context.Context, t domain.Task, wait time.Duration) domain.Task {
	deadline := time.Now().Add(wait)
	pause := 100 * time.Millisecond
	for time.Now().Add(pause).Before(deadline) {
		if retry.Wait(ctx, pause) != nil {
			return t
		}
		cur, err := h.st.Tasks.GetTask(ctx, t.Account, t.ID)
		if err != nil {
			return t
		}
		t = cur
		if t.Finished() {
			return t
		}
		pause = min(2*pause, time.Second)
	}
	return t
}

func waitParam(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' || n > MaxWait {
			return 0, domain.Errorf(domain.Invalid, "wait must be a whole number of seconds from 0 to %d", MaxWait)
		}
		n = n*10 + int(c-'0')
	}
	if n > MaxWait {
		return 0, domain.Errorf(domain.Invalid, "wait must be a whole number of seconds from 0 to %d", MaxWait)
	}
	return time.Duration(n) * time.Second, nil
}

func (h *handler) get(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := apigw.PathID(r, "id", "task")
	if err != nil {
		return 0, nil, err
	}
	t, err := h.st.Tasks.GetTask(r.Context(), p.AccountID, id)
	if errors.Is(err, domain.ErrNotFound) {
		return 0, nil, domain.Errorf(domain.NotFound, "no task %q", id)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, tasks.Out(t), nil
}

// ProcessLog is one line of GET /v2/tasks/{id}/logs (the reference
// document's ProcessLog). process_id is the worker invocation that wrote
// the line; the submission's line has none.
type ProcessLog struct {
	ProcessID string    `json:"process_id,omitempty"`
	Activity  string    `json:"activity"`
	Created   time.Time `json:"created"`
	Severity  string    `json:"severity"`
	Message   string    `json:"message"`
}

// Task log limits: limit defaults as every collection's does; a task's
// log is bounded by its attempts, so MaxLogLimit is never the binding one.
const (
	DefaultLogLimit = 100
	MaxLogLimit     = 1000
)

// logs is GET /v2/tasks/{id}/logs: the task's log lines created in
// [from, to), oldest first, at most limit of them. The lines live on the
// task's item: one GetItem, however many there are.
func (h *handler) logs(r *http.Request, p caller.Principal) (int, any, error) {
	q := r.URL.Query()
	from, err := timeParam(q.Get("from"), "from")
	if err != nil {
		return 0, nil, err
	}
	to, err := timeParam(q.Get("to"), "to")
	if err != nil {
		return 0, nil, err
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return 0, nil, domain.Errorf(domain.Invalid, "from must be before to; from is inclusive, to exclusive")
	}
	limit := DefaultLogLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxLogLimit {
			return 0, nil, domain.Errorf(domain.Invalid, "limit must be a whole number from 0 to %d", MaxLogLimit)
		}
		limit = n
	}
	id, err := apigw.PathID(r, "id", "task")
	if err != nil {
		return 0, nil, err
	}
	t, err := h.st.Tasks.GetTask(r.Context(), p.AccountID, id)
	if errors.Is(err, domain.ErrNotFound) {
		return 0, nil, domain.Errorf(domain.NotFound, "no task %q", id)
	}
	if err != nil {
		return 0, nil, err
	}
	out := []ProcessLog{}
	for _, l := range t.Log {
		if len(out) == limit {
			break
		}
		if !from.IsZero() && l.Created.Before(from) || !to.IsZero() && !l.Created.Before(to) {
			continue
		}
		out = append(out, ProcessLog{ProcessID: l.Process, Activity: l.Activity, Created: l.Created.UTC(), Severity: l.Severity, Message: l.Message})
	}
	return http.StatusOK, out, nil
}

// list is GET /v2/tasks: the account's tasks created in [from, to) that the
// caller may GET (docs/api.md#collection-reads), newest first unless order
// says otherwise, paged in the store (apigw.List).
func (h *handler) list(r *http.Request, p caller.Principal) (int, any, error) {
	q := r.URL.Query()
	page, err := apigw.ParsePage(q, "created", "type", "state")
	if err != nil {
		return 0, nil, err
	}
	from, err := timeParam(q.Get("from"), "from")
	if err != nil {
		return 0, nil, err
	}
	to, err := timeParam(q.Get("to"), "to")
	if err != nil {
		return 0, nil, err
	}
	if len(page.Order) == 0 {
		// Newest first is this collection's default: the stored order,
		// read backwards. A next page (no order in its query either) comes
		// back here and gets the same order its cursor names.
		page.Order = []apigw.OrderKey{{Field: "created", Desc: true}}
	}
	list, err := apigw.List(r, page, apigw.Lister[domain.Task, tasks.Task]{
		Name: "tasks", Indexed: "created", ValidPosition: store.ValidPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.Task, []string, bool, error) {
			return h.st.Tasks.PageTasks(ctx, p.AccountID, from, to, after, desc, n)
		},
		Allow: func(ctx context.Context) (func(domain.Task) (bool, error), error) {
			d, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			return func(t domain.Task) (bool, error) { return d.Allows(ctx, http.MethodGet, tasks.Href(t.ID)) }, nil
		},
		Out:  func(t domain.Task) (tasks.Task, error) { return tasks.Out(t), nil },
		Sort: sortTasks,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func sortTasks(ts []tasks.Task, order []apigw.OrderKey) {
	apigw.Sort(ts, order, func(t tasks.Task, field string) any {
		switch field {
		case "type":
			return t.Type
		case "state":
			return t.State
		}
		return t.Created
	}, func(t tasks.Task) string { return t.ID }, apigw.OrderKey{Field: "created", Desc: true})
}

func timeParam(v, name string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, domain.Errorf(domain.Invalid, "%s must be an RFC 3339 time, like 2026-01-02T15:04:05Z", name)
	}
	return t, nil
}
