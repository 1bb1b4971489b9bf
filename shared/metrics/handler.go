package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/store"
)

// QueryStore is what the metrics endpoints read.
type QueryStore interface {
	Now() time.Time
	GetApplication(ctx context.Context, account, id string) (domain.Application, error)
	GetAddressSetItem(ctx context.Context, account, id string) (domain.AddressSet, error)
	MetricChunks(ctx context.Context, keys []store.MetricChunkKey) (map[store.MetricChunkKey]map[string]int64, error)
	PageApplications(ctx context.Context, account, after string, desc bool, n int) ([]domain.Application, []string, bool, error)
}

// Deciders makes second decisions with the authorizer's engine: which of
// the account's applications the caller may read metrics of.
type Deciders interface {
	Decider(ctx context.Context, p apigw.Principal) (*access.Decider, error)
}

// Bounds of GET /v2/applications/metrics, which reads every application's
// chunks: at most MaxCollectionKeys chunk items (40 BatchGetItem calls of
// 100, in parallel) and at most MaxCollectionApps applications listed.
const (
	MaxCollectionKeys = 4000
	MaxCollectionApps = 1000
	appsPage          = 250
)

type handler struct {
	st  QueryStore
	dec Deciders
	log *slog.Logger
}

// NewHandler serves the metrics endpoints: GET /v2/applications/{id}/metrics,
// GET /v2/applications/metrics, GET /v2/address-sets/{id}/metrics and GET
// /v2/address-sets/metrics. The authorizer has allowed the route; the
// resource must be in the caller's account (404 otherwise).
func NewHandler(st QueryStore, dec Deciders, log *slog.Logger) http.Handler {
	h := &handler{st: st, dec: dec, log: log}
	mux := apigw.NewMux()
	mux.HandleFunc("GET /v2/applications/metrics", h.wrap(h.applications))
	mux.HandleFunc("GET /v2/applications/{id}/metrics", h.wrap(h.application))
	mux.HandleFunc("GET /v2/address-sets/metrics", h.wrap(h.account))
	mux.HandleFunc("GET /v2/address-sets/{id}/metrics", h.wrap(h.addressSet))
	return mux
}

type endpoint = apigw.Endpoint

func (h *handler) wrap(e endpoint) http.HandlerFunc { return apigw.HandleInAccount(h.log, e) }

func (h *handler) application(r *http.Request, p apigw.Principal) (int, any, error) {
	id, err := apigw.PathID(r, "id", "application")
	if err != nil {
		return 0, nil, err
	}
	return h.serve(r, FamilyApplication, ScopeApp(id), func(ctx context.Context) error {
		_, err := h.st.GetApplication(ctx, p.AccountID, id)
		if errors.Is(err, domain.ErrNotFound) {
			return domain.Errorf(domain.NotFound, "no application %q", id)
		}
		return err
	})
}

func (h *handler) addressSet(r *http.Request, p apigw.Principal) (int, any, error) {
	id, err := apigw.PathID(r, "id", "address set")
	if err != nil {
		return 0, nil, err
	}
	return h.serve(r, FamilyAddressSet, ScopeSet(id), func(ctx context.Context) error {
		_, err := h.st.GetAddressSetItem(ctx, p.AccountID, id)
		if errors.Is(err, domain.ErrNotFound) {
			return domain.Errorf(domain.NotFound, "no address set %q", id)
		}
		return err
	})
}

