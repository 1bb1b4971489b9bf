package loadgen

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// site is the host name the plans' URLs carry: it resolves nowhere; the
// driver must deliver to the edge by it.
const site = "http://shop.example.com"

// target is a stand-in edge on loopback that counts what it receives.
type target struct {
	*httptest.Server
	mu      sync.Mutex
	paths   map[string]int
	loadIDs map[string]int
	users   map[string]int
	hosts   map[string]int
	total   atomic.Int64
}

func newTarget(t *testing.T) *target {
	tg := &target{paths: map[string]int{}, loadIDs: map[string]int{}, users: map[string]int{}, hosts: map[string]int{}}
	tg.Server = httptest.NewServer(tg.handler())
	t.Cleanup(tg.Close)
	return tg
}

// newTLSTarget is the same over TLS; its certificate names example.com
// and *.example.com.
func newTLSTarget(t *testing.T) *target {
	tg := &target{paths: map[string]int{}, loadIDs: map[string]int{}, users: map[string]int{}, hosts: map[string]int{}}
	tg.Server = httptest.NewTLSServer(tg.handler())
	t.Cleanup(tg.Close)
	return tg
}

// edge is the driver's Edge for tg.
func (tg *target) edge() Edge {
	if tg.TLS != nil {
		pool := x509.NewCertPool()
		pool.AddCert(tg.Certificate())
		return Edge{Addr: "127.0.0.1:1", TLSAddr: tg.Listener.Addr().String(), RootCAs: pool}
	}
	return Edge{Addr: tg.Listener.Addr().String()}
}

func (tg *target) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.total.Add(1)
		u, _, _ := r.BasicAuth()
		tg.mu.Lock()
		tg.hosts[r.Host]++
		tg.paths[r.Method+" "+r.URL.Path]++
		tg.loadIDs[r.Header.Get(LoadIDHeader)]++
		tg.users[u]++
		tg.mu.Unlock()
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/moved":
			http.Redirect(w, r, "/", http.StatusFound)
		default:
			_, _ = w.Write([]byte("hello"))
		}
	})
}

