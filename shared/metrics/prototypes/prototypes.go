// Package prototypes serves /v2/metric-prototypes for the metrics
// function: the definitions of custom metrics (which log type they read,
// the expression computing their value, an optional filter and grouping),
// kept per account. A prototype is written once and deleted; there is no
// PATCH. docs/metrics.md, Metric prototypes.
//
// It is a package of its own because it checks filters and attribute
// names against the log schemas (shared/logs), which themselves build on
// shared/metrics.
package prototypes

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/jsontext"
	"cads/shared/logs"
	"cads/shared/store"
)

// Store is what the metric prototype endpoints read and write.
type Store interface {
	Now() time.Time
	CreateMetricPrototype(ctx context.Context, p domain.MetricPrototype) error
	GetMetricPrototype(ctx context.Context, account, id string) (domain.MetricPrototype, error)
	PageMetricPrototypes(ctx context.Context, account, after string, desc bool, n int) ([]domain.MetricPrototype, []string, bool, error)
	DeleteMetricPrototype(ctx context.Context, account, id string) (domain.MetricPrototype, error)
}

// Deciders makes second decisions with the authorizer's engine (a listing
// shows only what the caller may GET: docs/api.md#collection-reads).
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
}

// Limits. default_name's are the reference document's; the others bound
// what one item holds (docs/metrics.md, Metric prototypes).
const (
	MaxName        = 50
	MaxDescription = 1000
	MaxExpression  = 1000
	// Frequencies in seconds: the metrics' finest resolution up to a day.
	MinFrequency     = 5
	MaxFrequency     = 86400
	DefaultFrequency = 60
)

// LogTypes maps a prototype's log_type to the log type whose records it
// reads (docs/logs.md).
var LogTypes = map[string]string{
	"proxy-logs":  logs.TypeAccess,
	"cdn-logs":    logs.TypeCDN,
	"pageviews":   logs.TypePageviews,
	"csp-reports": logs.TypeCSPReports,
}

var nameRE = regexp.MustCompile(`^[a-z0-9_-]+$`)

// Href is a prototype's href.
func Href(id string) string { return "/v2/metric-prototypes/" + id }

// Prototype is the wire shape of a metric prototype.
type Prototype struct {
	ID               string    `json:"id"`
	Href             string    `json:"href"`
	DefaultName      string    `json:"default_name"`
	Display          string    `json:"display"`
	Description      string    `json:"description,omitempty"`
	Expression       string    `json:"expression"`
	Filter           *string   `json:"filter"`
	GroupBy          string    `json:"group_by,omitempty"`
	LogType          string    `json:"log_type"`
	DefaultFrequency int       `json:"default_frequency"`
	Created          time.Time `json:"created"`
	// CreatedBy is the href of the principal that created it, as every
	// reference between resources is an href here.
	CreatedBy string `json:"created_by,omitempty"`
}

func out(p domain.MetricPrototype) Prototype {
	return Prototype{ID: p.ID, Href: Href(p.ID), DefaultName: p.DefaultName, Display: p.Display, Description: p.Description,
		Expression: p.Expression, Filter: p.Filter, GroupBy: p.GroupBy, LogType: p.LogType, DefaultFrequency: p.DefaultFrequency,
		Created: p.Created, CreatedBy: p.CreatedBy}
}

// post is the body of POST /v2/metric-prototypes.
type post struct {
	DefaultName      *string `json:"default_name"`
	Display          *string `json:"display"`
	Description      *string `json:"description"`
	Expression       *string `json:"expression"`
	Filter           *string `json:"filter"`
	GroupBy          *string `json:"group_by"`
	LogType          *string `json:"log_type"`
	DefaultFrequency *int    `json:"default_frequency"`
}

func text(field, s string, max int) error {
	if err := jsontext.CheckText(field, s); err != nil {
		return err
	}
	if utf8.RuneCountInString(s) > max {
		return domain.Errorf(domain.Invalid, "%s: at most %d characters", field, max)
	}
	return nil
}

