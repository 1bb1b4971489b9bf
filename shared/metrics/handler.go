package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

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
}

type handler struct {
	st  QueryStore
	log *slog.Logger
}

// NewHandler serves the metrics endpoints: GET /v2/applications/{id}/metrics,
// GET /v2/address-sets/{id}/metrics and GET /v2/address-sets/metrics. The
// authorizer has allowed the route; the resource must be in the caller's
// account (404 otherwise).
func NewHandler(st QueryStore, log *slog.Logger) http.Handler {
	h := &handler{st: st, log: log}
	mux := apigw.NewMux()
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
			return apigw.NotFound("no application %q", id)
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
			return apigw.NotFound("no address set %q", id)
		}
		return err
	})
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
	// Map metrics make a point's size depend on the data: measured as the
	// body travels in the Lambda payload, a response past the budget is
	// refused, naming it, rather than failing at the gateway.
	body, err := json.Marshal(plan.Evaluate(q.Defs, chunks))
	if err != nil {
		return 0, nil, err
	}
	if n := apigw.EnvelopeLen(body); n > apigw.ResponseBudget {
		return 0, nil, apigw.BadRequest("the response would be %d bytes; at most %d are returned (ResponseBudget): ask for fewer names, a larger resolution or a shorter range", n, apigw.ResponseBudget)
	}
	return http.StatusOK, json.RawMessage(body), nil
}
