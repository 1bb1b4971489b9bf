package metrics

import (
	"fmt"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The metric names the API publishes, in its order (docs/metrics.md).
const specApplicationMetrics = `active_requests active_sessions avg_session_length bytes_in bytes_in_per_second bytes_out bytes_out_per_second cache_hits cache_misses cache_sources cdn_bytes_in cdn_bytes_out cdn_response_summary countries delivery_status edge_locations edge_response_time edge_response_types edge_status_codes edge_ttfb edge_useragent_device edge_useragent_name edge_useragent_os page_load_binned page_load_time page_views rejected_requests req_time requests requests_per_second response_time response_time_lower response_time_upper status_codes suspended_requests useragent_device useragent_name useragent_os waf_hits webcontrol_hits`

func TestDefinitionsAreExactlyTheSpecs(t *testing.T) {
	want := strings.Fields(specApplicationMetrics)
	if got := Names(FamilyApplication); !slices.Equal(got, want) {
		t.Errorf("application metrics:\n got %v\nwant %v", got, want)
	}
	if got := Names(FamilyAddressSet); !slices.Equal(got, []string{"entries_added", "entries_deleted", "entries_expired", "entries_extended"}) {
		t.Errorf("address set metrics: %v", got)
	}
	for _, d := range Definitions {
		if d.Doc == "" {
			t.Errorf("%s has no definition text", d.Name)
		}
	}
}

func TestCounterAndDistCodesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range counterCodes {
		if c == "" || seen[c] || strings.Contains(c, ".") {
			t.Errorf("counter code %q empty, repeated or dotted", c)
		}
		seen[c] = true
	}
	for _, c := range distCodes {
		if c == "" || seen[c] || strings.Contains(c, ".") {
			t.Errorf("distribution code %q empty, repeated or dotted", c)
		}
		seen[c] = true
	}
}

func TestParseQueryRefusals(t *testing.T) {
	now := time.Date(2026, 5, 9, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		query, want string
	}{
		{"", "names is required"},
		{"names=", "names is required"},
		{"names=requests,bogus", `unknown metric "bogus"`},
		{"names=requests,,bytes_in", "empty entry"},
		{"names=requests,requests", "listed twice"},
		{"names=entries_added", `unknown metric "entries_added"`}, // an address-set metric on an application
		{"names=requests&resolution=4", "at least 5"},
		{"names=requests&resolution=15", "multiple of 10"},
		{"names=requests&resolution=ten", "whole number"},
		{"names=requests&resolution=60&summarize=true", "mutually exclusive"},
		{"names=requests&summarize=maybe", "summarize must be"},
		{"names=requests&from=yesterday", "from must be an RFC 3339"},
		{"names=requests&to=2026-13-01T00:00:00Z", "to must be an RFC 3339"},
		{"names=requests&from=2026-05-09T12:00:00Z&to=2026-05-09T11:00:00Z", "must be before"},
		{"names=requests&from=2026-05-09T12:00:00Z&to=2026-05-09T12:00:00Z", "must be before"},
	}
	for _, c := range cases {
		q, _ := url.ParseQuery(c.query)
		_, err := ParseQuery(q, FamilyApplication, now)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.query, err, c.want)
		}
	}
	q, _ := url.ParseQuery("names=requests,status_codes&authorization=secret&resolution=60")
	got, err := ParseQuery(q, FamilyApplication, now)
	if err != nil || len(got.Defs) != 2 || got.Resolution != 60 || !got.To.Equal(now) || !got.From.Equal(now.Add(-time.Hour)) {
		t.Fatalf("defaults: %+v %v", got, err)
	}
}

