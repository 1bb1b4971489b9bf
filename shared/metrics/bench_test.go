package metrics

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/valyala/fastjson"
)

// benchMessage is an ingest message as the traffic generator makes them:
// realistic access records of one application over a few seconds.
func benchMessage(n int, start time.Time) string {
	recs := make([]Record, n)
	for i := range recs {
		t := start.Add(time.Duration(i) * 5 * time.Millisecond)
		recs[i] = Record{App: "k3x9q2abcd", Arrival: t.Format(time.RFC3339Nano), Completed: t.Add(42 * time.Millisecond).Format(time.RFC3339Nano),
			BytesIn: 512 + int64(i%300), BytesOut: 14000 + int64(i%9000), CacheControl: "max-age=60", CacheSource: []string{"hit", "miss", "pass", "stale"}[i%4],
			Country: []string{"NL", "US", "DE", "FR", "GB", "JP", "BR"}[i%7], DeliveryStatus: "delivered", Elapsed: float64(10 + i%400),
			InternalTransportLatency: 1, Location: "ams1", PeerAddress: "192.0.2.10", QueueLatency: float64(i % 3), Referrer: "https://example.com/",
			RequestAddress: fmt.Sprintf("198.51.100.%d", i%250), RequestID: fmt.Sprintf("req-%08d", i), RequestMethod: "GET", RequestHost: "shop.example.com",
			RequestPort: 443, RequestPath: fmt.Sprintf("/products/%d", i%500), RequestProtocol: "HTTP/2", RequestURL: "https://shop.example.com/products/1",
			ResponseContentType: "text/html", ServerAddress: "10.0.0.5:8080", ServerLatency: float64(5 + i%200), StatusCode: []int{200, 200, 200, 304, 404, 500}[i%6],
			SessionID: fmt.Sprintf("s%05d", i%900), TLSCipher: "TLS_AES_128_GCM_SHA256", TLSVersion: "TLSv1.3", TTFB: float64(8 + i%100),
			Useragent: "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", UseragentDevice: []string{"desktop", "mobile", "tablet"}[i%3],
			UseragentName: []string{"Firefox", "Chrome", "Safari", "Edge"}[i%4], UseragentOS: []string{"Linux", "Windows", "macOS", "iOS", "Android"}[i%5]}
		if i%50 == 0 {
			recs[i].Threat = "sqli"
			recs[i].Webcontrols = []string{"12"}
		}
	}
	b, _ := json.Marshal(Message{Batch: "bench", Records: recs})
	return string(b)
}

// BenchmarkFold measures what one aggregator core does per record: decode
// the ingest message and fold every record into the buckets, then derive
// the chunk updates of every tier (once per message, as the aggregator
// does). The DynamoDB writes are per message, not per record; their cost
// is measured by the round-trip tests.
func BenchmarkFold(b *testing.B) {
	const perMessage = 500
	now := time.Now().UTC()
	body := benchMessage(perMessage, now.Add(-time.Minute))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	records := 0
	var p fastjson.Parser
	for b.Loop() {
		f := NewFold(now)
		m, err := decode(&p, body, f.record)
		if err != nil || m.kind != kindIngest {
			b.Fatal(err)
		}
		if f.Folded != perMessage || len(f.Updates()) == 0 {
			b.Fatalf("folded %d", f.Folded)
		}
		records += perMessage
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}
