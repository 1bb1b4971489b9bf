package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"
)

// Limits of the local driver: a run on a developer's machine must stay
// short and light, whatever the plan asks for.
const (
	LocalMaxDuration     = 10 * time.Second
	LocalMaxVirtualUsers = 20
)

// Local is the load generator of this project. It really sends the
// plan's requests, from VirtualUsers goroutines for Duration (both capped),
// and only to Edge: every connection goes to the edge's address, the
// URL's host travels as the Host header (and as the TLS server name), and
// no URL is ever resolved or dialled. There is no proxy and redirects are
// not followed, so nothing leads a request elsewhere.
type Local struct {
	Edge            Edge
	MaxDuration     time.Duration // default LocalMaxDuration
	MaxVirtualUsers int           // default LocalMaxVirtualUsers
	// RequestTimeout bounds one request; a run's requests still in flight
	// when its duration ends get at most this long to finish.
	RequestTimeout time.Duration // default 10 s
	// IdleTime is how long a virtual user pauses when it skips a session
	// or its session sent nothing, so that it never spins.
	IdleTime time.Duration // default 100 ms
	// Dial opens the TCP connections, always to Edge.Addr or Edge.TLSAddr
	// (default: a net.Dialer with a 5 s timeout). Tests watch it.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// samplesPerUser bounds the latency samples one virtual user keeps
// (reservoir sampling beyond it), so a long fast run has bounded memory.
const samplesPerUser = 50_000

func (l Local) maxDuration() time.Duration {
	if l.MaxDuration > 0 {
		return l.MaxDuration
	}
	return LocalMaxDuration
}

func (l Local) maxUsers() int {
	if l.MaxVirtualUsers > 0 {
		return l.MaxVirtualUsers
	}
	return LocalMaxVirtualUsers
}

func (l Local) requestTimeout() time.Duration {
	if l.RequestTimeout > 0 {
		return l.RequestTimeout
	}
	return 10 * time.Second
}

func (l Local) idle() time.Duration {
	if l.IdleTime > 0 {
		return l.IdleTime
	}
	return 100 * time.Millisecond
}

func (l Local) dial(ctx context.Context, address string) (net.Conn, error) {
	if l.Dial != nil {
		return l.Dial(ctx, "tcp", address)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	return d.DialContext(ctx, "tcp", address)
}

// Run executes p. It returns an error, having sent nothing, when the plan
// is invalid or there is no edge to send it to.
func (l Local) Run(ctx context.Context, p Plan) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	if err := l.checkEdge(p); err != nil {
		return Result{}, err
	}
	dur, users := p.Duration, p.VirtualUsers
	capped := false
	if dur > l.maxDuration() {
		dur, capped = l.maxDuration(), true
	}
	if users > l.maxUsers() {
		users, capped = l.maxUsers(), true
	}
	// The caller's deadline (the function timeout) wins: stop sending
	// early enough for in-flight requests to finish before it.
	if dl, ok := ctx.Deadline(); ok {
		room := time.Until(dl) - l.requestTimeout() - time.Second
		if room <= 0 {
			return Result{}, errors.New("loadgen: not enough time left before the deadline to run")
		}
		if dur > room {
			dur, capped = room, true
		}
	}

	tr := l.transport(users)
	defer tr.CloseIdleConnections()
	start := time.Now()
	stopAt := start.Add(dur)
	runCtx, cancel := context.WithDeadline(ctx, stopAt.Add(l.requestTimeout()))
	defer cancel()

	tallies := make([]*tally, users)
	var g errgroup.Group // a user's failures are in its tally
	for i := range users {
		g.Go(func() error {
			var cred *Credential
			if len(p.Users) > 0 {
				cred = &p.Users[i%len(p.Users)]
			}
			tallies[i] = l.user(runCtx, tr, p, cred, stopAt)
			return nil
		})
	}
	_ = g.Wait()
	end := time.Now()
	res := merge(p, tallies)
	res.Started, res.Completed = start, end
	res.Duration, res.VirtualUsers, res.Capped = end.Sub(start), users, capped
	return res, nil
}

// Validate checks what every driver needs of a plan.
func (p Plan) Validate() error {
	switch {
	case p.Duration <= 0:
		return errors.New("loadgen: the duration must be positive")
	case p.VirtualUsers < 1:
		return errors.New("loadgen: at least one virtual user is needed")
	case p.SessionProbability <= 0 || p.SessionProbability > 1:
		return fmt.Errorf("loadgen: session probability %v is outside (0, 1]", p.SessionProbability)
	case len(p.Sessions) == 0:
		return errors.New("loadgen: the plan has no session")
	}
	for _, s := range p.Sessions {
		if len(s.Requests) == 0 {
			return fmt.Errorf("loadgen: session %q has no request", s.Name)
		}
		for _, r := range slices.Concat(s.Requests, s.Constants) {
			u, err := url.Parse(r.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("loadgen: request %q of session %q: %q is not an absolute http(s) URL", r.Name, s.Name, r.URL)
			}
			if r.Weight < 0 {
				return fmt.Errorf("loadgen: request %q of session %q has a negative probability", r.Name, s.Name)
			}
		}
	}
	return nil
}

// checkEdge makes sure the edge has an endpoint for every scheme the
// plan sends to.
func (l Local) checkEdge(p Plan) error {
	if l.Edge.Addr == "" {
		return errors.New("no edge is configured: the load generator sends only to the platform's edge")
	}
	for _, s := range p.Sessions {
		for _, r := range slices.Concat(s.Requests, s.Constants) {
			if u, _ := url.Parse(r.URL); r.Refused == "" && u.Scheme == "https" && l.Edge.TLSAddr == "" {
				return fmt.Errorf("request %q of session %q is https, and the edge configured has no TLS endpoint", r.Name, s.Name)
			}
		}
	}
	return nil
}

// transport connects to the edge only: DialContext and DialTLSContext
// ignore the address the URL gave (the transport still keys its pool of
// connections by it, so each alias gets its own connections, with its own
// server name).
func (l Local) transport(users int) *http.Transport {
	return &http.Transport{
		Proxy: nil, // never through a proxy: the edge is the only destination
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return l.dial(ctx, l.Edge.Addr)
		},
		DialTLSContext: func(ctx context.Context, _, address string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return nil, fmt.Errorf("loadgen: TLS server name of %q: %w", address, err)
			}
			raw, err := l.dial(ctx, l.Edge.TLSAddr)
			if err != nil {
				return nil, err
			}
			conn := tls.Client(raw, &tls.Config{ServerName: host, RootCAs: l.Edge.RootCAs, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := conn.HandshakeContext(hctx); err != nil {
				_ = raw.Close()
				return nil, err
			}
			return conn, nil
		},
		MaxIdleConns:        2 * users,
		MaxIdleConnsPerHost: users,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
}

// tally is one virtual user's observations; merged once all are done, so
// the hot path takes no lock.
type tally struct {
	sessions []sessionTally
	requests int
	errors   int
	bytesIn  int64
	codes    map[int]int
	ttfb     reservoir
	latency  reservoir
}

type sessionTally struct {
	runs, failures int
	reqs           []reqTally // requests, then constants
}

type reqTally struct {
	requests, errors int
	ttfbSum          time.Duration
	codes            map[int]int
}

type reservoir struct {
	seen    int
	sum     time.Duration
	max     time.Duration
	samples []time.Duration
}

func (r *reservoir) add(d time.Duration) {
	r.seen++
	r.sum += d
	r.max = max(r.max, d)
	if len(r.samples) < samplesPerUser {
		r.samples = append(r.samples, d)
	} else if j := rand.IntN(r.seen); j < samplesPerUser {
		r.samples[j] = d
	}
}

func newTally(p Plan) *tally {
	t := &tally{codes: map[int]int{}, sessions: make([]sessionTally, len(p.Sessions))}
	for i, s := range p.Sessions {
		t.sessions[i].reqs = make([]reqTally, len(s.Requests)+len(s.Constants))
		for j := range t.sessions[i].reqs {
			t.sessions[i].reqs[j].codes = map[int]int{}
		}
	}
	return t
}

// user is one virtual user: it runs sessions until stopAt.
func (l Local) user(ctx context.Context, tr http.RoundTripper, p Plan, cred *Credential, stopAt time.Time) *tally {
	t := newTally(p)
	for time.Now().Before(stopAt) && ctx.Err() == nil {
		if p.SessionProbability < 1 && rand.Float64() >= p.SessionProbability {
			pause(ctx, l.idle(), stopAt)
			continue
		}
		si := rand.IntN(len(p.Sessions))
		// Each session is a new visitor: a fresh cookie jar.
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Transport: tr, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		// A session whose requests are all refused sends nothing: it
		// pauses too, so refused requests never make a user spin.
		if sent := l.session(ctx, c, p, si, cred, stopAt, t); sent == 0 {
			pause(ctx, l.idle(), stopAt)
		}
	}
	return t
}

// session runs one iteration of session si and returns how many requests
// it sent (refused ones are counted, not sent).
func (l Local) session(ctx context.Context, c *http.Client, p Plan, si int, cred *Credential, stopAt time.Time, t *tally) int {
	s := p.Sessions[si]
	st := &t.sessions[si]
	sent, tried, failed := 0, 0, false
	do := func(ri int) bool {
		if !time.Now().Before(stopAt) || ctx.Err() != nil {
			return false
		}
		var r Request
		if ri < len(s.Requests) {
			r = s.Requests[ri]
		} else {
			r = s.Constants[ri-len(s.Requests)]
		}
		tried++
		if r.Refused != "" {
			t.requests, t.errors, st.reqs[ri].requests, st.reqs[ri].errors = t.requests+1, t.errors+1, st.reqs[ri].requests+1, st.reqs[ri].errors+1
			failed = true
			return true
		}
		if !l.send(ctx, c, p.LoadID, p.Observe, r, cred, t, &st.reqs[ri]) {
			failed = true
		}
		sent++
		return true
	}
	step := func(ri int) bool {
		if !do(ri) {
			return false
		}
		r := s.Requests[ri]
		if r.CallConstants {
			for ci := range s.Constants {
				if !do(len(s.Requests) + ci) {
					return false
				}
			}
		}
		if r.Wait && s.WaitTime > 0 {
			pause(ctx, s.WaitTime, stopAt)
		}
		return true
	}
	if s.Random {
		for range s.Length {
			if !step(pick(s.Requests)) {
				break
			}
		}
	} else {
		for ri := range s.Requests {
			if !step(ri) {
				break
			}
		}
	}
	if tried > 0 {
		st.runs++
		if failed {
			st.failures++
		}
	}
	return sent
}

// pick chooses a request index with probability proportional to its
// weight; all weights zero means uniformly.
func pick(rs []Request) int {
	total := 0.0
	for _, r := range rs {
		total += r.Weight
	}
	if total <= 0 {
		return rand.IntN(len(rs))
	}
	x := rand.Float64() * total
	for i, r := range rs {
		if x < r.Weight {
			return i
		}
		x -= r.Weight
	}
	return len(rs) - 1
}

// send sends one request and records it; it reports whether it succeeded
// (an answer below 400).
func (l Local) send(ctx context.Context, c *http.Client, loadID string, observe func(Sample), r Request, cred *Credential, t *tally, rt *reqTally) bool {
	rctx, cancel := context.WithTimeout(ctx, l.requestTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, r.Method, r.URL, nil)
	if err != nil {
		// Validate parsed every URL; count it as a failed request anyway.
		t.requests, t.errors, rt.requests, rt.errors = t.requests+1, t.errors+1, rt.requests+1, rt.errors+1
		return false
	}
	for k, vs := range r.Header {
		req.Header[k] = slices.Clone(vs)
	}
	req.Header.Set(LoadIDHeader, loadID)
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "cads-loadgen/1")
	}
	if cred != nil {
		req.SetBasicAuth(cred.Username, cred.Password)
	}
	t0 := time.Now()
	resp, err := c.Do(req)
	ttfb := time.Since(t0)
	t.requests++
	rt.requests++
	if err != nil {
		t.errors++
		rt.errors++
		if observe != nil {
			observe(Sample{Arrival: t0, Method: r.Method, URL: r.URL, Err: err.Error(), TTFB: ttfb, Elapsed: ttfb, UserAgent: req.Header.Get("User-Agent")})
		}
		return false
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	elapsed := time.Since(t0)
	t.latency.add(elapsed)
	t.ttfb.add(ttfb)
	t.bytesIn += n
	t.codes[resp.StatusCode]++
	rt.codes[resp.StatusCode]++
	rt.ttfbSum += ttfb
	if observe != nil {
		observe(Sample{Arrival: t0, Method: r.Method, URL: r.URL, Status: resp.StatusCode, TTFB: ttfb, Elapsed: elapsed, ResponseBytes: n, UserAgent: req.Header.Get("User-Agent")})
	}
	return resp.StatusCode < 400
}

// pause sleeps for d, but not past stopAt or ctx's end.
func pause(ctx context.Context, d time.Duration, stopAt time.Time) {
	d = min(d, time.Until(stopAt))
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

func merge(p Plan, ts []*tally) Result {
	res := Result{Codes: map[int]int{}}
	var ttfb, lat reservoir
	for _, t := range ts {
		res.Requests += t.requests
		res.Errors += t.errors
		res.BytesIn += t.bytesIn
		for c, n := range t.codes {
			res.Codes[c] += n
		}
		ttfb.join(t.ttfb)
		lat.join(t.latency)
	}
	res.TTFB, res.Latency = ttfb.stats(), lat.stats()
	for si, s := range p.Sessions {
		sr := SessionResult{Name: s.Name}
		for ri, r := range slices.Concat(s.Requests, s.Constants) {
			rr := RequestResult{Name: r.Name, URL: r.URL, Constant: ri >= len(s.Requests), Codes: map[int]int{}, Refused: r.Refused}
			for _, t := range ts {
				x := t.sessions[si].reqs[ri]
				rr.Requests += x.requests
				rr.Errors += x.errors
				rr.TTFBSum += x.ttfbSum
				for c, n := range x.codes {
					rr.Codes[c] += n
				}
			}
			sr.Requests = append(sr.Requests, rr)
		}
		for _, t := range ts {
			sr.Runs += t.sessions[si].runs
			sr.Failures += t.sessions[si].failures
		}
		res.Sessions = append(res.Sessions, sr)
	}
	return res
}

func (r *reservoir) join(o reservoir) {
	r.seen += o.seen
	r.sum += o.sum
	r.max = max(r.max, o.max)
	r.samples = append(r.samples, o.samples...)
}

func (r *reservoir) stats() Stats {
	if r.seen == 0 {
		return Stats{}
	}
	sort.Slice(r.samples, func(i, j int) bool { return r.samples[i] < r.samples[j] })
	q := func(f float64) time.Duration {
		i := int(f*float64(len(r.samples))+0.5) - 1
		return r.samples[min(max(i, 0), len(r.samples)-1)]
	}
	return Stats{Mean: r.sum / time.Duration(r.seen), P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: r.max}
}