func TestPlanChoosesTiersAndAligns(t *testing.T) {
	now := time.Date(2026, 5, 9, 12, 0, 7, 0, time.UTC)
	q := Query{From: now.Add(-time.Hour), To: now, Resolution: 60}
	p, err := q.Plan(now)
	if err != nil || p.Resolution != 60 || p.Points != 61 || p.From%60 != 0 || p.segments[0].tier != 1 {
		t.Fatalf("1 hour at 60 s: %+v %v", p, err)
	}
	// Default resolution: the last hour in 10-second points.
	p, _ = Query{From: now.Add(-time.Hour), To: now}.Plan(now)
	if p.Resolution != 10 || p.Points != 361 {
		t.Fatalf("default resolution: %+v", p)
	}
	// 30 days at one hour: the hourly tier, 60 chunks (in AppShards
	// write shards each).
	p, err = Query{From: now.Add(-30 * 24 * time.Hour), To: now, Resolution: 3600}.Plan(now)
	if err != nil || Tiers[p.segments[0].tier].Name != "h1" || len(p.Keys("app#a")) > 62*AppShards || len(p.Keys("set#a")) > 62 {
		t.Fatalf("30 days hourly: %+v %v (%d keys)", p, err, len(p.Keys("app#a")))
	}
	// 10-second data is gone after 2 days: a clear 400 naming what is kept.
	_, err = Query{From: now.Add(-5 * 24 * time.Hour), To: now, Resolution: 10}.Plan(now)
	if err == nil || !strings.Contains(err.Error(), "buckets of 60 seconds") {
		t.Fatalf("expired fine data: %v", err)
	}
	// Too many points.
	if _, err = (Query{From: now.Add(-30 * 24 * time.Hour), To: now, Resolution: 60}).Plan(now); err == nil || !strings.Contains(err.Error(), "points") {
		t.Fatalf("too many points: %v", err)
	}
}

func TestCoverIsExactAndUsesCoarseTiers(t *testing.T) {
	now := time.Date(2026, 5, 9, 12, 0, 0, 0, time.UTC)
	from := time.Date(2026, 4, 20, 7, 13, 20, 0, time.UTC)
	to := time.Date(2026, 5, 9, 11, 59, 50, 0, time.UTC)
	p, err := Query{From: from, To: to, Summarize: true}.Plan(now)
	if err != nil {
		t.Fatal(err)
	}
	// 19 days ago is beyond the 10-second tier: from is rounded to minutes.
	if p.From != time.Date(2026, 4, 20, 7, 13, 0, 0, time.UTC).Unix() || p.To != to.Unix() {
		t.Fatalf("range %d..%d", p.From, p.To)
	}
	pos := p.From
	tiers := map[string]bool{}
	for _, s := range p.segments {
		if s.start != pos {
			t.Fatalf("gap or overlap at %d: %+v", pos, p.segments)
		}
		pos = s.end
		tiers[Tiers[s.tier].Name] = true
	}
	if pos != p.To || !tiers["d1"] || !tiers["h1"] || !tiers["m1"] || !tiers["s10"] {
		t.Fatalf("segments %+v", p.segments)
	}
	// At most 20 chunks, each in its write shards.
	if n := len(p.Keys("app#a")); n > 20*AppShards {
		t.Fatalf("summarizing 19 days reads %d items", n)
	}
	if n := len(p.Keys("set#a")); n > 20 {
		t.Fatalf("summarizing 19 days of a set reads %d items", n)
	}
}

func TestHistogramQuantile(t *testing.T) {
	h := map[string]int64{}
	for _, ms := range []int64{1, 2, 3, 4, 7, 8, 9, 30, 40, 200} {
		h[responseBin(ms)]++
	}
	if q := histogramQuantile(h, 0.1); q < 0 || q > 5 {
		t.Errorf("p10 = %v", q)
	}
	if q := histogramQuantile(h, 0.9); q < 25 || q > 50 {
		t.Errorf("p90 = %v", q)
	}
	if histogramQuantile(nil, 0.5) != 0 {
		t.Error("empty histogram")
	}
}

// The log fields of docs/api.md#logs, which an access record carries under their names.
const specLogFields = `arrival bytes_in bytes_out cache_control cache_source completed country delivery_status elapsed internal_transport_latency labels load_id location proxy_address peer_address queue_latency range referrer request_address request_id request_method request_host request_port request_path request_protocol request_query request_url response_content_type server_address server_latency status_code session_id status_code_and_url threat tls_cipher tls_version ttfb useragent useragent_device useragent_name useragent_os webcontrols`