func name(field, s string) error {
	if s == "" || len(s) > MaxName || !nameRE.MatchString(s) {
		return domain.Errorf(domain.Invalid, "%s must be 1 to %d characters of a-z, 0-9, - and _", field, MaxName)
	}
	return nil
}

func logTypeNames() string { return "cdn-logs, csp-reports, pageviews or proxy-logs" }

// build validates a POST body into the stored form (without id, account
// and creation fields).
func (in post) build() (domain.MetricPrototype, error) {
	var p domain.MetricPrototype
	if in.DefaultName == nil {
		return p, domain.Errorf(domain.Invalid, "default_name is required: 1 to %d characters of a-z, 0-9, - and _", MaxName)
	}
	if err := name("default_name", *in.DefaultName); err != nil {
		return p, err
	}
	p.DefaultName, p.Display = *in.DefaultName, *in.DefaultName
	if in.Display != nil {
		if err := name("display", *in.Display); err != nil {
			return p, err
		}
		p.Display = *in.Display
	}
	if in.Description != nil {
		if err := text("description", *in.Description, MaxDescription); err != nil {
			return p, err
		}
		p.Description = *in.Description
	}
	if in.LogType == nil {
		return p, domain.Errorf(domain.Invalid, "log_type is required: %s", logTypeNames())
	}
	typ, ok := LogTypes[*in.LogType]
	if !ok {
		return p, domain.Errorf(domain.Invalid, "log_type must be %s, not %q", logTypeNames(), *in.LogType)
	}
	p.LogType = *in.LogType
	schema, _ := logs.SchemaOf(typ)
	if in.Expression == nil || strings.TrimSpace(*in.Expression) == "" {
		return p, domain.Errorf(domain.Invalid, "expression is required: the computation of the metric's value, 1 to %d characters", MaxExpression)
	}
	if err := text("expression", *in.Expression, MaxExpression); err != nil {
		return p, err
	}
	p.Expression = *in.Expression
	if in.Filter != nil {
		f := *in.Filter
		if strings.TrimSpace(f) == "" {
			return p, domain.Errorf(domain.Invalid, "filter is empty; send null or leave it out for a metric over every record")
		}
		if err := text("filter", f, logs.MaxFilterLen); err != nil {
			return p, err
		}
		if _, err := logs.ParseFilter(f, schema); err != nil {
			return p, domain.Errorf(domain.Invalid, "filter (over %s records): %s", p.LogType, err.Error())
		}
		p.Filter = &f
	}
	if in.GroupBy != nil {
		g := *in.GroupBy
		f, ok := schema.Field(g)
		if !ok || f.Kind != logs.KindString {
			return p, domain.Errorf(domain.Invalid, "group_by must name a string attribute of %s records (%s), not %q", p.LogType, strings.Join(stringFields(schema), ", "), g)
		}
		p.GroupBy = g
	}
	p.DefaultFrequency = DefaultFrequency
	if in.DefaultFrequency != nil {
		if *in.DefaultFrequency < MinFrequency || *in.DefaultFrequency > MaxFrequency {
			return p, domain.Errorf(domain.Invalid, "default_frequency must be a number of seconds from %d to %d", MinFrequency, MaxFrequency)
		}
		p.DefaultFrequency = *in.DefaultFrequency
	}
	return p, nil
}

func stringFields(s *logs.Schema) []string {
	var out []string
	for _, f := range s.Fields {
		if f.Kind == logs.KindString {
			out = append(out, f.Name)
		}
	}
	return out
}

type handler struct {
	st  Store
	dec Deciders
	log *slog.Logger
}

