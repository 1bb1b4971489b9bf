package logs_test

import (
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/bootstrap"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/wire"
	"cads/shared/wire/aggregatorwire"
	"cads/shared/wire/logswire"
)

type env struct {
	t    *testing.T
	d    testenv.Dynamo
	deps wire.Deps
	h    apigw.ProxyHandler
	op   caller.Principal
	app  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, d: testenv.NewDynamo(t)}
	e.deps = wire.New(slog.New(slog.NewTextHandler(io.Discard, nil)), e.d.Client, e.d.Table)
	// The round trips counted here are the family's own; the cost tour
	// counts them with the audit trail's (docs/performance.md).
	e.deps.Audit = nil
	ctx := context.Background()
	res, err := bootstrap.Run(ctx, e.deps.Store, "operator@example.com")
	if err != nil {
		t.Fatal(err)
	}
	e.op = caller.Principal{ID: res.Operator, Kind: "user", Email: "operator@example.com", AccountID: res.RootAccount, KeyID: res.KeyID}
	e.app = ids.New()
	now := e.deps.Store.Now()
	if err := e.deps.Store.Applications.CreateApplication(ctx, domain.Application{ID: e.app, Account: res.RootAccount, State: "stopped", Config: "{}", Version: 1, Created: now, Updated: now}, domain.Quota{}); err != nil {
		t.Fatal(err)
	}
	e.h = logswire.Handler(e.deps)
	return e
}

type reply struct {
	status int
	raw    string
	ct     string
	doc    struct {
		From  string `json:"from"`
		To    string `json:"to"`
		Group struct {
			Fields []string `json:"fields"`
			Result [][]any  `json:"result"`
		} `json:"group"`
		Records struct {
			Count  int      `json:"count"`
			Fields []string `json:"fields"`
			Result [][]any  `json:"result"`
			Start  int      `json:"start"`
			Next   *int     `json:"next"`
		} `json:"records"`
	}
}

func (e *env) call(p caller.Principal, method, path string, q url.Values, body string) reply {
	e.t.Helper()
	if method == "GET" && q.Get("format") != "csv" && !q.Has("rows") {
		// These tests read rows as arrays; rows_test.go covers the
		// default, objects.
		q = maps.Clone(q)
		if q == nil {
			q = url.Values{}
		}
		q.Set("rows", "arrays")
	}
	req := events.APIGatewayProxyRequest{HTTPMethod: method, Path: path, Resource: "/v2/applications/{id}/logs", Body: body,
		Headers: map[string]string{"Host": "api.local", "Content-Type": "application/json"}, MultiValueHeaders: map[string][]string{"Host": {"api.local"}, "Content-Type": {"application/json"}},
		PathParameters: pathParams(path),
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req-1", Stage: "api", HTTPMethod: method, Authorizer: p.Context()}}
	if !utf8.ValidString(body) {
		// JSON is one of the API's binary media types: the gateway passes
		// the bytes as sent, base64-encoded.
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(body)), true
	}
	if len(q) > 0 {
		req.QueryStringParameters, req.MultiValueQueryStringParameters = map[string]string{}, map[string][]string{}
		for k, v := range q {
			req.QueryStringParameters[k] = v[0]
			req.MultiValueQueryStringParameters[k] = v
		}
	}
	resp, err := e.h(context.Background(), req)
	if err != nil {
		e.t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, raw: resp.Body, ct: resp.Headers["Content-Type"]}
	if v := resp.MultiValueHeaders["Content-Type"]; len(v) > 0 {
		r.ct = v[0]
	}
	if resp.StatusCode == 200 && strings.HasPrefix(resp.Body, "{") && (method != "GET" || q.Get("rows") == "arrays") {
		if err := json.Unmarshal([]byte(resp.Body), &r.doc); err != nil {
			e.t.Fatalf("%s: %v", resp.Body, err)
		}
	}
	return r
}

// pathParams are the parameters API Gateway would pass for path: {id}
// (the fourth segment), and {log_type} on an archive's path.
func pathParams(path string) map[string]string {
	seg := strings.Split(path, "/")
	out := map[string]string{}
	if strings.HasPrefix(path, "/v2/archived-logs/applications/") && len(seg) == 6 {
		out["id"], out["log_type"] = seg[4], seg[5]
	} else if len(seg) > 3 {
		out["id"] = seg[3]
	}
	return out
}

func (e *env) get(q url.Values) reply {
	e.t.Helper()
	return e.call(e.op, "GET", "/v2/applications/"+e.app+"/logs", q, "")
}

