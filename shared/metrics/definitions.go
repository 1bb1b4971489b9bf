// Package metrics is the metrics pipeline: the format of the records the
// edge sends through the ingest queue, the aggregator that folds them (and
// the address-set events) into time buckets in DynamoDB, the metric
// definitions (docs/api.md#metrics), and the metrics endpoints that read them back.
// docs/metrics.md describes each metric, the buckets, rollups and costs.
package metrics

import (
	"fmt"
	"slices"
	"strings"

	"cads/shared/domain"
)

// Family says which endpoints serve a metric.
type Family int

const (
	FamilyApplication Family = iota
	FamilyAddressSet
)

// Kind is how a metric's value is computed from the stored accumulators.
type Kind int

const (
	KindCount    Kind = iota // a sum over the interval
	KindRate                 // a sum divided by the interval's seconds
	KindAvg                  // a sum divided by another sum
	KindLevel                // a time integral divided by the interval's seconds (average level)
	KindDist                 // a map of key to count
	KindQuantile             // a quantile of a histogram
)

// Definition is one metric the API offers.
type Definition struct {
	Name   string
	Family Family
	Kind   Kind
	// Num and Den are counter codes (Den only for KindAvg); Dist is the
	// distribution code for KindDist and KindQuantile; Keys, when set,
	// makes a count the sum of those keys of Dist.
	Num, Den Counter
	Dist     Dist
	Keys     []string
	// Scale divides the result (e.g. milliseconds to seconds); 0 means 1.
	Scale float64
	// Q is the quantile of KindQuantile.
	Q float64
	// Doc is the one-line definition listed in docs/metrics.md.
	Doc string
}

// Definitions lists every metric the API offers, in its published order within
// each family. docs/metrics.md is generated from the same text (a test
// keeps them in step).
var Definitions = []Definition{
	{Name: "entries_added", Family: FamilyAddressSet, Kind: KindCount, Num: CEntriesAdded, Doc: "entries that became part of a set: created, or re-added after they had expired"},
	{Name: "entries_extended", Family: FamilyAddressSet, Kind: KindCount, Num: CEntriesExtended, Doc: "existing, unexpired entries whose expiry moved later (a re-add with a later or no expiry)"},
	{Name: "entries_expired", Family: FamilyAddressSet, Kind: KindCount, Num: CEntriesExpired, Doc: "entries that reached their expiry, counted once at the expiry instant"},
	{Name: "entries_deleted", Family: FamilyAddressSet, Kind: KindCount, Num: CEntriesDeleted, Doc: "unexpired entries removed by a PATCH or with their set"},

	{Name: "active_requests", Kind: KindLevel, Num: CServerMs, Scale: 1000, Doc: "average number of requests being served by the application servers at any instant: sum of server_latency over the interval's length (Little's law)"},
	{Name: "active_sessions", Kind: KindLevel, Num: CSessionSeconds, Doc: "average number of active sessions at any instant: the edge's samples of its active sessions, each weighted by its sampling interval, over the interval's length"},
	{Name: "avg_session_length", Kind: KindAvg, Num: CSessionEndedSeconds, Den: CSessionsEnded, Doc: "average length in seconds (first to last request) of the sessions that ended in the interval"},
	{Name: "bytes_in", Kind: KindCount, Num: CBytesIn, Doc: "request bytes received by the data plane"},
	{Name: "bytes_in_per_second", Kind: KindRate, Num: CBytesIn, Doc: "bytes_in per second of the interval"},
	{Name: "bytes_out", Kind: KindCount, Num: CBytesOut, Doc: "response bytes written by the data plane"},
	{Name: "bytes_out_per_second", Kind: KindRate, Num: CBytesOut, Doc: "bytes_out per second of the interval"},
	{Name: "cache_hits", Kind: KindCount, Dist: DCacheSource, Keys: []string{"hit", "stale"}, Doc: "requests answered from the cache (cache_source hit or stale)"},
	{Name: "cache_misses", Kind: KindCount, Dist: DCacheSource, Keys: []string{"miss"}, Doc: "cacheable requests fetched from the application servers (cache_source miss)"},
	{Name: "cache_sources", Kind: KindDist, Dist: DCacheSource, Doc: "requests by cache_source: hit, stale, miss, pass, error, synthetic"},
	{Name: "cdn_bytes_in", Kind: KindCount, Num: CCDNBytesIn, Doc: "request bytes received by CDN POPs"},
	{Name: "cdn_bytes_out", Kind: KindCount, Num: CCDNBytesOut, Doc: "response bytes written by CDN POPs"},
	{Name: "cdn_response_summary", Kind: KindDist, Dist: DCDNStatusClass, Doc: "CDN requests by status class: 1xx, 2xx, 3xx, 4xx, 5xx"},
	{Name: "countries", Kind: KindDist, Dist: DCountry, Doc: "requests by the client's country (ISO 3166-1 alpha-2; XX when unknown)"},
	{Name: "delivery_status", Kind: KindDist, Dist: DDeliveryStatus, Doc: "requests by delivery_status: delivered, client_abort, rejected, timeout, error, blocked"},
	{Name: "edge_locations", Kind: KindDist, Dist: DEdgeLocation, Doc: "CDN requests by POP location"},
	{Name: "edge_response_time", Kind: KindAvg, Num: CCDNElapsedMs, Den: CCDNRequests, Doc: "average elapsed milliseconds of CDN requests at the POPs"},
	{Name: "edge_response_types", Kind: KindDist, Dist: DEdgeResponseType, Doc: "CDN requests by response type (their cache_source: hit, stale, miss, pass, error, synthetic)"},
	{Name: "edge_status_codes", Kind: KindDist, Dist: DEdgeStatus, Doc: "CDN requests by response status code"},
	{Name: "edge_ttfb", Kind: KindAvg, Num: CCDNTTFBMs, Den: CCDNRequests, Doc: "average time to first byte in milliseconds of CDN responses at the POPs"},
	{Name: "edge_useragent_device", Kind: KindDist, Dist: DEdgeUADevice, Doc: "CDN requests by user agent device"},
	{Name: "edge_useragent_name", Kind: KindDist, Dist: DEdgeUAName, Doc: "CDN requests by user agent name"},
	{Name: "edge_useragent_os", Kind: KindDist, Dist: DEdgeUAOS, Doc: "CDN requests by user agent operating system"},
	{Name: "page_load_binned", Kind: KindDist, Dist: DPageLoadBin, Doc: "page views by load time in milliseconds, in the bins 0-500, 500-1000, 1000-2000, 2000-3000, 3000-5000, 5000-10000, 10000+"},
	{Name: "page_load_time", Kind: KindAvg, Num: CPageLoadMs, Den: CPageViews, Doc: "average page load time in milliseconds reported by user agents"},
	{Name: "page_views", Kind: KindCount, Num: CPageViews, Doc: "page load reports made by user agents"},
	{Name: "rejected_requests", Kind: KindCount, Dist: DDeliveryStatus, Keys: []string{"rejected"}, Doc: "requests rejected because the application servers did not respond in time (delivery_status rejected)"},
	{Name: "req_time", Kind: KindAvg, Num: CServerMs, Den: CRequests, Doc: "average milliseconds the application servers took per request (server_latency)"},
	{Name: "requests", Kind: KindCount, Num: CRequests, Doc: "requests processed by the data plane (access records)"},
	{Name: "requests_per_second", Kind: KindRate, Num: CRequests, Doc: "requests per second of the interval"},
	{Name: "response_time", Kind: KindAvg, Num: CElapsedMs, Den: CRequests, Doc: "average elapsed milliseconds from arrival to completion at the data plane"},
	{Name: "response_time_lower", Kind: KindQuantile, Dist: DResponseTimeBin, Q: 0.10, Doc: "10th percentile of elapsed milliseconds, estimated from a fixed histogram (docs/metrics.md)"},
	{Name: "response_time_upper", Kind: KindQuantile, Dist: DResponseTimeBin, Q: 0.90, Doc: "90th percentile of elapsed milliseconds, estimated from the same histogram"},
	{Name: "status_codes", Kind: KindDist, Dist: DStatus, Doc: "requests by response status code at the data plane"},
	{Name: "suspended_requests", Kind: KindLevel, Num: CQueueMs, Scale: 1000, Doc: "average number of requests waiting for the application servers at any instant: sum of queue_latency over the interval's length"},
	{Name: "useragent_device", Kind: KindDist, Dist: DUADevice, Doc: "requests by user agent device"},
	{Name: "useragent_name", Kind: KindDist, Dist: DUAName, Doc: "requests by user agent name"},
	{Name: "useragent_os", Kind: KindDist, Dist: DUAOS, Doc: "requests by user agent operating system"},
	{Name: "waf_hits", Kind: KindCount, Num: CWAFHits, Doc: "requests in which the web application firewall found a threat (threat not empty)"},
	{Name: "webcontrol_hits", Kind: KindDist, Dist: DWebControl, Doc: "requests by the web control (page control) that matched them"},
}

