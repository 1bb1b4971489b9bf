// Command bench is the bounded load run of `make bench`: it starts the
// whole local platform in-process on a loopback port, sends a fixed mix of
// authenticated requests from a fixed number of workers for a fixed time,
// and prints requests per second and latency percentiles per endpoint,
// plus the CPU time spent per request: the whole process's, and from a CPU
// profile of the run the authorizer's, the function's and the DynamoDB
// stand-in's shares (the local platform labels each one's goroutines). It
// only ever talks to the platform it started, on 127.0.0.1, and stops by
// itself.
//
// With -wrk it measures the server alone instead: it builds and starts
// make run's binary as its own process, loads one authorized
// GET /v2/accounts/{id} with wrk and reports that process's CPU time per
// request (wrk.go).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
	"golang.org/x/sync/errgroup"

	"cads/infra/local"
)

type target struct {
	name, method, path, body string
}

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long each endpoint is loaded (at most 60s)")
	workers := flag.Int("c", 8, "concurrent clients (at most 64)")
	wrkMode := flag.Bool("wrk", false, "instead: start make run's binary as its own process, load GET /v2/accounts/{root} with wrk (-t2, -c clients, -duration) and report the server process's CPU per request")
	staleness := flag.String("authz-staleness", "", "with -wrk: passed to the platform's -authz-staleness (negative: no authorizer cache); empty keeps make run's default")
	flag.Parse()
	if *duration > time.Minute {
		*duration = time.Minute
	}
	if *workers < 1 || *workers > 64 {
		*workers = 8
	}
	if *wrkMode {
		o := wrkOptions{duration: *duration, threads: 2, connections: *workers, staleness: *staleness}
		if err := runWrk(context.Background(), o); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*duration, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration, workers int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cads-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := local.Start(ctx, local.Options{
		Template: "template.yaml", APIAddr: "127.0.0.1:0", StateDir: filepath.Join(dir, "state"),
		// Only errors: a log line per request would measure the logger.
		Log: slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return err
	}
	defer p.Close(context.Background())
	key := p.Bootstrap.Secret
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}

	// Fixtures the read endpoints need.
	var app struct{ ID string }
	if err := call(client, p.URL, key, "POST", "/v2/applications", `{"name":"bench","aliases":["bench.example.com"]}`, &app); err != nil {
		return fmt.Errorf("fixture application: %w", err)
	}
	root := "/v2/accounts/" + p.Bootstrap.RootAccount
	targets := []target{
		{"whoami (authorizer + users)", "GET", "/v2/users/self/authorization", ""},
		{"unknown route (gateway 404, no authorizer)", "GET", "/v2/nothing/here", ""},
		{"denied by the authorizer", "GET", "/v2/accounts/nosuchaccount", ""},
		{"get account", "GET", root, ""},
		{"list roles", "GET", root + "/roles", ""},
		{"get application", "GET", "/v2/applications/" + app.ID, ""},
		{"list applications", "GET", "/v2/applications", ""},
		{"list tasks", "GET", "/v2/tasks", ""},
		{"list address sets", "GET", "/v2/address-sets", ""},
		{"application metrics", "GET", "/v2/applications/" + app.ID + "/metrics?names=bytes_in,bytes_out&resolution=3600", ""},
		{"application logs", "GET", "/v2/applications/" + app.ID + "/logs", ""},
		{"list application tests", "GET", "/v2/tests", ""},
	}
	fmt.Printf("Load run: %d clients, %s per endpoint, platform on %s (in-process, embedded DynamoDB and SQS)\n\n", workers, duration, p.URL)
	fmt.Println("| Endpoint | requests | req/s | p50 | p99 | non-2xx | CPU per request: process | authorizer | function | DynamoDB stand-in |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, t := range targets {
		r, err := load(client, p.URL, key, t, duration, workers)
		if err != nil {
			return err
		}
		fn, fnCPU := r.function()
		fmt.Printf("| %s `%s %s` | %d | %.0f | %s | %s | %d | %s | %s | %s (%s) | %s |\n", t.name, t.method, shorten(t.path), r.n, float64(r.n)/duration.Seconds(),
			r.pct(0.50), r.pct(0.99), r.non2xx, r.cpuPerReq, r.share(authorizerID), fnCPU, fn, r.share(dynamoComponent))
	}
	fmt.Println("\nThe process column is everything (HTTP client, local gateway, JSON round trips of the events, the stand-in servers, the garbage collector); the other columns are CPU profile samples under each component's label, divided by the requests.")
	return nil
}

