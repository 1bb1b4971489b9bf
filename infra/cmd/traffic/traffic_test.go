package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cads/infra/local/localtest"
	"cads/shared/metrics"
	"cads/shared/outbox"
	"cads/shared/wire"
)

func get(t *testing.T, base, secret, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, raw)
	}
	return res.StatusCode
}

// eventually polls until ok or the deadline.
func eventually(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestTrafficReachesMetricsThroughThePlatform runs the whole pipeline on
// the local platform: the generator's records go through the embedded SQS
// queue to the aggregator (through the SQS event source), and the metrics
// endpoints answer through the local API Gateway and the authorizer. An
// address-set entry that expires is counted by the sweep its wake-up
// triggers.
func TestTrafficReachesMetricsThroughThePlatform(t *testing.T) {
	p, _ := localtest.Start(t)
	secret := p.Bootstrap.Secret
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := setup(ctx, p.URL, secret, "")
	if err != nil {
		t.Fatal(err)
	}
	q := p.Queues[wire.MetricsQueue]
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = run(ctx, newGenerator(d.app, d.set, 30, 7), outbox.SQS{Client: p.SQS, URLs: map[string]string{wire.MetricsQueue: q.URL}}.To(wire.MetricsQueue), 250*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	})
	defer wg.Wait()
	defer cancel()

	var r metrics.Result
	eventually(t, "application metrics", 30*time.Second, func() bool {
		if st := get(t, p.URL, secret, "/v2/applications/"+d.app+"/metrics?names=requests,status_codes,cdn_bytes_out,page_views,active_sessions&summarize=true", &r); st != 200 {
			t.Fatalf("metrics: %d %+v", st, r)
		}
		n, _ := r.Metrics.Get("requests")
		c, _ := r.Metrics.Get("cdn_bytes_out")
		return n.(float64) > 0 && c.(float64) > 0
	})
	sc, _ := r.Metrics.Get("status_codes")
	if len(sc.(map[string]any)) == 0 {
		t.Fatalf("no status codes: %+v", r)
	}
	eventually(t, "dynamic address set metrics", 30*time.Second, func() bool {
		get(t, p.URL, secret, "/v2/address-sets/"+d.set+"/metrics?names=entries_added&summarize=true", &r)
		n, _ := r.Metrics.Get("entries_added")
		return n.(float64) > 0
	})

	// A manual set whose entry expires in two seconds: it stops being
	// listed, and its wake-up runs the sweep that counts it.
	exp := time.Now().UTC().Add(2 * time.Second).Format(time.RFC3339Nano)
	body := `{"name":"short-lived","type":"manual","entries":[{"address":"192.0.2.77","expiry":"` + exp + `"},{"address":"192.0.2.78"}]}`
	req, _ := http.NewRequest("POST", p.URL+"/v2/address-sets", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var set struct{ ID string }
	_ = json.NewDecoder(res.Body).Decode(&set)
	res.Body.Close()
	if res.StatusCode != 200 || set.ID == "" {
		t.Fatalf("create set: %d", res.StatusCode)
	}
	window := "&summarize=true&from=" + time.Now().UTC().Add(-time.Hour).Format(time.RFC3339) + "&to=" + time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	eventually(t, "the expiry counted", 40*time.Second, func() bool {
		get(t, p.URL, secret, "/v2/address-sets/"+set.ID+"/metrics?names=entries_added,entries_expired"+window, &r)
		a, _ := r.Metrics.Get("entries_added")
		e, _ := r.Metrics.Get("entries_expired")
		return a.(float64) == 2 && e.(float64) == 1
	})
	var list []map[string]any
	get(t, p.URL, secret, "/v2/address-sets/"+set.ID+"/addresses", &list)
	if len(list) != 1 || list[0]["address"] != "192.0.2.78" {
		t.Fatalf("addresses after expiry: %v", list)
	}
	// The account's metrics hold both sets' counts.
	get(t, p.URL, secret, "/v2/address-sets/metrics?names=entries_expired"+window, &r)
	if e, _ := r.Metrics.Get("entries_expired"); e.(float64) < 1 {
		t.Fatalf("account metrics %+v", r)
	}
}

func TestGeneratorRecordsAreValid(t *testing.T) {
	g := newGenerator("app1", "set1", 40, 1)
	start := time.Date(2026, 5, 9, 12, 0, 0, 0, time.UTC)
	kinds := map[string]int{}
	for i := range 60 {
		for _, r := range g.next(start.Add(time.Duration(i) * time.Second)) {
			typ := r.Type
			if typ == "" {
				typ = metrics.TypeAccess
			}
			kinds[typ]++
			if typ == metrics.TypeAccess && (r.RequestID == "" || r.StatusCode == 0 || r.Arrival == "" || r.SessionID == "") {
				t.Fatalf("incomplete access record %+v", r)
			}
		}
	}
	if kinds[metrics.TypeAccess] < 1500 || kinds[metrics.TypeCDN] < 1500 || kinds[metrics.TypePageview] == 0 || kinds[metrics.TypeSessions] != 6 || kinds[metrics.TypeAddress] != 3 {
		t.Fatalf("a minute of traffic: %v", kinds)
	}
}
