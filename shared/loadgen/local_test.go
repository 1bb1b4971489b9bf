package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// target is a loopback server that counts what it receives.
type target struct {
	*httptest.Server
	mu      sync.Mutex
	paths   map[string]int
	loadIDs map[string]int
	users   map[string]int
	total   atomic.Int64
}

func newTarget(t *testing.T) *target {
	tg := &target{paths: map[string]int{}, loadIDs: map[string]int{}, users: map[string]int{}}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.total.Add(1)
		u, _, _ := r.BasicAuth()
		tg.mu.Lock()
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
	}))
	t.Cleanup(tg.Close)
	return tg
}

func TestLocalRunCountsWhatTheServerSaw(t *testing.T) {
	tg := newTarget(t)
	p := Plan{
		LoadID: "load1", Duration: 600 * time.Millisecond, VirtualUsers: 3, SessionProbability: 1,
		Users: []Credential{{"ann", "pw1"}, {"bob", "pw2"}},
		Sessions: []Session{
			{Name: "static", Requests: []Request{
				{Name: "home", Method: "GET", URL: tg.URL + "/", CallConstants: true},
				{Name: "gone", Method: "POST", URL: tg.URL + "/missing"},
				{Name: "moved", Method: "GET", URL: tg.URL + "/moved", Wait: true},
			}, Constants: []Request{{Name: "beacon", Method: "HEAD", URL: tg.URL + "/beacon"}}, WaitTime: 5 * time.Millisecond},
			{Name: "random", Random: true, Length: 4, Requests: []Request{
				{Name: "often", Method: "GET", URL: tg.URL + "/often", Weight: 1},
				{Name: "never", Method: "GET", URL: tg.URL + "/never", Weight: 0},
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
		if s.Arrival.IsZero() || s.Elapsed < s.TTFB || s.Method == "" || !strings.HasPrefix(s.URL, tg.URL) {
			t.Errorf("sample %+v", s)
		}
		samples[s.Status]++
	}
	res, err := Local{}.Run(context.Background(), p)
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
		Sessions: []Session{{Name: "s", Requests: []Request{{Name: "r", Method: "GET", URL: tg.URL + "/"}}}}}
	res, err := Local{MaxDuration: 300 * time.Millisecond, MaxVirtualUsers: 4, IdleTime: 5 * time.Millisecond}.Run(context.Background(), p)
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

func TestLocalRefusesNonLoopbackTargets(t *testing.T) {
	tg := newTarget(t)
	for _, u := range []string{"http://192.0.2.1/", "http://10.0.0.1:8080/x", "https://[2001:db8::1]/", "http://unresolvable.invalid/"} {
		p := Plan{LoadID: "x", Duration: time.Second, VirtualUsers: 1, SessionProbability: 1,
			Sessions: []Session{{Name: "s", Requests: []Request{
				{Name: "ok", Method: "GET", URL: tg.URL + "/"},
				{Name: "bad", Method: "GET", URL: u},
			}}}}
		_, err := Local{}.Run(context.Background(), p)
		if err == nil || !(strings.Contains(err.Error(), "loopback") || strings.Contains(err.Error(), "does not resolve")) {
			t.Errorf("%s: err %v", u, err)
		}
	}
	if n := tg.total.Load(); n != 0 {
		t.Fatalf("a refused plan sent %d requests", n)
	}
	// localhost is loopback.
	p := Plan{LoadID: "x", Duration: 100 * time.Millisecond, VirtualUsers: 1, SessionProbability: 1,
		Sessions: []Session{{Name: "s", Requests: []Request{{Name: "ok", Method: "GET", URL: strings.Replace(tg.URL, "127.0.0.1", "localhost", 1)}}}}}
	if _, err := (Local{}).Run(context.Background(), p); err != nil {
		t.Fatalf("localhost refused: %v", err)
	}
}

func TestLocalCountsTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	p := Plan{LoadID: "x", Duration: 200 * time.Millisecond, VirtualUsers: 2, SessionProbability: 1,
		Sessions: []Session{{Name: "s", Requests: []Request{{Name: "r", Method: "GET", URL: url}}}}}
	res, err := Local{}.Run(context.Background(), p)
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
