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
		q.Group.add(g, q.From, q.From.Add(time.Duration(i*50)*time.Second), rec)
	}
	b.Reset()
	if err := WriteCSV(&b, q, &Result{Groups: q.Group.rows(g)}); err != nil {
		t.Fatal(err)
	}
	golden(t, "groups.csv", b.Bytes())
}

// TestScanBudget: a filter that matches little over many records stops
// at the budget with a 400-class error instead of reading on.
func TestScanBudget(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	now := st.Now()
	var recs []pending
	for i := range 120 {
		at := now.Add(-time.Duration(i) * time.Minute)
		recs = append(recs, pending{app: "app1", typ: TypeAccess, t: at, id: fmt.Sprintf("r%d", i),
			rec: Record{"arrival": at.Format(time.RFC3339Nano), "status_code": float64(200 + i%2*300)}})
	}
	items, err := chunkItems(recs, func(p string, n int) string { return fmt.Sprintf("c%d", n) + p[len(p)-2:] })
	if err != nil {
		t.Fatal(err)
	}
	if err := putChunks(context.Background(), st, items); err != nil {
		t.Fatal(err)
	}
	q, err := ParseQuery(url.Values{"filter": {"status_code = 500"}, "limit": {"100"}, "from": {now.Add(-3 * time.Hour).Format(time.RFC3339)}, "to": {now.Add(time.Second).Format(time.RFC3339Nano)}}, now)
	if err != nil {
		t.Fatal(err)
	}
	q.budget = 50
	d.Counter.Reset()
	_, err = q.Run(context.Background(), st, "app1")
	var bq *BadQuery
	if !errors.As(err, &bq) || !strings.Contains(bq.Msg, "scan budget") {
		t.Fatalf("err = %v, want the scan budget refusal", err)
	}
	q.budget = 1000
	res, err := q.Run(context.Background(), st, "app1")
	if err != nil || len(res.Records) != 60 || res.More {
		t.Fatalf("within budget: %v, %d records, more %v", err, len(res.Records), res.More)
	}
	q.Group = &Grouping{Limit: 10, Selects: []aggregate{{name: "count", fn: "count"}}, Fields: []string{"count"}}
	q.budget = 50
	if _, err := q.Run(context.Background(), st, "app1"); !errors.As(err, &bq) {
		t.Fatalf("grouping past the budget: %v", err)
	}
}