func TestRecordCarriesEveryLogField(t *testing.T) {
	tags := map[string]bool{}
	rt := reflect.TypeOf(Record{})
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		tags[name] = true
	}
	for _, f := range strings.Fields(specLogFields) {
		if !tags[f] {
			t.Errorf("Record has no field %q of the log fields", f)
		}
	}
}

// docs/metrics.md defines every metric with the text of its definition.
func TestDocsDefineEveryMetric(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[Kind]string{KindCount: "count", KindRate: "rate", KindAvg: "average", KindLevel: "level", KindDist: "map", KindQuantile: "quantile"}
	for _, d := range Definitions {
		row := fmt.Sprintf("| `%s` | %s | %s |", d.Name, kinds[d.Kind], d.Doc)
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/metrics.md lacks the row\n%s", row)
		}
	}
}

// TestPlanArithmeticIsBounded: resolutions and ranges at the edges of
// int64 are a 400-class error naming the limit, never a panic or a plan
// with a negative or huge number of points.
func TestPlanArithmeticIsBounded(t *testing.T) {
	now := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	all := strings.Join(Names(FamilyApplication), ",")
	for _, c := range []struct {
		q     url.Values
		limit string // "" : accepted
	}{
		{url.Values{"names": {"requests"}, "resolution": {"9223372036854773800"}}, "MaxResolution"},
		{url.Values{"names": {"requests"}, "resolution": {"9223372036854775800"}}, "MaxResolution"},
		{url.Values{"names": {"requests"}, "resolution": {fmt.Sprint(MaxResolution + 10)}}, "MaxResolution"},
		{url.Values{"names": {"requests"}, "resolution": {fmt.Sprint(MaxResolution)}}, ""},
		{url.Values{"names": {"requests"}, "resolution": {fmt.Sprint(MaxResolution)}, "from": {"2000-01-01T00:00:00Z"}, "to": {"9999-12-31T23:59:59Z"}}, "MaxChunks"},
		{url.Values{"names": {"requests"}, "from": {"2000-01-01T00:00:00Z"}, "to": {"9999-12-31T23:59:59Z"}}, "MaxChunks"},
		{url.Values{"names": {"requests"}, "resolution": {fmt.Sprint(MaxResolution)}, "from": {"2000-01-01T00:00:00Z"}, "to": {"2001-01-01T00:00:00Z"}}, ""},
		{url.Values{"names": {"requests"}, "summarize": {"true"}, "from": {"2000-01-01T00:00:00Z"}, "to": {"9999-12-31T23:59:59Z"}}, "at most"},
		{url.Values{"names": {"requests"}, "resolution": {"86400"}, "from": {"2000-01-01T00:00:00Z"}, "to": {"9999-12-31T23:59:59Z"}}, "MaxPoints"},
		{url.Values{"names": {all}, "resolution": {"10"}, "from": {"2026-10-01T05:00:00Z"}, "to": {"2026-10-01T12:00:00Z"}}, "MaxResponsePoints"},
		{url.Values{"names": {all}, "resolution": {"10"}, "from": {"2026-10-01T06:00:00Z"}, "to": {"2026-10-01T12:00:00Z"}}, ""},
	} {
		q, err := ParseQuery(c.q, FamilyApplication, now)
		var p Plan
		if err == nil {
			p, err = q.Plan(now)
		}
		switch {
		case c.limit == "" && err != nil:
			t.Errorf("%v: %v", c.q, err)
		case c.limit != "" && (err == nil || !strings.Contains(err.Error(), c.limit)):
			t.Errorf("%v: %v, want an error naming %s", c.q, err, c.limit)
		case err == nil:
			if p.Points < 1 || p.Points > MaxPoints || p.From >= p.To || p.Points*len(q.Defs) > MaxResponsePoints {
				t.Errorf("%v: plan %+v", c.q, p)
			}
			p.Evaluate(q.Defs, nil)
		}
	}
}
