package tests

import (
	"encoding/json"
	"math"
	"net/url"
	"sort"
	"time"

	"cads/shared/domain"
	"cads/shared/loadgen"
)

// ApplicationTest is the wire shape of a test (docs/api.md#application-tests).
type ApplicationTest struct {
	ID            string         `json:"id"`
	Href          string         `json:"href"`
	Description   string         `json:"description"`
	Created       time.Time      `json:"created"`
	Updated       time.Time      `json:"updated"`
	Configuration *Configuration `json:"configuration"`
	LastRun       *Run           `json:"last_run,omitempty"`
}

// Configuration describes the stored archive and summarises the parsed
// configuration (no credentials: users are only counted).
type Configuration struct {
	MediaType string    `json:"media_type"`
	Filename  string    `json:"filename,omitempty"`
	Size      int       `json:"size"`
	SHA256    string    `json:"sha256"`
	Updated   time.Time `json:"updated"`
	configSummary
}

// configSummary is what is kept of a parsed configuration (domain.AppTest's
// Summary).
type configSummary struct {
	File          string               `json:"file"`
	Files         int                  `json:"files"`
	Probabilities float64              `json:"probabilities"`
	Models        []ModelSummary       `json:"models"`
	Users         int                  `json:"users"`
	Parameters    map[string]Parameter `json:"parameters,omitempty"`
}

// ModelSummary is one session of a configuration.
type ModelSummary struct {
	Name      string   `json:"name"`
	Type      string   `json:"type"`
	File      string   `json:"file,omitempty"`
	Requests  int      `json:"requests"`
	Constants int      `json:"constants,omitempty"`
	Hosts     []string `json:"hosts"`
}

func Summarize(a *Archive, c *Config) configSummary {
	s := configSummary{File: c.File, Files: len(a.Files), Probabilities: c.Probabilities, Users: len(c.Users), Parameters: c.Parameters, Models: []ModelSummary{}}
	for _, m := range c.Models {
		hosts := map[string]bool{}
		for _, r := range append(append([]Request{}, m.Session.Requests...), m.Session.Constants...) {
			if u, err := url.Parse(r.URL); err == nil {
				hosts[u.Host] = true
			}
		}
		ms := ModelSummary{Name: m.Name, Type: m.Session.Type, File: m.File, Requests: len(m.Session.Requests), Constants: len(m.Session.Constants), Hosts: []string{}}
		for h := range hosts {
			ms.Hosts = append(ms.Hosts, h)
		}
		sort.Strings(ms.Hosts)
		s.Models = append(s.Models, ms)
	}
	return s
}

// Run states.
const (
	RunQueued    = "queued"
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
)

// Run is a run of a test; its id is the load id the generated requests
// carry (loadgen.LoadIDHeader) and that access records are tagged with.
type Run struct {
	ID           string     `json:"id"`
	LoadID       string     `json:"load_id"`
	State        string     `json:"state"`
	Duration     int        `json:"duration"`
	VirtualUsers int        `json:"virtualUsers"`
	AssignCost   bool       `json:"assignCost"`
	Targets      string     `json:"targets,omitempty"`
	RequestedBy  string     `json:"requested_by"`
	Created      time.Time  `json:"created"`
	Started      *time.Time `json:"started,omitempty"`
	Completed    *time.Time `json:"completed,omitempty"`
	Message      string     `json:"message,omitempty"`
	Result       *RunResult `json:"result,omitempty"`
	// AccessRecords counts the records sent to the logs and metrics
	// pipeline; only runs that target an application send them.
	AccessRecords *RecordCount `json:"access_records,omitempty"`
}

// RunResult is what a run measured, in the shape of the reference
// document's test report. Times are milliseconds, durations seconds.
type RunResult struct {
	// Refused names, one sentence per host, the requests that were not
	// sent because their host is not an alias of the account's
	// applications any more; they count as errors.
	Refused          []string          `json:"refused,omitempty"`
	Duration         float64           `json:"duration"`
	VirtualUsers     int               `json:"virtual_users"`
	Capped           bool              `json:"capped"`
	AggregateMetrics AggregateMetrics  `json:"aggregate_metrics"`
	SessionTemplates []SessionTemplate `json:"session_templates"`
}

// AggregateMetrics cover every request of a run.
type AggregateMetrics struct {
	RequestCount      int             `json:"request_count"`
	ErrorCount        int             `json:"error_count"`
	BytesIn           int64           `json:"bytes_in"`
	AverageThroughput float64         `json:"average_throughput"`
	AverageTTFB       float64         `json:"average_ttfb"`
	TTFB              Latency         `json:"ttfb"`
	Latency           Latency         `json:"latency"`
	ResponseCounts    []ResponseCount `json:"response_counts"`
}