// Register serves the metric prototype operations on mux, the metrics
// function's router.
func Register(mux *apigw.Router, st Store, dec Deciders, log *slog.Logger) {
	h := &handler{st: st, dec: dec, log: log}
	mux.HandleFunc("getMetricPrototypes", apigw.HandleInAccount(log, h.list))
	mux.HandleFunc("postMetricPrototypes", apigw.HandleInAccount(log, h.create))
	mux.HandleFunc("getMetricPrototypesById", apigw.HandleInAccount(log, h.get))
	mux.HandleFunc("deleteMetricPrototypesById", apigw.HandleInAccount(log, h.delete))
}

func protoID(r *http.Request) (string, error) { return apigw.PathID(r, "id", "metric prototype") }

// list is GET /v2/metric-prototypes: the account's prototypes the caller
// may GET, paged in the store in creation order (apigw.List).
func (h *handler) list(r *http.Request, p caller.Principal) (int, any, error) {
	page, err := apigw.ParsePage(r.URL.Query(), "default_name", "log_type", "created")
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[domain.MetricPrototype, Prototype]{
		Name: "metric-prototypes", Indexed: "created", ValidPosition: store.ValidPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.MetricPrototype, []string, bool, error) {
			return h.st.PageMetricPrototypes(ctx, p.AccountID, after, desc, n)
		},
		Allow: func(ctx context.Context) (func(domain.MetricPrototype) (bool, error), error) {
			d, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			return func(x domain.MetricPrototype) (bool, error) { return d.Allows(ctx, http.MethodGet, Href(x.ID)) }, nil
		},
		Out: func(x domain.MetricPrototype) (Prototype, error) { return out(x), nil },
		Sort: func(ps []Prototype, order []apigw.OrderKey) {
			apigw.Sort(ps, order, func(x Prototype, field string) any {
				switch field {
				case "default_name":
					return x.DefaultName
				case "log_type":
					return x.LogType
				}
				return x.Created
			}, func(x Prototype) string { return x.ID }, apigw.OrderKey{Field: "created"})
		},
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func (h *handler) create(r *http.Request, p caller.Principal) (int, any, error) {
	var in post
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	x, err := in.build()
	if err != nil {
		return 0, nil, err
	}
	x.ID, x.Account, x.Created, x.CreatedBy = ids.New(), p.AccountID, h.st.Now(), actor(p)
	if err := h.st.CreateMetricPrototype(r.Context(), x); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, tagged(x), nil
}

// tagged is a prototype's body with its ETag. Prototypes are never
// changed, so every one stays at version 0 (docs/api.md#conditional-requests).
func tagged(x domain.MetricPrototype) *apigw.Tagged {
	return apigw.WithETag(out(x), etag.Of("metricprototype", x.Account+"/"+x.ID, 0))
}

// actor is the href of the principal making the request.
func actor(p caller.Principal) string {
	if p.Kind == "service_user" {
		return "/v2/accounts/" + p.AccountID + "/service-users/" + p.ID
	}
	return "/v2/users/" + p.ID
}

func (h *handler) get(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := protoID(r)
	if err != nil {
		return 0, nil, err
	}
	x, err := h.st.GetMetricPrototype(r.Context(), p.AccountID, id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no metric prototype %q", id)
	}
	return http.StatusOK, tagged(x), nil
}

func (h *handler) delete(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := protoID(r)
	if err != nil {
		return 0, nil, err
	}
	// The one version a prototype has is 0: an If-Match naming any other
	// (or another resource only) fails without a write.
	versions, err := apigw.IfMatch(r).WriteVersions("metricprototype", p.AccountID+"/"+id)
	if err != nil {
		return 0, nil, err
	}
	if versions != nil && !slices.Contains(versions, 0) {
		return 0, nil, domain.ErrStale
	}
	x, err := h.st.DeleteMetricPrototype(r.Context(), p.AccountID, id)
	if errors.Is(err, domain.ErrNotFound) {
		return 0, nil, domain.Errorf(domain.NotFound, "no metric prototype %q", id)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out(x), nil
}