func TestLocalRunCountsWhatTheServerSaw(t *testing.T) {
	tg := newTarget(t)
	p := Plan{
		LoadID: "load1", Duration: 600 * time.Millisecond, VirtualUsers: 3, SessionProbability: 1,
		Users: []Credential{{"ann", "pw1"}, {"bob", "pw2"}},
		Sessions: []Session{
			{Name: "static", Requests: []Request{
				{Name: "home", Method: "GET", URL: site + "/", CallConstants: true},
				{Name: "gone", Method: "POST", URL: site + "/missing"},
				{Name: "moved", Method: "GET", URL: site + "/moved", Wait: true},
			}, Constants: []Request{{Name: "beacon", Method: "HEAD", URL: site + "/beacon"}}, WaitTime: 5 * time.Millisecond},
			{Name: "random", Random: true, Length: 4, Requests: []Request{
				{Name: "often", Method: "GET", URL: site + "/often", Weight: 1},
				{Name: "never", Method: "GET", URL: site + "/never", Weight: 0},
			}},
		},
	}
	var (
		omu     sync.Mutex
		samples = map[int]int{}
	)
	p.Observe = func(s Sample) {
		omu.Lock()
		defer omu.Unlock()
		if s.Arrival.IsZero() || s.Elapsed < s.TTFB || s.Method == "" || !strings.HasPrefix(s.URL, site) {
			t.Errorf("sample %+v", s)
		}
		samples[s.Status]++
	}
	res, err := Local{Edge: tg.edge()}.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	omu.Lock()
	for code, n := range res.Codes {
		if samples[code] != n {
			t.Errorf("observed %d answers %d, counted %d", samples[code], code, n)
		}
	}
	omu.Unlock()
	if got := tg.total.Load(); int64(res.Requests) != got || got == 0 {
		t.Fatalf("result counts %d requests, the server saw %d", res.Requests, got)
	}
	if res.Errors != 0 {
		t.Fatalf("%d errors", res.Errors)
	}
	sum := 0
	for _, n := range res.Codes {
		sum += n
	}
	if sum != res.Requests || res.Codes[404] == 0 || res.Codes[302] == 0 || res.Codes[200] == 0 {
		t.Fatalf("codes %v for %d requests", res.Codes, res.Requests)
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if tg.loadIDs["load1"] != res.Requests || len(tg.loadIDs) != 1 {
		t.Fatalf("load ids seen %v", tg.loadIDs)
	}
	if tg.paths["GET /never"] != 0 || tg.paths["GET /often"] == 0 {
		t.Fatalf("weights not honoured: %v", tg.paths)
	}
	// Constants follow the request that calls them, and only it.
	if tg.paths["HEAD /beacon"] == 0 || tg.paths["HEAD /beacon"] > tg.paths["GET /"] {
		t.Fatalf("constants: %v", tg.paths)
	}
	// Redirects are recorded, not followed: "/" is reached only directly,
	// so it and its constant differ by at most the runs cut off at the end.
	if d := tg.paths["GET /"] - tg.paths["HEAD /beacon"]; d < 0 || d > p.VirtualUsers {
		t.Fatalf("redirects followed? %v", tg.paths)
	}
	if tg.hosts["shop.example.com"] != res.Requests || len(tg.hosts) != 1 {
		t.Fatalf("hosts seen by the edge %v", tg.hosts)
	}
	if tg.users["ann"] == 0 || tg.users["bob"] == 0 || tg.users[""] != 0 {
		t.Fatalf("credentials: %v", tg.users)
	}
	st := res.Sessions[0]
	// Every run meets a 404, but those cut off at the end.
	if st.Runs == 0 || st.Failures > st.Runs || st.Failures < st.Runs-p.VirtualUsers {
		t.Fatalf("static session: %d runs, %d failures", st.Runs, st.Failures)
	}
	perTemplate := 0
	for _, s := range res.Sessions {
		for _, r := range s.Requests {
			perTemplate += r.Requests
		}
	}
	if perTemplate != res.Requests {
		t.Fatalf("templates count %d, total %d", perTemplate, res.Requests)
	}
	if res.TTFB.Max <= 0 || res.TTFB.P50 > res.TTFB.P99 || res.Latency.Mean < res.TTFB.Mean/2 || res.BytesIn == 0 {
		t.Fatalf("stats %+v %+v bytes %d", res.TTFB, res.Latency, res.BytesIn)
	}
	if res.VirtualUsers != 3 || res.Capped || res.Duration < p.Duration {
		t.Fatalf("ran %d users for %v (capped %v)", res.VirtualUsers, res.Duration, res.Capped)
	}
}

func TestLocalCapsAndProbability(t *testing.T) {
	tg := newTarget(t)
	p := Plan{LoadID: "x", Duration: time.Hour, VirtualUsers: 500, SessionProbability: 0.5,
		Sessions: []Session{{Name: "s", Requests: []Request{{Name: "r", Method: "GET", URL: site + "/"}}}}}
	res, err := Local{Edge: tg.edge(), MaxDuration: 300 * time.Millisecond, MaxVirtualUsers: 4, IdleTime: 5 * time.Millisecond}.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Capped || res.VirtualUsers != 4 || res.Duration > 5*time.Second {
		t.Fatalf("not capped: %+v", res)
	}
	if int64(res.Requests) != tg.total.Load() || res.Requests == 0 {
		t.Fatalf("result %d, server %d", res.Requests, tg.total.Load())
	}
}

// trap is a listener at an address a URL names; it counts the
// connections it accepts.
func trap(t *testing.T) (string, *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_ = c.Close()
		}
	}()
	return ln.Addr().String(), &n
}

