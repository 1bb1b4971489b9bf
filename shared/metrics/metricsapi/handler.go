package metricsapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/jsontext"
	"cads/shared/metrics"
	"cads/shared/routes"
	"cads/shared/store"
)

// QueryStore is what the metrics endpoints read.
type QueryStore struct {
	Now          func() time.Time
	Applications interface {
		GetApplication(ctx context.Context, account, id string) (domain.Application, error)
		PageApplications(ctx context.Context, account, after string, desc bool, n int) ([]domain.Application, []string, bool, error)
	}
	AddressSets interface {
		GetAddressSetItem(ctx context.Context, account, id string) (domain.AddressSet, error)
		PageAddressSets(ctx context.Context, account, after string, desc bool, n int) ([]domain.AddressSet, []string, bool, error)
	}
	Metrics interface {
		MetricChunks(ctx context.Context, keys []store.MetricChunkKey) (map[store.MetricChunkKey]map[string]int64, error)
	}
}

// NewQueryStore is a QueryStore over the table's repositories.
func NewQueryStore(st *store.Store) QueryStore {
	return QueryStore{Now: st.Now, Applications: st.Applications, AddressSets: st.AddressSets, Metrics: st.Metrics}
}

// Deciders makes second decisions with the authorizer's engine: which of
// the account's applications and address sets the caller may read
// metrics of.
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
}

// Bounds of the collection metrics: GET /v2/applications/metrics reads
// every readable application's chunks, GET /v2/address-sets/metrics the
// chunks of every set it must leave out; at most MaxCollectionKeys chunk
// items (40 BatchGetItem calls of 100, in parallel) and at most
// MaxCollectionApps applications or MaxCollectionSets sets listed.
const (
	MaxCollectionKeys = 4000
	MaxCollectionApps = 1000
	MaxCollectionSets = 1000
	appsPage          = 250
)

// unnamedSet is an id no generated id can be ('0' is not in the
// lower-case base32 alphabet of shared/ids): a decision on it is the
// decision for a set no permission names, such as a deleted one.
const unnamedSet = "0"

type handler struct {
	st  QueryStore
	dec Deciders
	log *slog.Logger
}

// NewHandler serves the metrics endpoints: GET /v2/applications/{id}/metrics,
// GET /v2/applications/metrics, GET /v2/address-sets/{id}/metrics and GET
// /v2/address-sets/metrics. The authorizer has allowed the route; the
// resource must be in the caller's account (404 otherwise).
func NewHandler(st QueryStore, dec Deciders, log *slog.Logger) *apigw.Router {
	h := &handler{st: st, dec: dec, log: log}
	mux := apigw.NewRouter(routes.Metrics)
	mux.HandleFunc("getApplicationsMetrics", h.wrap(h.applications))
	mux.HandleFunc("getApplicationsByIdMetrics", h.wrap(h.application))
	mux.HandleFunc("getAddressSetsMetrics", h.wrap(h.addressSets))
	mux.HandleFunc("getAddressSetsByIdMetrics", h.wrap(h.addressSet))
	return mux
}

type endpoint = apigw.Endpoint

func (h *handler) wrap(e endpoint) http.HandlerFunc { return apigw.HandleInAccount(h.log, e) }

func (h *handler) application(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := apigw.PathID(r, "id", "application")
	if err != nil {
		return 0, nil, err
	}
	return h.serve(r, metrics.FamilyApplication, metrics.ScopeApp(id), func(ctx context.Context) error {
		_, err := h.st.Applications.GetApplication(ctx, p.AccountID, id)
		if errors.Is(err, domain.ErrNotFound) {
			return domain.Errorf(domain.NotFound, "no application %q", id)
		}
		return err
	})
}

