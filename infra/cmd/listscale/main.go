// Command listscale measures what a collection's first page costs as the
// collection grows, against a running `make run`: the latency of
// GET /v2/users?limit=5 and GET /v2/applications?limit=5 on a fresh
// installation, again once -prefill users and applications make the pages
// full, and again after -n of each in all, added through the API
// (docs/performance.md, List pages at scale). It talks only to the API it is given and adds to
// that installation: run it against a fresh `make run`.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
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
	c := &client{base: strings.TrimSuffix(*api, "/"), key: strings.TrimSpace(string(raw)), http: &http.Client{Timeout: 30 * time.Second}}
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
		c.parallel(from, to, *workers, func(i int) error {
			return c.post("/v2/users", map[string]any{"email": fmt.Sprintf("scale-%s-%d@example.com", tag, i), "name": fmt.Sprintf("Scale %d", i)})
		})
		c.parallel(from, to, *workers, func(i int) error {
			return c.post("/v2/applications", map[string]any{"name": fmt.Sprintf("Scale %d", i), "aliases": []string{fmt.Sprintf("s%s-%d.example.com", tag, i)}})
		})
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

type client struct {
	base, key string
	http      *http.Client
}

func (c *client) do(method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, out)
	}
	return out, nil
}

func (c *client) post(path string, body any) error { _, err := c.do("POST", path, body); return err }

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
	if _, err := c.do("GET", path, nil); err != nil {
		fail(err)
	}
	ds := make([]time.Duration, 0, reps)
	for range reps {
		t := time.Now()
		b, err := c.do("GET", path, nil)
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

// parallel runs f(from..to-1) on workers goroutines.
func (c *client) parallel(from, to, workers int, f func(i int) error) {
	var (
		next atomic.Int64
		g    errgroup.Group
	)
	next.Store(int64(from))
	for range workers {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= to {
					return nil
				}
				if err := f(i); err != nil {
					return err
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "listscale:", err)
	os.Exit(1)
}