// applications is GET /v2/applications/metrics: the sum over the
// account's applications whose metrics the caller may read (GET
// /v2/applications/{id}/metrics, as a collection read shows only what the
// caller may GET). Application chunks are written per application (the
// edge names no account), so the sum is made here: the work grows with
// the applications, and a query whose chunk items over all of them pass
// MaxCollectionKeys is refused, naming the limit, before any is read.
func (h *handler) applications(r *http.Request, p apigw.Principal) (int, any, error) {
	now := h.st.Now()
	q, err := ParseQuery(r.URL.Query(), FamilyApplication, now)
	if err != nil {
		return 0, nil, apigw.BadRequest("%s", err.Error())
	}
	plan, err := q.Plan(now)
	if err != nil {
		return 0, nil, apigw.BadRequest("%s", err.Error())
	}
	perApp := len(plan.Keys(ScopeApp("x")))
	ctx := r.Context()
	var (
		d    *access.Decider
		apps []domain.Application
		g    errgroup.Group
	)
	g.Go(func() (err error) { d, err = h.dec.Decider(ctx, p); return err })
	g.Go(func() (err error) { apps, err = h.allApps(ctx, p.AccountID); return err })
	if err := g.Wait(); err != nil {
		return 0, nil, err
	}
	var keys []store.MetricChunkKey
	n := 0
	for _, a := range apps {
		ok, err := d.Allows(ctx, http.MethodGet, "/v2/applications/"+a.ID+"/metrics")
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			continue
		}
		n++
		if n*perApp > MaxCollectionKeys {
			return 0, nil, apigw.BadRequest("the account's applications would read more than %d stored items (MaxCollectionKeys, %d per application for this range and resolution): use summarize, a larger resolution or a shorter range", MaxCollectionKeys, perApp)
		}
		keys = append(keys, plan.Keys(ScopeApp(a.ID))...)
	}
	chunks, err := h.st.MetricChunks(ctx, keys)
	if err != nil {
		return 0, nil, err
	}
	return h.respond(plan.Evaluate(q.Defs, chunks))
}

// allApps lists the account's applications, at most MaxCollectionApps.
func (h *handler) allApps(ctx context.Context, account string) ([]domain.Application, error) {
	var (
		out   []domain.Application
		after string
	)
	for {
		page, pos, more, err := h.st.PageApplications(ctx, account, after, false, appsPage)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(out) > MaxCollectionApps {
			return nil, domain.Errorf(domain.Invalid, "the account has more than %d applications (MaxCollectionApps): read their metrics one by one at /v2/applications/{id}/metrics", MaxCollectionApps)
		}
		if !more || len(pos) == 0 {
			return out, nil
		}
		after = pos[len(pos)-1]
	}
}

func (h *handler) account(r *http.Request, p apigw.Principal) (int, any, error) {
	return h.serve(r, FamilyAddressSet, ScopeSetsOf(p.AccountID), nil)
}

// serve validates the query, then reads the chunks and checks that the
// resource is the caller's in parallel: one round trip of wall time. The
// data is used only when the check passed.
func (h *handler) serve(r *http.Request, f Family, scope string, owned func(context.Context) error) (int, any, error) {
	now := h.st.Now()
	q, err := ParseQuery(r.URL.Query(), f, now)
	if err != nil {
		return 0, nil, apigw.BadRequest("%s", err.Error())
	}
	plan, err := q.Plan(now)
	if err != nil {
		return 0, nil, apigw.BadRequest("%s", err.Error())
	}
	var (
		g       errgroup.Group // both answers are needed to choose the error
		chunks  map[store.MetricChunkKey]map[string]int64
		readErr error
	)
	ctx := r.Context()
	if owned != nil {
		g.Go(func() error { return owned(ctx) })
	}
	g.Go(func() error { chunks, readErr = h.st.MetricChunks(ctx, plan.Keys(scope)); return nil })
	if ownerErr := g.Wait(); ownerErr != nil {
		return 0, nil, ownerErr
	}
	if readErr != nil {
		return 0, nil, readErr
	}
	return h.respond(plan.Evaluate(q.Defs, chunks))
}

// respond renders a result. Map metrics make a point's size depend on the
// data: measured as the body travels in the Lambda payload, a response
// past the budget is refused, naming it, rather than failing at the
// gateway.
func (h *handler) respond(res Result) (int, any, error) {
	body, err := json.Marshal(res)
	if err != nil {
		return 0, nil, err
	}
	if n := apigw.EnvelopeLen(body); n > apigw.ResponseBudget {
		return 0, nil, domain.Errorf(domain.Invalid, "the response would be %d bytes; at most %d are returned (ResponseBudget): ask for fewer names, a larger resolution or a shorter range", n, apigw.ResponseBudget)
	}
	return http.StatusOK, json.RawMessage(body), nil
}