func (e *env) wantError(r reply, status int, contains string) {
	e.t.Helper()
	var b apigw.Body
	_ = json.Unmarshal([]byte(r.raw), &b)
	if r.status != status || b.Status != status || !strings.Contains(b.Error.Message, contains) {
		e.t.Fatalf("got %d %s, want %d containing %q", r.status, r.raw, status, contains)
	}
}

// gen is one generated access record, kept for the brute-force checks.
type gen struct {
	ID      string  `json:"request_id"`
	Arrival string  `json:"arrival"`
	Status  float64 `json:"status_code"`
	Method  string  `json:"request_method"`
	Path    string  `json:"request_path"`
	Bytes   float64 `json:"bytes_out"`
	Elapsed float64 `json:"elapsed"`
	Country string  `json:"country,omitempty"`
	App     string  `json:"app"`
	Type    string  `json:"type,omitempty"`
}

// ingest sends records through the aggregator, as the metrics queue does.
func (e *env) ingest(batch string, recs ...any) {
	e.t.Helper()
	body, err := json.Marshal(map[string]any{"batch": batch, "records": recs})
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := aggregatorwire.Handler(e.deps)(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-" + batch, Body: string(body)}}})
	if err != nil || len(resp.BatchItemFailures) > 0 {
		e.t.Fatalf("aggregator: %v %v", err, resp)
	}
}

func generate(app string, from time.Time, n int) []gen {
	methods := []string{"GET", "POST", "HEAD"}
	statuses := []float64{200, 200, 200, 304, 404, 500}
	out := make([]gen, n)
	for i := range out {
		out[i] = gen{ID: fmt.Sprintf("r%04d", i), App: app,
			Arrival: from.Add(time.Duration(i) * 31 * time.Second).Format(time.RFC3339Nano),
			Status:  statuses[i%len(statuses)], Method: methods[i%len(methods)], Path: fmt.Sprintf("/p/%d", i%7),
			Bytes: float64(100 + i*13%997), Elapsed: float64(i%50) / 4}
		if i%5 != 0 {
			out[i].Country = []string{"DE", "US", "FR"}[i%3]
		}
	}
	return out
}

func TestLogsQueryPagingFilterGrouping(t *testing.T) {
	e := newEnv(t)
	from := e.deps.Store.Now().Add(-3 * time.Hour).Truncate(time.Hour).Add(17 * time.Minute)
	recs := generate(e.app, from, 300) // about 2.6 hours: three or four partitions
	other := generate(ids.New(), from, 5)
	batch := make([]any, 0, len(recs)+8)
	for i := range recs {
		batch = append(batch, recs[i])
	}
	for i := range other {
		batch = append(batch, other[i]) // another application: never seen
	}
	batch = append(batch,
		map[string]any{"type": "sessions", "app": e.app, "time": from.Format(time.RFC3339), "active": 3},
		map[string]any{"type": "pageview", "app": e.app, "arrival": from.Format(time.RFC3339), "page_load_time": 900, "country": "DE"},
		map[string]any{"app": e.app, "arrival": from.Add(-40 * 24 * time.Hour).Format(time.RFC3339)}, // past retention
	)
	e.ingest("b1", batch[:150]...)
	e.ingest("b2", batch[150:]...)
	e.ingest("b2", batch[150:]...) // redelivered: the same records, not copies

	rangeQ := func(extra ...string) url.Values {
		q := url.Values{"from": {from.Format(time.RFC3339)}, "to": {from.Add(4 * time.Hour).Format(time.RFC3339)}}
		for i := 0; i < len(extra); i += 2 {
			q.Set(extra[i], extra[i+1])
		}
		return q
	}

	// Paging with next returns every record exactly once, in time order.
	t.Run("paging", func(t *testing.T) {
		var got []string
		start := 1
		for pages := 0; ; pages++ {
			r := e.get(rangeQ("select", "request_id,arrival", "limit", "70", "start", fmt.Sprint(start)))
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			if r.doc.Records.Start != start || r.doc.Records.Count != len(r.doc.Records.Result) || !slices.Equal(r.doc.Records.Fields, []string{"request_id", "arrival"}) {
				t.Fatalf("page header: %+v", r.doc.Records)
			}
			for _, row := range r.doc.Records.Result {
				got = append(got, row[0].(string))
			}
			if r.doc.Records.Next == nil {
				break
			}
			start = *r.doc.Records.Next
		}
		want := make([]string, len(recs))
		for i, g := range recs {
			want[i] = g.ID
		}
		if !slices.Equal(got, want) {
			t.Fatalf("paged %d records, want the %d generated once each in order", len(got), len(want))
		}
		// Newest first.
		r := e.get(rangeQ("select", "request_id", "order", "-arrival", "limit", "3"))
		if r.status != 200 || r.doc.Records.Result[0][0] != recs[len(recs)-1].ID || r.doc.Records.Result[2][0] != recs[len(recs)-3].ID {
			t.Fatalf("descending: %s", r.raw)
		}
	})

	t.Run("filter", func(t *testing.T) {
		filter := `(status_code >= 400 or country is null) and request_method in (GET, HEAD) and request_path != "/p/3"`
		var want []string
		for _, g := range recs {
			if (g.Status >= 400 || g.Country == "") && (g.Method == "GET" || g.Method == "HEAD") && g.Path != "/p/3" {
				want = append(want, g.ID)
			}
		}
		var got []string
		start := 1
		for {
			r := e.get(rangeQ("select", "request_id", "filter", filter, "limit", "9", "start", fmt.Sprint(start)))
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			for _, row := range r.doc.Records.Result {
				got = append(got, row[0].(string))
			}
			if r.doc.Records.Next == nil {
				break
			}
			start = *r.doc.Records.Next
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("filter returned %v, brute force %v", got, want)
		}
	})

	t.Run("grouping", func(t *testing.T) {
		r := e.get(rangeQ("groupby", "status_code", "groupselect", "count,sum(bytes_out),min(elapsed),max(elapsed),avg(bytes_out)", "filter", "request_method != POST"))
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		type acc struct{ n, sum, min, max float64 }
		brute := map[float64]*acc{}
		for _, g := range recs {
			if g.Method == "POST" {
				continue
			}
			a := brute[g.Status]
			if a == nil {
				a = &acc{min: math.Inf(1), max: math.Inf(-1)}
				brute[g.Status] = a
			}
			a.n++
			a.sum += g.Bytes
			a.min, a.max = math.Min(a.min, g.Elapsed), math.Max(a.max, g.Elapsed)
		}
		if !slices.Equal(r.doc.Group.Fields, []string{"status_code", "count", "sum(bytes_out)", "min(elapsed)", "max(elapsed)", "avg(bytes_out)"}) || len(r.doc.Group.Result) != len(brute) {
			t.Fatalf("groups: %s", r.raw)
		}
		prev := -1.0
		for _, row := range r.doc.Group.Result {
			a := brute[row[0].(float64)]
			if a == nil || row[1] != a.n || row[2] != a.sum || row[3] != a.min || row[4] != a.max || math.Abs(row[5].(float64)-a.sum/a.n) > 1e-9 || row[0].(float64) <= prev {
				t.Fatalf("group %v, brute force %+v", row, a)
			}
			prev = row[0].(float64)
		}

		// interval(n) with a second level, filters with other, order and limit.
		r = e.get(rangeQ("groupby", "interval(1800),request_method", "groupfilters", "status_code in (200, 304),other", "grouporder", "-count", "grouplimit", "200"))
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		counts := map[string]float64{}
		for _, g := range recs {
			at, _ := time.Parse(time.RFC3339Nano, g.Arrival)
			slot := from.Add(at.Sub(from) / (30 * time.Minute) * (30 * time.Minute)).Format(time.RFC3339Nano)
			f := "other"
			if g.Status == 200 || g.Status == 304 {
				f = "status_code in (200, 304)"
			}
			counts[slot+"|"+g.Method+"|"+f]++
		}
		if len(r.doc.Group.Result) != len(counts) {
			t.Fatalf("%d groups, brute force %d: %s", len(r.doc.Group.Result), len(counts), r.raw)
		}
		last := math.Inf(1)
		for _, row := range r.doc.Group.Result {
			k := fmt.Sprintf("%s|%s|%s", row[0], row[1], row[2])
			if counts[k] != row[3] || row[3].(float64) > last {
				t.Fatalf("group %v: brute force %v (order -count)", row, counts[k])
			}
			last = row[3].(float64)
		}
		r = e.get(rangeQ("groupby", "request_method", "grouplimit", "2"))
		if len(r.doc.Group.Result) != 2 || r.doc.Group.Result[0][0] != "GET" || r.doc.Group.Result[1][0] != "HEAD" {
			t.Fatalf("grouplimit: %s", r.raw)
		}
	})

	t.Run("types", func(t *testing.T) {
		r := e.get(rangeQ("type", "pageviews"))
		if r.status != 200 || r.doc.Records.Count != 1 || r.doc.Records.Result[0][1] != 900.0 {
			t.Fatalf("pageviews: %s", r.raw)
		}
		if r := e.get(rangeQ("type", "csp-reports")); r.status != 200 || r.doc.Records.Count != 0 {
			t.Fatalf("csp-reports: %s", r.raw)
		}
	})

	// Two writes overlapping in time (cdn records, alternate seconds): pages
	// still hold every record exactly once.
	t.Run("overlapping writes", func(t *testing.T) {
		var a, b []any
		want := map[string]bool{}
		for i := range 60 {
			r := map[string]any{"type": "cdn", "app": e.app, "request_id": fmt.Sprintf("c%02d", i), "arrival": from.Add(time.Duration(i) * time.Second).Format(time.RFC3339)}
			want[r["request_id"].(string)] = true
			if i%2 == 0 {
				a = append(a, r)
			} else {
				b = append(b, r)
			}
		}
		e.ingest("b3", a...)
		e.ingest("b4", b...)
		seen := map[string]bool{}
		start := 1
		for {
			r := e.get(rangeQ("type", "cdn", "select", "request_id", "limit", "7", "start", fmt.Sprint(start)))
			for _, row := range r.doc.Records.Result {
				id := row[0].(string)
				if seen[id] || !want[id] {
					t.Fatalf("%s twice or unexpected", id)
				}
				seen[id] = true
			}
			if r.doc.Records.Next == nil {
				break
			}
			start = *r.doc.Records.Next
		}
		if len(seen) != len(want) {
			t.Fatalf("paged %d of %d records", len(seen), len(want))
		}
	})

	t.Run("csv", func(t *testing.T) {
		r := e.get(rangeQ("format", "csv", "select", "request_id,status_code,country", "limit", "1000"))
		if r.status != 200 || !strings.HasPrefix(r.ct, "text/csv") {
			t.Fatalf("%d %s %s", r.status, r.ct, r.raw)
		}
		rows, err := csv.NewReader(strings.NewReader(r.raw)).ReadAll()
		if err != nil || len(rows) != len(recs)+1 || !slices.Equal(rows[0], []string{"request_id", "status_code", "country"}) {
			t.Fatalf("csv: %v %d rows", err, len(rows))
		}
		if rows[1][0] != recs[0].ID || rows[1][1] != "200" || rows[1][2] != "" {
			t.Fatalf("first row %v", rows[1])
		}
	})

	t.Run("round trips", func(t *testing.T) {
		// The read of the application alongside the hour index Query, then
		// one Query per partition the index names, in order, stopping at
		// the partition holding the last record needed.
		q := url.Values{"from": {from.Format(time.RFC3339)}, "to": {from.Add(30 * time.Minute).Format(time.RFC3339)}, "limit": {"10"}}
		// The ownership GetItem runs alongside the index Query: the delay
		// makes that overlap certain, so Sequential counts waves.
		e.d.Counter.SetDelay(25 * time.Millisecond)
		defer e.d.Counter.SetDelay(0)
		e.d.Counter.Reset()
		if r := e.get(q); r.status != 200 || r.doc.Records.Count != 10 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		if total, seq := e.d.Counter.Total(), e.d.Counter.Sequential(); total != 3 || seq != 2 {
			t.Fatalf("one-partition page: %d round trips (%d sequential), want 3 (2 sequential: application and index, then the partition)", total, seq)
		}
		q.Set("to", from.Add(4*time.Hour).Format(time.RFC3339))
		q.Set("limit", "200")
		e.d.Counter.Reset()
		if r := e.get(q); r.status != 200 || r.doc.Records.Count != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		t.Logf("200 records over a 4-hour range: %d round trips (%d sequential), by operation %v", e.d.Counter.Total(), e.d.Counter.Sequential(), e.d.Counter.ByOperation())
		if total, seq := e.d.Counter.Total(), e.d.Counter.Sequential(); total > 2+4 || seq > 1+4 {
			t.Fatalf("%d round trips (%d sequential), want at most one per partition plus the application and the index (one wave)", total, seq)
		}
	})

	t.Run("errors", func(t *testing.T) {
		e.wantError(e.get(rangeQ("select", "request_id,nosuch")), 400, `unknown field "nosuch"`)
		e.wantError(e.get(rangeQ("filter", "status_code = 200 and")), 400, "at position 22: expected an attribute name")
		e.wantError(e.get(rangeQ("limit", "201")), 400, "limit")
		e.wantError(e.get(rangeQ("type", "proxy")), 400, "type")
		e.wantError(e.get(rangeQ("order", "status_code")), 400, "order")
		e.wantError(e.get(rangeQ("grouplimit", "5")), 400, "needs groupby")
		e.wantError(e.get(rangeQ("groupby", "status_code,country")), 400, "interval")
		e.wantError(e.get(rangeQ("groupby", "country", "groupselect", "sum(country)")), 400, "numeric")
		e.wantError(e.get(url.Values{"from": {"2026-01-01"}}), 400, "from")
		e.wantError(e.get(url.Values{"from": {"2026-01-01T00:00:00Z"}, "to": {"2026-03-01T00:00:00Z"}}), 400, "at most 744")
		stranger := e.op
		stranger.AccountID = ids.New()
		e.wantError(e.call(stranger, "GET", "/v2/applications/"+e.app+"/logs", nil, ""), 404, "no application")
		e.wantError(e.call(e.op, "GET", "/v2/applications/"+ids.New()+"/logs", nil, ""), 404, "no application")
	})
}

func TestCustomLogs(t *testing.T) {
	e := newEnv(t)
	now := e.deps.Store.Now()
	post := func(body string, q url.Values) reply {
		return e.call(e.op, "POST", "/v2/applications/"+e.app+"/logs", q, body)
	}
	one := fmt.Sprintf(`{"created":%q,"stream":"app","message":"started, \"ok\"","address":"10.0.0.1","filename":"/var/log/app.log","hostname":"web-1"}`, now.Add(-time.Minute).Format(time.RFC3339))
	r := post(one, nil)
	var idsOne []string
	if r.status != 200 || json.Unmarshal([]byte(r.raw), &idsOne) != nil || len(idsOne) != 1 {
		t.Fatalf("one: %d %s", r.status, r.raw)
	}
	two := fmt.Sprintf(`[{"created":%q,"stream":"worker","message":"boom","address":"10.0.0.0/24","filename":"w.log","hostname":"web-2"},%s]`, now.Add(-2*time.Minute).Format(time.RFC3339), one)
	// Two minutes apart: one UTC day, or two just after midnight (an
	// index UpdateItem per day).
	days := 1
	if now.Add(-time.Minute).Truncate(time.Second).Truncate(24*time.Hour) != now.Add(-2*time.Minute).Truncate(time.Second).Truncate(24*time.Hour) {
		days = 2
	}
	e.d.Counter.SetDelay(25 * time.Millisecond)
	e.d.Counter.Reset()
	r = post(two, url.Values{"type": {"custom"}})
	e.d.Counter.SetDelay(0)
	var idsTwo []string
	if r.status != 200 || json.Unmarshal([]byte(r.raw), &idsTwo) != nil || len(idsTwo) != 2 {
		t.Fatalf("two: %d %s", r.status, r.raw)
	}
	if n, seq := e.d.Counter.Total(), e.d.Counter.Sequential(); n != 2+days || seq != 2 {
		t.Fatalf("POST of two logs: %d round trips (%d sequential), want %d (application; then one BatchWriteItem beside an index UpdateItem per day) in 2", n, seq, 2+days)
	}

	g := e.get(url.Values{"type": {"custom"}, "filter": {`stream = worker or message contains ok`}, "select": {"id,stream,message,address"}})
	if g.status != 200 || g.doc.Records.Count != 3 {
		t.Fatalf("custom read: %s", g.raw)
	}
	if g.doc.Records.Result[0][0] != idsTwo[0] || g.doc.Records.Result[0][1] != "worker" || g.doc.Records.Result[2][2] != `started, "ok"` {
		t.Fatalf("custom read order/content: %s", g.raw)
	}

	valid := func(mod string) string { return strings.Replace(one, `"hostname":"web-1"`, mod, 1) }
	for _, c := range []struct {
		body, want string
		status     int
	}{
		{`{"created":"2026-01-01T00:00:00Z"}`, "is required", 400},
		{valid(`"hostname":"web-1","extra":1`), "extra", 400},
		{valid(`"hostname":""`), "hostname must not be empty", 400},
		{strings.Replace(one, "10.0.0.1", "not-an-ip", 1), "address", 400},
		{strings.Replace(one, now.Add(-time.Minute).Format(time.RFC3339), "yesterday", 1), "created", 400},
		{strings.Replace(one, now.Add(-time.Minute).Format(time.RFC3339), now.Add(3*time.Hour).Format(time.RFC3339), 1), "created", 400},
		{`[]`, "1 to 100", 400},
		{"[" + one + `,{"stream":1}]`, "log 1", 400},
		{`"text"`, "invalid JSON body", 400},
		{`{"message":"` + strings.Repeat("x", 1<<20) + `"}`, "", 413},
	} {
		e.wantError(post(c.body, nil), c.status, c.want)
	}
	e.wantError(post(one, url.Values{"type": {"access"}}), 400, "only custom")
}
