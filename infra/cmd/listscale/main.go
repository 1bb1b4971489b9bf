// Command listscale measures what a collection's first page costs as the
// collection grows, against a running `make run`: the latency of
// GET /v2/users?limit=5 and GET /v2/applications?limit=5 on a fresh
// installation, again once -prefill users and applications make the pages
// full, and again after -n of each in all, added through the API
// (docs/performance.md, List pages at scale). It talks only to the API it is given and adds to
// that installation: run it against a fresh `make run`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"cads/infra/listscale"
)

func main() {
	api := flag.String("api", "http://127.0.0.1:3000", "base URL of the running API (make run)")
	keyFile := flag.String("key-file", ".local/operator.key", "the operator key make run wrote")
	n := flag.Int("n", 1500, "users and applications to add")
	reps := flag.Int("reps", 40, "requests per measurement")
	workers := flag.Int("c", 8, "concurrent creates")
	prefill := flag.Int("prefill", 10, "users and applications added (of the -n) before the full-page measurement")
	flag.Parse()
	raw, err := os.ReadFile(*keyFile)
	if err != nil {
		fail(err)
	}
	c := &client{listscale.Client{Base: *api, Key: strings.TrimSpace(string(raw)), HTTP: &http.Client{Timeout: 30 * time.Second}}}
	paths := []string{"/v2/users?limit=5", "/v2/applications?limit=5"}

	// fresh: the installation as make run starts it (the operator, no
	// application), so the pages hold one user and no application; full:
	// after -prefill of each, a full page with a next one, the shape it
	// keeps at any size. after/full is what the collection's size costs;
	// after/fresh adds what a full page costs over an empty one.
	fresh := c.measure(paths, *reps)
	tag := time.Now().UTC().Format("150405")
	var adding time.Duration
	add := func(from, to int) {
		defer func(t time.Time) { adding += time.Since(t) }(time.Now())
		if err := c.Add(context.Background(), from, to, *workers, tag+"-"); err != nil {
			fail(err)
		}
	}
	pre := min(*prefill, *n)
	add(0, pre)
	full := c.measure(paths, *reps)
	add(pre, *n)
	fmt.Printf("added %d users and %d applications in %v\n\n", *n, *n, adding.Round(time.Millisecond))
	after := c.measure(paths, *reps)
	fmt.Printf("| Request | median fresh | median +%d (full page) | median +%d | +%d / full | +%d / fresh |\n|---|---|---|---|---|---|\n", pre, *n, *n, *n)
	for _, p := range paths {
		fmt.Printf("| `GET %s` | %v | %v | %v | %.2f× | %.2f× |\n", p, fresh[p].Round(10*time.Microsecond), full[p].Round(10*time.Microsecond), after[p].Round(10*time.Microsecond),
			float64(after[p])/float64(full[p]), float64(after[p])/float64(fresh[p]))
	}
}

// client measures pages through the shared listscale client.
type client struct{ listscale.Client }

// measure is the median latency of each path.
func (c *client) measure(paths []string, reps int) map[string]time.Duration {
	m := map[string]time.Duration{}
	for _, p := range paths {
		m[p] = c.median(p, reps)
	}
	return m
}

// median is the median latency of reps sequential GETs of path (after one
// unmeasured request that warms the containers and the caller's key).
func (c *client) median(path string, reps int) time.Duration {
	if _, err := c.Do(context.Background(), "GET", path, nil); err != nil {
		fail(err)
	}
	ds := make([]time.Duration, 0, reps)
	for range reps {
		t := time.Now()
		b, err := c.Do(context.Background(), "GET", path, nil)
		if err != nil {
			fail(err)
		}
		ds = append(ds, time.Since(t))
		var page []json.RawMessage
		if json.Unmarshal(b, &page) != nil || len(page) > 5 {
			fail(fmt.Errorf("GET %s: not a page of at most 5: %.200s", path, b))
		}
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "listscale:", err)
	os.Exit(1)
}