// Latency summarises a distribution, in milliseconds.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// ResponseCount is how many answers had a status code.
type ResponseCount struct {
	Code  int `json:"code"`
	Count int `json:"count"`
}

// SessionTemplate is one session's share of a run.
type SessionTemplate struct {
	Name             string            `json:"name"`
	RunCount         int               `json:"run_count"`
	FailureCount     int               `json:"failure_count"`
	RequestTemplates []RequestTemplate `json:"request_templates"`
}

// RequestTemplate is one request template's share of a run.
type RequestTemplate struct {
	Name     string         `json:"name"`
	URL      string         `json:"url"`
	Constant bool           `json:"constant,omitempty"`
	Metrics  RequestMetrics `json:"metrics"`
	// Refused says why the template's requests were not sent (each turn
	// is an error in its metrics).
	Refused string `json:"refused,omitempty"`
}

// RequestMetrics of one request template. ResponseCounts lists its most
// frequent codes (maxTemplateCodes); OtherCount the answers with any other.
type RequestMetrics struct {
	RequestCount   int             `json:"request_count"`
	ErrorCount     int             `json:"error_count"`
	AverageTTFB    float64         `json:"average_ttfb"`
	ResponseCounts []ResponseCount `json:"response_counts"`
	OtherCount     int             `json:"other_count,omitempty"`
}

// maxTemplateCodes bounds the codes listed per request template, so a
// run's record stays far below the item limit whatever a server answers.
const maxTemplateCodes = 10

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func latencyOut(s loadgen.Stats) Latency {
	return Latency{Mean: ms(s.Mean), P50: ms(s.P50), P95: ms(s.P95), P99: ms(s.P99), Max: ms(s.Max)}
}

// counts lists codes by count (descending), then code; at most limit
// (0: all), returning the total of those left out.
func counts(m map[int]int, limit int) ([]ResponseCount, int) {
	out := make([]ResponseCount, 0, len(m))
	for c, n := range m {
		out = append(out, ResponseCount{Code: c, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Code < out[j].Code
	})
	other := 0
	if limit > 0 && len(out) > limit {
		for _, rc := range out[limit:] {
			other += rc.Count
		}
		out = out[:limit]
	}
	return out, other
}

func resultOut(r loadgen.Result) *RunResult {
	secs := r.Duration.Seconds()
	out := &RunResult{Duration: math.Round(secs*1000) / 1000, VirtualUsers: r.VirtualUsers, Capped: r.Capped, SessionTemplates: []SessionTemplate{}}
	agg := &out.AggregateMetrics
	agg.RequestCount, agg.ErrorCount, agg.BytesIn = r.Requests, r.Errors, r.BytesIn
	if secs > 0 {
		agg.AverageThroughput = math.Round(float64(r.Requests)/secs*1000) / 1000
	}
	agg.AverageTTFB, agg.TTFB, agg.Latency = ms(r.TTFB.Mean), latencyOut(r.TTFB), latencyOut(r.Latency)
	agg.ResponseCounts, _ = counts(r.Codes, 0)
	for _, s := range r.Sessions {
		st := SessionTemplate{Name: s.Name, RunCount: s.Runs, FailureCount: s.Failures, RequestTemplates: []RequestTemplate{}}
		for _, rq := range s.Requests {
			m := RequestMetrics{RequestCount: rq.Requests, ErrorCount: rq.Errors}
			if answered := rq.Requests - rq.Errors; answered > 0 {
				m.AverageTTFB = ms(rq.TTFBSum / time.Duration(answered))
			}
			m.ResponseCounts, m.OtherCount = counts(rq.Codes, maxTemplateCodes)
			st.RequestTemplates = append(st.RequestTemplates, RequestTemplate{Name: rq.Name, URL: rq.URL, Constant: rq.Constant, Metrics: m, Refused: rq.Refused})
		}
		out.SessionTemplates = append(out.SessionTemplates, st)
	}
	return out
}

func TestHref(id string) string { return "/v2/tests/" + id }
func AppHref(id string) string  { return "/v2/applications/" + id }
func UserHref(id string) string { return "/v2/users/" + id }

// out renders a stored test. A summary or run that does not decode (it
// never should: this package wrote it) is left out rather than failing
// the read.
func Out(t domain.AppTest) ApplicationTest {
	o := ApplicationTest{ID: t.ID, Href: TestHref(t.ID), Description: t.Description, Created: t.Created, Updated: t.Updated,
		Configuration: &Configuration{MediaType: t.MediaType, Filename: t.Filename, Size: t.Archive.Size, SHA256: t.Archive.SHA256, Updated: t.ArchiveUpdated}}
	_ = json.Unmarshal([]byte(t.Summary), &o.Configuration.configSummary)
	if t.Run != "" {
		var r Run
		if json.Unmarshal([]byte(t.Run), &r) == nil {
			o.LastRun = &r
		}
	}
	return o
}
