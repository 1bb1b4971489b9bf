// Command listscale measures what a collection's first page costs as the
// collection grows, against a running `make run`: the latency of
// GET /v2/users?limit=5 and GET /v2/applications?limit=5, then again after
// it adds -n users and -n applications through the API (docs/performance.md,
// List pages at scale). It talks only to the API it is given and adds to
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
	flag.Parse()
	raw, err := os.ReadFile(*keyFile)
	if err != nil {
		fail(err)
	}
	c := &client{base: strings.TrimSuffix(*api, "/"), key: strings.TrimSpace(string(raw)), http: &http.Client{Timeout: 30 * time.Second}}
	paths := []string{"/v2/users?limit=5", "/v2/applications?limit=5"}

	before := map[string]time.Duration{}
	for _, p := range paths {
		before[p] = c.median(p, *reps)
	}
	tag := time.Now().UTC().Format("150405")
	start := time.Now()
	c.parallel(*n, *workers, func(i int) error {
		return c.post("/v2/users", map[string]any{"email": fmt.Sprintf("scale-%s-%d@example.com", tag, i), "name": fmt.Sprintf("Scale %d", i)})
	})
	c.parallel(*n, *workers, func(i int) error {
		return c.post("/v2/applications", map[string]any{"name": fmt.Sprintf("Scale %d", i), "aliases": []string{fmt.Sprintf("s%s-%d.example.com", tag, i)}})
	})
	fmt.Printf("added %d users and %d applications in %v\n\n", *n, *n, time.Since(start).Round(time.Millisecond))
	fmt.Printf("| Request | median before | median after (+%d) | after / before |\n|---|---|---|---|\n", *n)
	for _, p := range paths {
		after := c.median(p, *reps)
		fmt.Printf("| `GET %s` | %v | %v | %.2f× |\n", p, before[p].Round(10*time.Microsecond), after.Round(10*time.Microsecond), float64(after)/float64(before[p]))
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

func (c *client) parallel(n, workers int, f func(i int) error) {
	var (
		next atomic.Int64
		g    errgroup.Group
	)
	for range workers {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
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