// Whatever address a URL names (a listener of this machine, the metadata
// service, a name), every connection goes to the edge and the request
// carries the URL's host.
func TestLocalSendsOnlyToTheEdge(t *testing.T) {
	tg := newTarget(t)
	trapAddr, accepted := trap(t)
	_, trapPort, _ := net.SplitHostPort(trapAddr)
	urls := map[string]string{
		"http://" + trapAddr + "/a":                trapAddr,
		"http://localhost:" + trapPort + "/b":      "localhost:" + trapPort,
		"http://169.254.169.254/latest/meta-data/": "169.254.169.254",
		"http://[::1]:" + trapPort + "/c":          "[::1]:" + trapPort,
		site + "/d":                                "shop.example.com",
	}
	var reqs []Request
	for u := range urls {
		reqs = append(reqs, Request{Name: u, Method: "GET", URL: u})
	}
	var (
		dmu    sync.Mutex
		dialed = map[string]int{}
	)
	l := Local{Edge: tg.edge(), Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		dmu.Lock()
		dialed[address]++
		dmu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}}
	p := Plan{LoadID: "x", Duration: 300 * time.Millisecond, VirtualUsers: 2, SessionProbability: 1,
		Sessions: []Session{{Name: "s", Requests: reqs}}}
	res, err := l.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || int64(res.Requests) != tg.total.Load() || res.Requests < len(urls) {
		t.Fatalf("%d requests, %d errors; the edge saw %d", res.Requests, res.Errors, tg.total.Load())
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the address a URL named got %d connections", n)
	}
	dmu.Lock()
	defer dmu.Unlock()
	if len(dialed) != 1 || dialed[tg.Listener.Addr().String()] == 0 {
		t.Fatalf("dialled %v, want only the edge %s", dialed, tg.Listener.Addr())
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	for u, host := range urls {
		if tg.hosts[host] == 0 {
			t.Errorf("%s: the edge never saw Host %q (saw %v)", u, host, tg.hosts)
		}
	}
}

// https goes to the edge's TLS endpoint, with the URL's host as the server
// name the edge's certificate is checked against.
func TestLocalSendsHTTPSToTheEdgesTLSEndpoint(t *testing.T) {
	tg := newTLSTarget(t)
	p := Plan{LoadID: "x", Duration: 200 * time.Millisecond, VirtualUsers: 1, SessionProbability: 1,
		Sessions: []Session{{Name: "s", Requests: []Request{{Name: "r", Method: "GET", URL: "https://shop.example.com/secure"}}}}}
	res, err := Local{Edge: tg.edge()}.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 || int64(res.Requests) != tg.total.Load() {
		t.Fatalf("%d requests, %d errors; the edge saw %d", res.Requests, res.Errors, tg.total.Load())
	}
	// A name the edge's certificate does not cover fails the handshake:
	// the server name really is the URL's host.
	p.Sessions[0].Requests[0].URL = "https://shop.example.org/secure"
	before := tg.total.Load()
	res, err = Local{Edge: tg.edge()}.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != res.Requests || tg.total.Load() != before {
		t.Fatalf("uncovered name: %d requests, %d errors", res.Requests, res.Errors)
	}
}

func TestLocalNeedsAnEdge(t *testing.T) {
	p := Plan{LoadID: "x", Duration: time.Second, VirtualUsers: 1, SessionProbability: 1,
		Sessions: []Session{{Name: "s", Requests: []Request{{Name: "r", Method: "GET", URL: site + "/"}}}}}
	if _, err := (Local{}).Run(context.Background(), p); err == nil || !strings.Contains(err.Error(), "no edge") {
		t.Fatalf("no edge: %v", err)
	}
	p.Sessions[0].Requests[0].URL = "https://shop.example.com/"
	if _, err := (Local{Edge: Edge{Addr: "127.0.0.1:1"}}).Run(context.Background(), p); err == nil || !strings.Contains(err.Error(), "no TLS endpoint") {
		t.Fatalf("https without a TLS edge: %v", err)
	}
}