var byName = func() map[string]*Definition {
	m := make(map[string]*Definition, len(Definitions))
	for i := range Definitions {
		m[Definitions[i].Name] = &Definitions[i]
	}
	return m
}()

// Lookup returns the definition of a metric name.
func Lookup(name string) (*Definition, bool) {
	d, ok := byName[name]
	return d, ok
}

// Names lists the metric names of a family, sorted.
func Names(f Family) []string {
	var out []string
	for _, d := range Definitions {
		if d.Family == f {
			out = append(out, d.Name)
		}
	}
	slices.Sort(out)
	return out
}

// ParseNames validates the `names` parameter: a comma separated list of
// metric names of the family, each once. The message of a refusal names
// the offending entry.
func ParseNames(raw []string, f Family) ([]*Definition, error) {
	var parts []string
	for _, r := range raw {
		parts = append(parts, strings.Split(r, ",")...)
	}
	if len(parts) == 0 || len(parts) == 1 && strings.TrimSpace(parts[0]) == "" {
		return nil, fmt.Errorf("names is required: a comma separated list of %s", strings.Join(Names(f), ", "))
	}
	out := make([]*Definition, 0, len(parts))
	seen := map[string]bool{}
	for _, p := range parts {
		name := strings.TrimSpace(p)
		if name == "" {
			return nil, fmt.Errorf("names: empty entry in %q", strings.Join(raw, ","))
		}
		d, ok := byName[name]
		if !ok || d.Family != f {
			return nil, fmt.Errorf("names: unknown metric %q; allowed: %s", domain.Clip(name, 64), strings.Join(Names(f), ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("names: %q is listed twice", name)
		}
		seen[name] = true
		out = append(out, d)
	}
	return out, nil
}
