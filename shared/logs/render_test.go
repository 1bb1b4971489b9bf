package logs

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/store"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n got: %q\nwant: %q", name, got, want)
	}
}

func TestCSVGolden(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	q, err := ParseQuery(url.Values{"format": {"csv"}, "select": {"arrival,status_code,request_path,useragent,labels,referrer,elapsed"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Records: []Record{
		{"arrival": "2026-11-20T11:00:00.123Z", "status_code": 200.0, "request_path": "/plain", "useragent": "curl/8.0", "labels": []string{"a", "b"}, "elapsed": 1.5},
		{"arrival": "2026-11-20T11:00:01Z", "status_code": 404.0, "request_path": "/with,comma", "useragent": `Mozilla/5.0 "quoted"`, "referrer": "line\nbreak", "elapsed": 1e-7},
		{"arrival": "2026-11-20T11:00:02Z", "request_path": " leading space", "useragent": "ünïcode", "elapsed": 123456789.0},
	}}
	var b bytes.Buffer
	if err := WriteCSV(&b, q, res); err != nil {
		t.Fatal(err)
	}
	golden(t, "records.csv", b.Bytes())

	q, err = ParseQuery(url.Values{"format": {"csv"}, "groupby": {"interval(60),request_method"}, "groupfilters": {`status_code in (200, 204),other`}, "groupselect": {"count,avg(elapsed)"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	g := map[string]*groupAcc{}
	for i, rec := range []Record{
		{"request_method": "GET", "status_code": 200.0, "elapsed": 2.0},
		{"request_method": "GET", "status_code": 500.0, "elapsed": 4.0},
		{"request_method": "GET", "status_code": 204.0},
		{"status_code": 200.0, "elapsed": 1.0},
	} {
		q.Group.add(g, q.From, q.From.Add(time.Duration(i*50)*time.Second), rec, nil)
	}
	b.Reset()
	if err := WriteCSV(&b, q, &Result{Groups: q.Group.rows(g)}); err != nil {
		t.Fatal(err)
	}
	golden(t, "groups.csv", b.Bytes())
}

// budgetFixture stores 120 access records a minute apart over three
// hours, written as three interleaved batches (i%3), so that each hour has
// three chunks whose times overlap, as concurrent writes make them.
func budgetFixture(t *testing.T) (*store.Store, time.Time) {
	t.Helper()
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	now := st.Now()
	batches := make([][]pending, 3)
	for i := range 120 {
		at := now.Add(-time.Duration(i) * time.Minute)
		batches[i%3] = append(batches[i%3], pending{app: "app1", typ: TypeAccess, t: at, id: fmt.Sprintf("r%d", i),
			rec: Record{"arrival": at.Format(time.RFC3339Nano), "status_code": float64(200 + i%2*300), "request_path": fmt.Sprintf("/r%d", i)}})
	}
	for b, recs := range batches {
		items, err := chunkItems(recs, func(p string, n int) string { return fmt.Sprintf("b%dc%d", b, n) + p[len(p)-2:] })
		if err != nil {
			t.Fatal(err)
		}
		if err := putChunks(context.Background(), st.Logs, items); err != nil {
			t.Fatal(err)
		}
	}
	return st, now
}

// pageAll follows next and every cut's continuation from the first query
// to the end, returning the request paths in the order received and the
// budgets that cut.
func pageAll(t *testing.T, st *store.Store, now time.Time, base url.Values, lower func(*Query)) ([]string, map[string]int) {
	t.Helper()
	v := url.Values{}
	for k, x := range base {
		v[k] = x
	}
	var got []string
	cuts := map[string]int{}
	for range 1000 {
		q, err := ParseQuery(v, now)
		if err != nil {
			t.Fatal(err)
		}
		lower(q)
		res, err := q.Run(context.Background(), st.Logs, "app1")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			got = append(got, r["request_path"].(string))
		}
		switch {
		case res.Cut != nil:
			cuts[res.Cut.Budget]++
			if res.Cut.Budget == CutBytes && !res.More {
				t.Fatalf("a bytes cut has a next page: %+v", res.Cut)
			}
			v.Set("from", res.Cut.From.Format(time.RFC3339Nano))
			v.Set("to", res.Cut.To.Format(time.RFC3339Nano))
			v.Set("start", fmt.Sprint(res.Cut.Start))
			v.Set("resume", res.Cut.Resume.Encode())
		case res.More:
			// next is relative to the same parameters, resume included.
			v.Set("start", fmt.Sprint(q.Start+len(res.Records)))
		default:
			return got, cuts
		}
	}
	t.Fatal("the continuations did not end")
	return nil, nil
}

// TestBudgetsCutAndContinue: each budget (records read, filter work,
// response bytes) cuts a query short with a continuation, and following
// the continuations returns exactly the records of an unbounded query, in
// its order, none twice, in both orders; grouping refuses instead.
func TestBudgetsCutAndContinue(t *testing.T) {
	st, now := budgetFixture(t)
	for _, order := range []string{"arrival", "-arrival"} {
		base := url.Values{"filter": {`status_code = 500 and request_path ~ '^/r[0-9]+$'`}, "limit": {"200"}, "order": {order},
			"from": {now.Add(-3 * time.Hour).Format(time.RFC3339)}, "to": {now.Add(time.Second).Format(time.RFC3339Nano)}}
		want, cuts := pageAll(t, st, now, base, func(*Query) {})
		if len(want) != 60 || len(cuts) != 0 {
			t.Fatalf("%s: unbounded: %d records, cuts %v", order, len(want), cuts)
		}
		for name, lower := range map[string]func(*Query){
			CutRecords: func(q *Query) { q.budget = 25 },
			CutWork:    func(q *Query) { q.work = 400 },
			CutBytes:   func(q *Query) { q.byteBudget = 200 },
		} {
			for _, limit := range []string{"200", "7"} {
				b := url.Values{}
				for k, x := range base {
					b[k] = x
				}
				b.Set("limit", limit)
				got, cuts := pageAll(t, st, now, b, lower)
				if cuts[name] == 0 || len(cuts) != 1 {
					t.Errorf("%s %s limit %s: cuts %v, want only %s", order, name, limit, cuts, name)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s %s limit %s: continuing returned\n%v\nwant\n%v", order, name, limit, got, want)
				}
			}
		}
	}

	// A scan past its time limit is cut where it stands.
	q, err := ParseQuery(url.Values{"from": {now.Add(-3 * time.Hour).Format(time.RFC3339)}}, now)
	if err != nil {
		t.Fatal(err)
	}
	q.timeLimit = -time.Second
	res, err := q.Run(context.Background(), st.Logs, "app1")
	if err != nil || res.Cut == nil || res.Cut.Budget != CutTime || len(res.Records) != 0 || res.Cut.Start != 1 || res.Cut.From.Before(q.From) {
		t.Fatalf("time limit: %v %+v", err, res)
	}
	// The request's own deadline counts, less the margin to answer in.
	ctx, cancel := context.WithTimeout(context.Background(), deadlineMargin)
	defer cancel()
	q.timeLimit = MaxQueryTime
	if res, err := q.Run(ctx, st.Logs, "app1"); err != nil || res.Cut == nil || res.Cut.Budget != CutTime {
		t.Fatalf("request deadline: %v %+v", err, res)
	}

	// Grouping is only right over the whole range: a budget refuses it.
	for name, lower := range map[string]func(*Query){
		"ScanBudget":   func(q *Query) { q.budget = 25 },
		"WorkBudget":   func(q *Query) { q.work = 400 },
		"MaxQueryTime": func(q *Query) { q.timeLimit = -time.Second },
	} {
		q, err := ParseQuery(url.Values{"groupby": {"status_code"}, "filter": {`request_path ~ '^/r'`}, "from": {now.Add(-3 * time.Hour).Format(time.RFC3339)}}, now)
		if err != nil {
			t.Fatal(err)
		}
		lower(q)
		var bq *BadQuery
		if _, err := q.Run(context.Background(), st.Logs, "app1"); !errors.As(err, &bq) || !strings.Contains(bq.Msg, name) {
			t.Errorf("grouping past %s: %v", name, err)
		}
	}
}
