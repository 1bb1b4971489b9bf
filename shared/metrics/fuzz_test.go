package metrics_test

import (
	"net/url"
	"testing"
	"time"

	"cads/infra/fuzzkit"
	"cads/shared/metrics"
	"cads/shared/wire/addresssetswire"
	"cads/shared/wire/applicationswire"
	"cads/shared/wire/metricsapiwire"
)

// FuzzMetricsQuery sends fuzzed query strings to the three metrics routes,
// on an application and an address set that exist.
//
//	go test -run '^$' -fuzz '^FuzzMetricsQuery$' -fuzztime 20s ./shared/metrics
func FuzzMetricsQuery(f *testing.F) {
	const js = "application/json"
	apps := fuzzkit.New(f, applicationswire.Handler)
	app := apps.Create(f, fuzzkit.Route{Method: "POST", Resource: "/v2/applications", ContentType: js}, `{"name": "Fuzz metrics", "aliases": ["metrics.fuzz.example.com"]}`)
	set := apps.With(addresssetswire.Handler).Create(f, fuzzkit.Route{Method: "POST", Resource: "/v2/address-sets", ContentType: js},
		`{"name": "fuzz metrics", "type": "manual", "entries": [{"address": "198.51.100.0/24"}]}`)
	e := apps.With(metricsapiwire.Handler)
	e.Fuzz(f, []fuzzkit.Route{
		{Method: "GET", Resource: "/v2/applications/{id}/metrics", Params: map[string]string{"id": app}},
		{Method: "GET", Resource: "/v2/address-sets/metrics"},
		{Method: "GET", Resource: "/v2/address-sets/{id}/metrics", Params: map[string]string{"id": set}},
	})
}

// FuzzParseQuery checks the query parser alone, far faster than through
// the handler: it never panics, and what it accepts can be planned.
//
//	go test -run '^$' -fuzz '^FuzzParseQuery$' -fuzztime 20s ./shared/metrics
func FuzzParseQuery(f *testing.F) {
	now := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, family uint8, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		fam := []metrics.Family{metrics.FamilyApplication, metrics.FamilyAddressSet}[int(family)%2]
		q, err := metrics.ParseQuery(v, fam, now)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseQuery(%q): empty error", raw)
			}
			return
		}
		if !q.From.Before(q.To) {
			t.Fatalf("ParseQuery(%q) accepted from %v >= to %v", raw, q.From, q.To)
		}
		p, err := q.Plan(now)
		if err != nil {
			return
		}
		if p.Points < 1 || p.Points > metrics.MaxPoints || p.From >= p.To || p.Points*len(q.Defs) > metrics.MaxResponsePoints {
			t.Fatalf("ParseQuery(%q) planned %d points from %d to %d", raw, p.Points, p.From, p.To)
		}
		p.Evaluate(q.Defs, nil)
	})
}