// Labels the local platform puts on goroutines (pprof label "component").
const (
	authorizerID    = "AuthorizerFunction"
	dynamoComponent = "dynamodb (local server)"
)

type result struct {
	n, non2xx int
	lat       []time.Duration
	cpuPerReq time.Duration
	// byComponent is CPU time per pprof "component" label over the run.
	byComponent map[string]time.Duration
}

// share is a component's CPU per request.
func (r result) share(component string) time.Duration {
	if r.n == 0 {
		return 0
	}
	return (r.byComponent[component] / time.Duration(r.n)).Round(time.Microsecond)
}

// function is the busiest labelled component that is neither the
// authorizer nor a local server: the function behind the route.
func (r result) function() (string, time.Duration) {
	best := ""
	for c, d := range r.byComponent {
		if c == "" || c == authorizerID || strings.HasSuffix(c, "(local server)") {
			continue
		}
		if best == "" || d > r.byComponent[best] {
			best = c
		}
	}
	if best == "" {
		return "none", 0
	}
	return best, r.share(best)
}

func (r result) pct(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[int(q*float64(len(r.lat)-1))].Round(10 * time.Microsecond)
}

func load(client *http.Client, base, key string, t target, duration time.Duration, workers int) (result, error) {
	var (
		mu   sync.Mutex
		res  result
		g    errgroup.Group // a worker counts its failures in res
		prof bytes.Buffer
	)
	if err := pprof.StartCPUProfile(&prof); err != nil {
		return res, fmt.Errorf("CPU profile: %w", err)
	}
	cpu0 := cpuTime()
	deadline := time.Now().Add(duration)
	for i := 0; i < workers; i++ {
		g.Go(func() error {
			var lat []time.Duration
			bad := 0
			for time.Now().Before(deadline) {
				start := time.Now()
				req, _ := http.NewRequest(t.method, base+t.path, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err != nil {
					bad++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(start))
				if resp.StatusCode >= 300 {
					bad++
				}
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.non2xx += bad
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	pprof.StopCPUProfile()
	var err error
	if res.byComponent, err = cpuByComponent(&prof); err != nil {
		return res, err
	}
	res.n = len(res.lat)
	sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
	if res.n > 0 {
		// The client, gateway, functions and DynamoDB server share this
		// process: this is the whole stack's CPU per request.
		res.cpuPerReq = ((cpuTime() - cpu0) / time.Duration(res.n)).Round(time.Microsecond)
	}
	return res, nil
}

// cpuByComponent sums a CPU profile's samples by their "component" label
// ("" for goroutines without one).
func cpuByComponent(r io.Reader) (map[string]time.Duration, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("parse CPU profile: %w", err)
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			cpu = i
		}
	}
	if cpu < 0 {
		return nil, fmt.Errorf("CPU profile has no cpu/nanoseconds samples")
	}
	out := map[string]time.Duration{}
	for _, s := range p.Sample {
		c := ""
		if l := s.Label["component"]; len(l) > 0 {
			c = l[0]
		}
		out[c] += time.Duration(s.Value[cpu])
	}
	return out, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func call(client *http.Client, base, key, method, path, body string, out any) error {
	req, err := http.NewRequest(method, base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

func shorten(p string) string {
	if len(p) > 40 {
		return p[:40] + "…"
	}
	return p
}
