// Package loadgen runs application test plans: virtual users that replay
// sessions of HTTP requests for a duration, and the latencies and status
// codes they observed. A Driver executes a plan; Local is the driver that
// really sends the requests, every one of them to the platform's edge
// (Edge), whatever address its URL names.
package loadgen

import (
	"context"
	"crypto/x509"
	"net/http"
	"time"
)

// Driver executes a plan and reports what happened. An error means the run
// could not be carried out (an invalid plan, no edge to send to); failed
// and refused requests are results, not errors.
type Driver interface {
	Run(ctx context.Context, p Plan) (Result, error)
}

// Edge is where the platform's edge takes connections: the front door of
// the applications, which routes a request by its Host (and, over TLS, by
// its server name) to the application that has that alias. A driver
// connects to nothing else: a URL's host is only the name the request
// carries, never an address to dial, so a plan cannot reach the
// platform's own endpoints or anyone else's.
type Edge struct {
	// Addr is host:port of the edge's plain HTTP endpoint.
	Addr string
	// TLSAddr is host:port of its HTTPS endpoint; "" when it has none (https
	// requests are then not sent).
	TLSAddr string
	// RootCAs verify the edge's certificates; nil means the system's.
	RootCAs *x509.CertPool
}

// LoadIDHeader carries the run's load id on every request a driver sends,
// so that the target's access records can be attributed to the run (the
// `load_id` log field, docs/api.md#logs).
const LoadIDHeader = "X-Load-Id"

// Plan is one run: who sends what for how long.
type Plan struct {
	LoadID       string
	Duration     time.Duration
	VirtualUsers int
	// SessionProbability is the chance that a virtual user runs a session
	// in one iteration; otherwise it idles for IdleTime.
	SessionProbability float64
	Sessions           []Session
	// Users are credentials handed to virtual users in turn (user i gets
	// Users[i mod len]) and sent as HTTP basic authentication.
	Users []Credential
	// Observe, if set, is called after every request, from the virtual
	// users' goroutines at once; it should return quickly (a slow observer
	// slows the load down).
	Observe func(Sample)
}

// Sample is one request a driver sent, as an access record describes it.
type Sample struct {
	Arrival time.Time // when it was sent
	Method  string
	URL     string
	// Status is the answer's status code; 0 when there was none (Err says
	// why).
	Status        int
	Err           string
	TTFB, Elapsed time.Duration
	ResponseBytes int64
	UserAgent     string
}

// Credential is a user of the tested application.
type Credential struct{ Username, Password string }

// Session is what one visitor does. A static session sends its requests in
// order; a random one sends Length requests, each picked with a
// probability proportional to its Weight.
type Session struct {
	Name      string
	Random    bool
	Length    int
	WaitTime  time.Duration // after a request whose Wait is set
	Requests  []Request
	Constants []Request // sent after each request whose CallConstants is set
}

// Request is one request template.
type Request struct {
	Name          string
	Method        string
	URL           string
	Header        http.Header
	Weight        float64
	Wait          bool
	CallConstants bool
	// Refused, when set, says why the request must not be sent: a driver
	// counts each of its turns as a failed request (an error, no answer)
	// without connecting anywhere, and reports the reason.
	Refused string
}

// Result is what a run observed. Durations are wall-clock.
type Result struct {
	Started, Completed time.Time
	// Duration and VirtualUsers are what actually ran; Capped says a
	// driver limit lowered them below the plan's.
	Duration     time.Duration
	VirtualUsers int
	Capped       bool
	// Requests counts every request: answered (Codes) or failed without
	// an answer (Errors), refused ones (Request.Refused) among the latter.
	Requests int
	Errors   int
	BytesIn  int64
	Codes    map[int]int
	// TTFB is the time to the response headers, Latency to the end of the
	// body.
	TTFB, Latency Stats
	Sessions      []SessionResult
}

// SessionResult is one session template's share of a run.
type SessionResult struct {
	Name string
	// Runs counts the iterations that ran the session; Failures those in
	// which a request failed or was answered with a status of 400 or more.
	Runs, Failures int
	Requests       []RequestResult // the session's requests, then its constants
}

// RequestResult is one request template's share of a run.
type RequestResult struct {
	Name     string
	URL      string
	Constant bool
	Requests int
	Errors   int
	TTFBSum  time.Duration
	Codes    map[int]int
	// Refused is the template's Request.Refused: its requests were
	// counted as errors and not sent.
	Refused string
}

// Stats summarise a latency distribution.
type Stats struct {
	Mean, P50, P95, P99, Max time.Duration
}
