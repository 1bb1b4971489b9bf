// Package listscale is the client of the list-pages-at-scale measurement
// (docs/performance.md, List pages at scale), shared by the command that
// runs it against `make run` (infra/cmd/listscale) and the benchmark that
// runs it in-process (infra/local/inproc), so both add the same members
// the same way.
package listscale

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// Client calls the API at Base with the operator key Key.
type Client struct {
	Base, Key string
	HTTP      *http.Client
}

// Do sends body (as JSON, none if nil) and returns the answer's body,
// which must be a 200.
func (c *Client) Do(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Base, "/")+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, out)
	}
	return out, nil
}

// Add creates users and then applications numbered from..to-1 through
// the API, on workers goroutines each. tag goes into their emails and
// aliases, which must be new to the installation.
func (c *Client) Add(ctx context.Context, from, to, workers int, tag string) error {
	err := parallel(from, to, workers, func(i int) error {
		_, err := c.Do(ctx, "POST", "/v2/users", map[string]any{"email": fmt.Sprintf("scale-%s%d@example.com", tag, i), "name": fmt.Sprintf("Scale %d", i)})
		return err
	})
	if err != nil {
		return err
	}
	return parallel(from, to, workers, func(i int) error {
		_, err := c.Do(ctx, "POST", "/v2/applications", map[string]any{"name": fmt.Sprintf("Scale %d", i), "aliases": []string{fmt.Sprintf("s%s%d.example.com", tag, i)}})
		return err
	})
}

// parallel runs f(from..to-1) on workers goroutines, up to the first error.
func parallel(from, to, workers int, f func(i int) error) error {
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
	return g.Wait()
}