func (h *handler) addressSet(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := apigw.PathID(r, "id", "address set")
	if err != nil {
		return 0, nil, err
	}
	return h.serve(r, metrics.FamilyAddressSet, metrics.ScopeSet(id), func(ctx context.Context) error {
		_, err := h.st.AddressSets.GetAddressSetItem(ctx, p.AccountID, id)
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
func (h *handler) applications(r *http.Request, p caller.Principal) (int, any, error) {
	now := h.st.Now()
	q, err := metrics.ParseQuery(r.URL.Query(), metrics.FamilyApplication, now)
	if err != nil {
		return 0, nil, domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	plan, err := q.Plan(now)
	if err != nil {
		return 0, nil, domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	perApp := len(plan.Keys(metrics.ScopeApp("x")))
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
			return 0, nil, domain.Errorf(domain.Invalid, "the account's applications would read more than %d stored items (MaxCollectionKeys, %d per application for this range and resolution): use summarize, a larger resolution or a shorter range", MaxCollectionKeys, perApp)
		}
		keys = append(keys, plan.Keys(metrics.ScopeApp(a.ID))...)
	}
	chunks, err := h.st.Metrics.MetricChunks(ctx, keys)
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
		page, pos, more, err := h.st.Applications.PageApplications(ctx, account, after, false, appsPage)
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

// addressSets is GET /v2/address-sets/metrics: the account's address-set
// metrics without what the caller may not read, decided per set as for
// the applications (GET /v2/address-sets/{id}/metrics). Set events carry
// the account, so the aggregator keeps an account scope (every set, and
// the history of deleted ones); the sets are listed and decided in
// parallel with reading it. When the caller may read every set, that
// scope is the answer; when it may not read some, their chunks are read
// and subtracted. When it may not read a set no permission names
// (unnamedSet: a wildcard deny, or no permit on sets at all), the
// deleted sets' history cannot be shown either, and the answer is the
// sum over the sets it may read instead. The extra reads are bounded
// like the applications' sum.
func (h *handler) addressSets(r *http.Request, p caller.Principal) (int, any, error) {
	now := h.st.Now()
	q, err := metrics.ParseQuery(r.URL.Query(), metrics.FamilyAddressSet, now)
	if err != nil {
		return 0, nil, domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	plan, err := q.Plan(now)
	if err != nil {
		return 0, nil, domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	ctx := r.Context()
	var (
		d       *access.Decider
		sets    []domain.AddressSet
		total   map[store.MetricChunkKey]map[string]int64
		readErr error
		g       errgroup.Group
	)
	g.Go(func() (err error) { d, err = h.dec.Decider(ctx, p); return err })
	g.Go(func() (err error) { sets, err = h.allSets(ctx, p.AccountID); return err })
	// Read as the other two run; used only when every set is readable.
	g.Go(func() error {
		total, readErr = h.st.Metrics.MetricChunks(ctx, plan.Keys(metrics.ScopeSetsOf(p.AccountID)))
		return nil
	})
	if err := g.Wait(); err != nil {
		return 0, nil, err
	}
	if readErr != nil {
		return 0, nil, readErr
	}
	unnamed, err := d.Allows(ctx, http.MethodGet, setMetricsPath(unnamedSet))
	if err != nil {
		return 0, nil, err
	}
	var readable, hidden []string
	for _, s := range sets {
		ok, err := d.Allows(ctx, http.MethodGet, setMetricsPath(s.ID))
		if err != nil {
			return 0, nil, err
		}
		if ok {
			readable = append(readable, s.ID)
		} else {
			hidden = append(hidden, s.ID)
		}
	}
	switch {
	case unnamed && len(hidden) == 0:
		return h.respond(plan.Evaluate(q.Defs, total))
	case unnamed:
		parts, err := h.setChunks(ctx, plan, hidden)
		if err != nil {
			return 0, nil, err
		}
		return h.respond(plan.Evaluate(q.Defs, subtractSets(total, parts, metrics.ScopeSetsOf(p.AccountID))))
	default:
		parts, err := h.setChunks(ctx, plan, readable)
		if err != nil {
			return 0, nil, err
		}
		return h.respond(plan.Evaluate(q.Defs, parts)) // Evaluate adds chunks of any scope
	}
}

func setMetricsPath(id string) string { return "/v2/address-sets/" + id + "/metrics" }

// setChunks reads the plan's chunks of the sets ids, refusing before any
// read a query that would pass MaxCollectionKeys.
func (h *handler) setChunks(ctx context.Context, plan metrics.Plan, ids []string) (map[store.MetricChunkKey]map[string]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	perSet := len(plan.Keys(metrics.ScopeSet("x")))
	if len(ids)*perSet > MaxCollectionKeys {
		return nil, domain.Errorf(domain.Invalid, "the address sets to sum or leave out would read more than %d stored items (MaxCollectionKeys, %d per set for this range and resolution): use summarize, a larger resolution or a shorter range", MaxCollectionKeys, perSet)
	}
	keys := make([]store.MetricChunkKey, 0, len(ids)*perSet)
	for _, id := range ids {
		keys = append(keys, plan.Keys(metrics.ScopeSet(id))...)
	}
	return h.st.Metrics.MetricChunks(ctx, keys)
}

// subtractSets takes per-set chunks out of the account scope's. The two
// are written by one transaction but read by separate calls, so a read
// between two folds can see a set ahead of its account: an accumulator
// never goes below zero (address-set metrics are counts).
func subtractSets(total, parts map[store.MetricChunkKey]map[string]int64, scope string) map[store.MetricChunkKey]map[string]int64 {
	out := make(map[store.MetricChunkKey]map[string]int64, len(total))
	for k, attrs := range total {
		out[k] = maps.Clone(attrs)
	}
	for k, attrs := range parts {
		k.Scope = scope
		acc := out[k]
		if acc == nil {
			continue
		}
		for a, n := range attrs {
			if v := acc[a] - n; v > 0 {
				acc[a] = v
			} else {
				delete(acc, a)
			}
		}
	}
	return out
}

// allSets lists the account's address sets, at most MaxCollectionSets.
func (h *handler) allSets(ctx context.Context, account string) ([]domain.AddressSet, error) {
	var (
		out   []domain.AddressSet
		after string
	)
	for {
		page, pos, more, err := h.st.AddressSets.PageAddressSets(ctx, account, after, false, appsPage)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(out) > MaxCollectionSets {
			return nil, domain.Errorf(domain.Invalid, "the account has more than %d address sets (MaxCollectionSets): read their metrics one by one at /v2/address-sets/{id}/metrics", MaxCollectionSets)
		}
		if !more || len(pos) == 0 {
			return out, nil
		}
		after = pos[len(pos)-1]
	}
}

// serve validates the query, then reads the chunks and checks that the
// resource is the caller's in parallel: one round trip of wall time. The
// data is used only when the check passed.
func (h *handler) serve(r *http.Request, f metrics.Family, scope string, owned func(context.Context) error) (int, any, error) {
	now := h.st.Now()
	q, err := metrics.ParseQuery(r.URL.Query(), f, now)
	if err != nil {
		return 0, nil, domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	plan, err := q.Plan(now)
	if err != nil {
		return 0, nil, domain.Errorf(domain.Invalid, "%s", err.Error())
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
	g.Go(func() error { chunks, readErr = h.st.Metrics.MetricChunks(ctx, plan.Keys(scope)); return nil })
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
func (h *handler) respond(res metrics.Result) (int, any, error) {
	body, err := json.Marshal(res)
	if err != nil {
		return 0, nil, err
	}
	if n := jsontext.EnvelopeLen(body); n > jsontext.ResponseBudget {
		return 0, nil, domain.Errorf(domain.Invalid, "the response would be %d bytes; at most %d are returned (ResponseBudget): ask for fewer names, a larger resolution or a shorter range", n, jsontext.ResponseBudget)
	}
	return http.StatusOK, json.RawMessage(body), nil
}