// A refused request is counted as a failed request with its reason and
// never sent; a session of refused requests only does not spin.
func TestLocalRefusedRequestsAreErrorsNotSent(t *testing.T) {
	tg := newTarget(t)
	p := Plan{LoadID: "x", Duration: 300 * time.Millisecond, VirtualUsers: 2, SessionProbability: 1,
		Sessions: []Session{
			{Name: "mixed", Requests: []Request{
				{Name: "ok", Method: "GET", URL: site + "/ok"},
				{Name: "gone", Method: "GET", URL: "http://old.example.com/x", Refused: "old.example.com is no longer an alias"},
			}},
			{Name: "refused", Requests: []Request{{Name: "gone", Method: "GET", URL: "http://old.example.com/y", Refused: "old.example.com is no longer an alias"}}},
		}}
	res, err := Local{Edge: tg.edge(), IdleTime: 20 * time.Millisecond}.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	mixed, refused := res.Sessions[0], res.Sessions[1]
	ok, gone := mixed.Requests[0], mixed.Requests[1]
	if int64(ok.Requests) != tg.total.Load() || ok.Errors != 0 || ok.Refused != "" {
		t.Fatalf("sent requests: %+v; the edge saw %d", ok, tg.total.Load())
	}
	if gone.Requests == 0 || gone.Errors != gone.Requests || gone.Refused != "old.example.com is no longer an alias" || len(gone.Codes) != 0 {
		t.Fatalf("refused request: %+v", gone)
	}
	r := refused.Requests[0]
	if r.Requests == 0 || r.Errors != r.Requests || refused.Failures != refused.Runs || refused.Runs == 0 {
		t.Fatalf("refused session: %+v", refused)
	}
	// Each refused-only iteration pauses IdleTime: 2 users for 300 ms.
	if r.Requests > 2*(300/20+2) {
		t.Fatalf("a refused-only session spun: %d turns", r.Requests)
	}
	if res.Errors != gone.Requests+r.Requests || res.Requests != ok.Requests+gone.Requests+r.Requests {
		t.Fatalf("totals %d requests %d errors", res.Requests, res.Errors)
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if tg.hosts["old.example.com"] != 0 {
		t.Fatalf("a refused request reached the edge: %v", tg.hosts)
	}
}

func TestLocalCountsTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	edge := srv.Listener.Addr().String()
	srv.Close() // nothing listens there any more
	p := Plan{LoadID: "x", Duration: 200 * time.Millisecond, VirtualUsers: 2, SessionProbability: 1,
		Sessions: []Session{{Name: "s", Requests: []Request{{Name: "r", Method: "GET", URL: site + "/"}}}}}
	res, err := Local{Edge: Edge{Addr: edge}}.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != res.Requests || len(res.Codes) != 0 || res.Sessions[0].Failures != res.Sessions[0].Runs {
		t.Fatalf("%+v", res)
	}
}

func TestPlanValidate(t *testing.T) {
	ok := Session{Name: "s", Requests: []Request{{Name: "r", Method: "GET", URL: "http://127.0.0.1/"}}}
	for name, p := range map[string]Plan{
		"no duration":  {VirtualUsers: 1, SessionProbability: 1, Sessions: []Session{ok}},
		"no users":     {Duration: time.Second, SessionProbability: 1, Sessions: []Session{ok}},
		"probability":  {Duration: time.Second, VirtualUsers: 1, SessionProbability: 1.5, Sessions: []Session{ok}},
		"no sessions":  {Duration: time.Second, VirtualUsers: 1, SessionProbability: 1},
		"relative url": {Duration: time.Second, VirtualUsers: 1, SessionProbability: 1, Sessions: []Session{{Name: "s", Requests: []Request{{Name: "r", Method: "GET", URL: "/x"}}}}},
		"ftp":          {Duration: time.Second, VirtualUsers: 1, SessionProbability: 1, Sessions: []Session{{Name: "s", Requests: []Request{{Name: "r", Method: "GET", URL: "ftp://127.0.0.1/"}}}}},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
