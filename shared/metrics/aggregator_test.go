package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/metrics"
	"cads/shared/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newStore(t *testing.T) (*store.Store, testenv.Dynamo) {
	t.Helper()
	d := testenv.NewDynamo(t)
	return store.New(d.Client, d.Table), d
}

func sqsEvent(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d-%d", i, time.Now().UnixNano()), Body: b})
	}
	return ev
}

func message(batch string, recs ...metrics.Record) string {
	b, err := json.Marshal(metrics.Message{Batch: batch, Records: recs})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func access(app string, at time.Time, status int, bytesOut int64, elapsed float64) metrics.Record {
	return metrics.Record{App: app, Arrival: at.UTC().Format(time.RFC3339Nano), StatusCode: status, BytesIn: 300, BytesOut: bytesOut,
		Elapsed: elapsed, ServerLatency: elapsed / 2, Country: "NL", CacheSource: "miss", DeliveryStatus: "delivered",
		UseragentDevice: "desktop", UseragentName: "Firefox", UseragentOS: "Linux"}
}

func handle(t *testing.T, a *metrics.Aggregator, ev events.SQSEvent) []string {
	t.Helper()
	resp, err := a.Handle(context.Background(), ev)
	if err != nil {
		t.Fatalf("handler error: %v", err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

// read answers a metrics query straight from the store (the handler's
// path without HTTP).
func read(t *testing.T, st *store.Store, f metrics.Family, scope, query string) metrics.Result {
	t.Helper()
	testenv.AwaitReads() // metric chunks are read eventually consistent
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	now := st.Now()
	mq, err := metrics.ParseQuery(q, f, now)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	p, err := mq.Plan(now)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	chunks, err := st.Metrics.MetricChunks(context.Background(), p.Keys(scope))
	if err != nil {
		t.Fatal(err)
	}
	// Through JSON, as a client sees it.
	b, err := json.Marshal(p.Evaluate(mq.Defs, chunks))
	if err != nil {
		t.Fatal(err)
	}
	var r metrics.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func num(t *testing.T, r metrics.Result, name string) float64 {
	t.Helper()
	v, ok := r.Metrics.Get(name)
	if !ok {
		t.Fatalf("no %s in %+v", name, r.Metrics)
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s is %T, not a number", name, v)
	}
	return f
}

func sum(t *testing.T, r metrics.Result, name string) float64 {
	t.Helper()
	v, _ := r.Metrics.Get(name)
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("%s is %T, not an array", name, v)
	}
	var s float64
	for _, x := range arr {
		s += x.(float64)
	}
	return s
}

func window(now time.Time) string {
	from := now.Add(-2 * time.Hour).Truncate(time.Minute)
	to := now.Add(time.Minute).Truncate(time.Minute)
	return "&from=" + from.Format(time.RFC3339) + "&to=" + to.Format(time.RFC3339)
}

func TestRedeliveredBatchesDoNotDoubleCount(t *testing.T) {
	st, d := newStore(t)
	a := metrics.NewAggregator(st.Metrics, nil, nil, quiet)
	now := st.Now().Truncate(2 * time.Minute).Add(119 * time.Second)
	var batchA, batchB []metrics.Record
	for i := range 50 {
		batchA = append(batchA, access("app1", now.Add(-time.Duration(i)*7*time.Second), 200, 1000, 40))
	}
	for i := range 7 {
		batchB = append(batchB, access("app1", now.Add(-time.Duration(i)*time.Minute), 404, 10, 5))
	}
	a1 := message("edge1-0001", batchA...)
	// One message of one application within one 2-minute window: one
	// transaction (its marker and one chunk update per tier).
	d.Counter.Reset()
	if f := handle(t, a, sqsEvent(message("edge1-0000", access("app1", now.Add(-time.Minute), 200, 1, 1)))); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	if n := d.Counter.Total(); n != 1 {
		t.Fatalf("one small batch took %d round trips, want 1: %v", n, d.Counter.ByOperation())
	}
	if f := handle(t, a, sqsEvent(a1)); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	// Redelivered alone, then together with a new batch and with itself.
	if f := handle(t, a, sqsEvent(a1)); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	if f := handle(t, a, sqsEvent(a1, message("edge1-0002", batchB...), a1)); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	r := read(t, st, metrics.FamilyApplication, metrics.ScopeApp("app1"), "names=requests,bytes_out,status_codes,response_time&summarize=true"+window(now))
	if got := num(t, r, "requests"); got != 58 {
		t.Fatalf("requests = %v, want 58", got)
	}
	if got := num(t, r, "bytes_out"); got != 50*1000+7*10+1 {
		t.Fatalf("bytes_out = %v", got)
	}
	sc, _ := r.Metrics.Get("status_codes")
	if m := sc.(map[string]any); m["200"] != 51.0 || m["404"] != 7.0 {
		t.Fatalf("status_codes = %v", m)
	}
	if got := num(t, r, "response_time"); got < 35.10 || got > 35.11 { // (50*40+7*5+1)/58
		t.Fatalf("response_time = %v", got)
	}
	// Names come back in the order asked.
	if r.Metrics.Names[0] != "requests" || r.Metrics.Names[3] != "response_time" {
		t.Fatalf("order %v", r.Metrics.Names)
	}
}

func TestSummarizeAgreesWithResolution(t *testing.T) {
	st, _ := newStore(t)
	a := metrics.NewAggregator(st.Metrics, nil, nil, quiet)
	now := st.Now()
	var recs []metrics.Record
	for i := range 400 {
		r := access("app2", now.Add(-time.Duration(i)*17*time.Second), []int{200, 200, 301, 404, 503}[i%5], int64(100+i), float64(i%90))
		r.Country = []string{"NL", "US", "de", "??"}[i%4]
		if i%9 == 0 {
			r.Threat = "sqli"
		}
		recs = append(recs, r)
	}
	for i := 0; i < len(recs); i += 100 {
		if f := handle(t, a, sqsEvent(message("b"+strconv.Itoa(i), recs[i:i+100]...))); len(f) != 0 {
			t.Fatalf("failures %v", f)
		}
	}
	names := "names=requests,bytes_out,waf_hits,countries,status_codes,bytes_out_per_second"
	for _, res := range []string{"10", "60", "300", "600"} {
		series := read(t, st, metrics.FamilyApplication, metrics.ScopeApp("app2"), names+"&resolution="+res+window(now))
		whole := read(t, st, metrics.FamilyApplication, metrics.ScopeApp("app2"), names+"&summarize=true&from="+series.From.Format(time.RFC3339)+"&to="+series.To.Format(time.RFC3339))
		if !whole.From.Equal(series.From) || !whole.To.Equal(series.To) {
			t.Fatalf("res %s: ranges differ: %v..%v vs %v..%v", res, series.From, series.To, whole.From, whole.To)
		}
		for _, n := range []string{"requests", "bytes_out", "waf_hits"} {
			if s, w := sum(t, series, n), num(t, whole, n); s != w {
				t.Errorf("res %s: %s: series sums to %v, summary %v", res, n, s, w)
			}
		}
		if got := num(t, whole, "requests"); got != 400 {
			t.Errorf("res %s: requests %v", res, got)
		}
		// A rate over the whole range is the total over its seconds.
		if got, want := num(t, whole, "bytes_out_per_second"), num(t, whole, "bytes_out")/float64(whole.Resolution); got-want > 0.001 || want-got > 0.001 {
			t.Errorf("rate %v, want %v", got, want)
		}
		v, _ := whole.Metrics.Get("countries")
		m := v.(map[string]any)
		if m["NL"] != 100.0 || m["US"] != 100.0 || m["DE"] != 100.0 || m["XX"] != 100.0 {
			t.Errorf("countries %v", m)
		}
		sv, _ := series.Metrics.Get("status_codes")
		total := map[string]float64{}
		for _, p := range sv.([]any) {
			for k, c := range p.(map[string]any) {
				total[k] += c.(float64)
			}
		}
		if total["200"] != 160 || total["301"] != 80 || total["404"] != 80 || total["503"] != 80 {
			t.Errorf("res %s: status codes summed over points %v", res, total)
		}
	}
}

// failingStore fails chosen calls of ApplyMetricStep, as a throttled or
// crashed aggregator would.
type failingStore struct {
	*store.Metrics
	calls  atomic.Int32
	failAt int32
}

func (f *failingStore) ApplyMetricStep(ctx context.Context, s store.MetricStep) error {
	if f.calls.Add(1) == f.failAt {
		return errors.New("injected failure")
	}
	return f.Metrics.ApplyMetricStep(ctx, s)
}

func TestLargeMessageIsAppliedInResumableSteps(t *testing.T) {
	st, d := newStore(t)
	now := st.Now()
	// Six hours of one record every 10 seconds in one message: 180
	// 10-second chunks and more, far beyond one transaction.
	var recs []metrics.Record
	for i := range 2160 {
		recs = append(recs, access("app3", now.Add(-time.Duration(i)*10*time.Second), 200, 1, 1))
	}
	body := message("big-1", recs...)
	fs := &failingStore{Metrics: st.Metrics, failAt: 2}
	a := metrics.NewAggregator(fs, nil, nil, quiet)
	ev := sqsEvent(body)
	if f := handle(t, a, ev); len(f) != 1 {
		t.Fatalf("the failed step must fail the message, got %v", f)
	}
	d.Counter.Reset()
	if f := handle(t, a, ev); len(f) != 0 { // redelivered: resumes at step 1
		t.Fatalf("failures %v", f)
	}
	if f := handle(t, a, ev); len(f) != 0 { // and again: already complete
		t.Fatalf("failures %v", f)
	}
	q := "names=requests&summarize=true&from=" + now.Add(-7*time.Hour).Truncate(time.Hour).Format(time.RFC3339) + "&to=" + now.Add(time.Minute).Format(time.RFC3339)
	if got := num(t, read(t, st, metrics.FamilyApplication, metrics.ScopeApp("app3"), q), "requests"); got != 2160 {
		t.Fatalf("requests = %v, want 2160", got)
	}
	// The 10-second series over the last hour sees each record once.
	r := read(t, st, metrics.FamilyApplication, metrics.ScopeApp("app3"), "names=requests&resolution=10")
	if s := sum(t, r, "requests"); s < 355 || s > 362 {
		t.Fatalf("last hour at 10 s: %v", s)
	}
}

func TestPartialBatchFailuresAndSkippedRecords(t *testing.T) {
	st, _ := newStore(t)
	a := metrics.NewAggregator(st.Metrics, nil, nil, quiet)
	now := st.Now()
	good := access("app4", now, 200, 5, 5)
	bad := []metrics.Record{
		{App: "APP!", Arrival: now.Format(time.RFC3339)}, // not an id
		{App: "app4"},                       // no arrival
		{App: "app4", Arrival: "yesterday"}, // not a time
		{App: "app4", Arrival: now.Add(3 * time.Hour).Format(time.RFC3339)}, // from the future
		{App: "app4", Type: "telemetry", Arrival: now.Format(time.RFC3339)}, // unknown type
	}
	ev := sqsEvent(message("ok-1", append(bad, good)...), `{"records":`, `{"event":"e1","account":"a","set":"s","changes":[{"metric":"nope","time":"2026-01-01T00:00:00Z","n":1}]}`, message("bad id with spaces", good), `{}`)
	failed := handle(t, a, ev)
	want := map[string]bool{ev.Records[1].MessageId: true, ev.Records[2].MessageId: true, ev.Records[3].MessageId: true, ev.Records[4].MessageId: true}
	if len(failed) != len(want) {
		t.Fatalf("failed %v, want the 4 malformed messages", failed)
	}
	for _, f := range failed {
		if !want[f] {
			t.Fatalf("message %s should not have failed", f)
		}
	}
	if got := num(t, read(t, st, metrics.FamilyApplication, metrics.ScopeApp("app4"), "names=requests&summarize=true"+window(now)), "requests"); got != 1 {
		t.Fatalf("requests = %v, want the one valid record", got)
	}
}

func TestEventWithoutOutboxItemIsNotCounted(t *testing.T) {
	st, _ := newStore(t)
	a := metrics.NewAggregator(st.Metrics, nil, nil, quiet)
	now := st.Now()
	ev := metrics.EncodeEvent(metrics.Event{ID: "gone1", Account: "acct1", Set: "set1", Changes: []metrics.Change{{Metric: "entries_added", Time: now, N: 3}}})
	if f := handle(t, a, sqsEvent(ev)); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	r := read(t, st, metrics.FamilyAddressSet, metrics.ScopeSet("set1"), "names=entries_added&summarize=true")
	if got := num(t, r, "entries_added"); got != 0 {
		t.Fatalf("an event whose outbox item is gone (already folded) was counted: %v", got)
	}
}
