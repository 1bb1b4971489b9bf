package logs_test

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// JSON result rows are objects keyed by field by default, members in the
// order of fields (a missing value is null); rows=arrays gives the arrays
// of values in fields order. Grouped results follow the same parameter.
func TestLogsRowShapes(t *testing.T) {
	e := newEnv(t)
	from := e.deps.Store.Now().Add(-time.Hour).Truncate(time.Minute)
	recs := generate(e.app, from, 5)
	batch := make([]any, len(recs))
	for i := range recs {
		batch[i] = recs[i]
	}
	e.ingest("rows", batch...)
	base := url.Values{"from": {from.Add(-time.Minute).Format(time.RFC3339)}, "select": {"status_code,request_id,country"}, "limit": {"2"}}

	q := cloneWith(base, "rows", "")
	r := e.get(q)
	// recs[0] has no country (every fifth record).
	want := `"result":[{"status_code":200,"request_id":"r0000","country":null},{"status_code":200,"request_id":"r0001","country":"US"}]`
	if r.status != 200 || !strings.Contains(r.raw, want) || !strings.Contains(r.raw, `"fields":["status_code","request_id","country"]`) {
		t.Fatalf("default rows: %d %s\nwant %s", r.status, r.raw, want)
	}
	// The same but for "to" (now, when the request names none).
	if r2 := e.get(cloneWith(base, "rows", "objects")); afterTo(r2.raw) != afterTo(r.raw) {
		t.Fatalf("rows=objects differs from the default:\n%s\n%s", r2.raw, r.raw)
	}
	r = e.get(cloneWith(base, "rows", "arrays"))
	if want := `"result":[[200,"r0000",null],[200,"r0001","US"]]`; r.status != 200 || !strings.Contains(r.raw, want) {
		t.Fatalf("rows=arrays: %d %s\nwant %s", r.status, r.raw, want)
	}

	g := url.Values{"from": base["from"], "groupby": {"request_method"}, "grouporder": {"request_method"}}
	r = e.get(cloneWith(g, "rows", ""))
	if want := `"result":[{"request_method":"GET","count":2},{"request_method":"HEAD","count":1},{"request_method":"POST","count":2}]`; r.status != 200 || !strings.Contains(r.raw, want) {
		t.Fatalf("grouped objects: %d %s\nwant %s", r.status, r.raw, want)
	}
	r = e.get(cloneWith(g, "rows", "arrays"))
	if want := `"result":[["GET",2],["HEAD",1],["POST",2]]`; r.status != 200 || !strings.Contains(r.raw, want) {
		t.Fatalf("grouped arrays: %d %s\nwant %s", r.status, r.raw, want)
	}

	e.wantError(e.get(cloneWith(base, "rows", "maps")), 400, `rows: "maps" is not objects or arrays`)
	csv := cloneWith(base, "rows", "arrays")
	csv.Set("format", "csv")
	e.wantError(e.get(csv), 400, "rows: applies to JSON only")
}

// cloneWith is q with rows set to v; "" leaves rows out, which the test
// helper would otherwise set to arrays (an empty rows is the default).
func cloneWith(q url.Values, k, v string) url.Values {
	out := url.Values{}
	for key, vals := range q {
		out[key] = vals
	}
	out.Set(k, v)
	return out
}

func afterTo(raw string) string {
	_, rest, _ := strings.Cut(raw, `"group"`)
	return rest
}
