package local_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
)

// condReply is a reply with the headers conditional requests are about.
type condReply struct {
	reply
	ETag string
}

// doIf is client.do with request headers (If-Match, If-None-Match); a 304
// has no body and no Content-Type, which do refuses.
func (c client) doIf(method, path, secret string, body any, header map[string]string) condReply {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := condReply{reply: reply{Status: res.StatusCode, Raw: string(raw)}, ETag: res.Header.Get("ETag")}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// TestConditionalRequests walks, through the gateway, every resource kind
// that carries an ETag: the tag on create, read and update; a read with
// the current tag in If-None-Match is a 304 without a body; a PATCH and a
// DELETE with a stale If-Match are 412 and change nothing; with the
// current tag they apply.
func TestConditionalRequests(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	root := "/v2/accounts/" + p.Bootstrap.RootAccount

	must := func(t *testing.T, want int, method, path string, body any, header map[string]string) condReply {
		t.Helper()
		r := c.doIf(method, path, op, body, header)
		if r.Status != want {
			t.Fatalf("%s %s %v: %d, want %d: %s", method, path, header, r.Status, want, r.Raw)
		}
		return r
	}
	app := must(t, 200, "POST", "/v2/applications", map[string]any{"name": "Tagged shop", "aliases": []string{"etag.example.com"}}, nil).Body["href"].(string)
	role := must(t, 200, "POST", root+"/roles", map[string]any{"name": "Tagged reader",
		"permissions": []any{map[string]any{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications/*"}}}}, nil).Body["href"].(string)

	kinds := []struct {
		name, collection string
		create, patch    map[string]any
		field            string // changed by patch
	}{
		{"role", root + "/roles", map[string]any{"name": "Tagged editor"}, map[string]any{"description": "edited"}, "description"},
		{"group", root + "/groups", map[string]any{"name": "Tagged group", "roles": []string{role}}, map[string]any{"name": "Retagged group"}, "name"},
		{"entitlement", root + "/entitlements", map[string]any{"resource": "applications", "quantity": 3}, map[string]any{"quantity": 4}, "quantity"},
		{"action", app + "/actions", map[string]any{"id": "ping", "url": "https://ops.example.com/ping"}, map[string]any{"description": "edited"}, "description"},
		{"page control", app + "/pagecontrols", map[string]any{"name": "Block bots", "mode": "request",
			"conditions": map[string]any{"is_crawler": map[string]any{}}, "actions": []any{map[string]any{"type": "deny", "status_code": "403", "body": "no"}}},
			map[string]any{"name": "Block more bots"}, "name"},
		{"application", "/v2/applications", map[string]any{"name": "Second shop", "aliases": []string{"etag2.example.com"}}, map[string]any{"name": "Renamed shop"}, "name"},
	}
	t.Run("account", func(t *testing.T) {
		created := must(t, 200, "POST", "/v2/accounts", map[string]any{"name": "Tagged account"}, nil)
		href := created.Body["href"].(string)
		v1 := must(t, 200, "GET", href, nil, nil)
		if v1.ETag == "" || v1.ETag != created.ETag {
			t.Fatalf("GET ETag %q, the create answered %q", v1.ETag, created.ETag)
		}
		must(t, 304, "GET", href, nil, map[string]string{"If-None-Match": v1.ETag})
		v2 := must(t, 200, "PATCH", href, map[string]any{"keyword": "tagged-one"}, map[string]string{"If-Match": v1.ETag})
		if v2.ETag == v1.ETag || v2.ETag == "" {
			t.Fatalf("PATCH ETag %q, before it %q: must change", v2.ETag, v1.ETag)
		}
		if r := c.doIf("PATCH", href, op, map[string]any{"keyword": "tagged-two"}, map[string]string{"If-Match": v1.ETag}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
			t.Fatalf("PATCH with a stale If-Match: %d %s", r.Status, r.Raw)
		}
		if now := must(t, 200, "GET", href, nil, nil); now.Body["keyword"] != "tagged-one" || now.ETag != v2.ETag {
			t.Errorf("after the refused PATCH: %s (ETag %q, want %q)", now.Raw, now.ETag, v2.ETag)
		}
	})
	// A metric prototype never changes: its tag is fixed, and a DELETE
	// naming another tag changes nothing.
	t.Run("metric prototype", func(t *testing.T) {
		created := must(t, 200, "POST", "/v2/metric-prototypes", map[string]any{"default_name": "tagged_pages", "expression": "count()", "log_type": "proxy-logs"}, nil)
		href := created.Body["href"].(string)
		v := must(t, 200, "GET", href, nil, nil)
		if v.ETag == "" || v.ETag != created.ETag {
			t.Fatalf("GET ETag %q, the create answered %q", v.ETag, created.ETag)
		}
		must(t, 304, "GET", href, nil, map[string]string{"If-None-Match": v.ETag})
		if r := c.doIf("DELETE", href, op, nil, map[string]string{"If-Match": role}); r.Status != 400 {
			t.Errorf("DELETE with an If-Match that is no tag: %d %s", r.Status, r.Raw)
		}
		if r := c.doIf("DELETE", href, op, nil, map[string]string{"If-Match": created.ETag[:len(created.ETag)-2] + `1"`}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
			t.Fatalf("DELETE with another version's tag: %d %s", r.Status, r.Raw)
		}
		must(t, 200, "GET", href, nil, nil)
		must(t, 200, "DELETE", href, nil, map[string]string{"If-Match": v.ETag})
	})
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			created := must(t, 200, "POST", k.collection, k.create, nil)
			href, _ := created.Body["href"].(string)
			if created.ETag == "" || href == "" {
				t.Fatalf("create: no ETag or href: %q %s", created.ETag, created.Raw)
			}
			v1 := must(t, 200, "GET", href, nil, nil)
			if v1.ETag != created.ETag {
				t.Errorf("GET ETag %q, the create answered %q", v1.ETag, created.ETag)
			}
			if r := must(t, 304, "GET", href, nil, map[string]string{"If-None-Match": v1.ETag}); r.Raw != "" || r.ETag != v1.ETag {
				t.Errorf("304: body %q, ETag %q", r.Raw, r.ETag)
			}
			must(t, 200, "GET", href, nil, map[string]string{"If-None-Match": `"not-this-one"`})

			v2 := must(t, 200, "PATCH", href, k.patch, map[string]string{"If-Match": v1.ETag})
			if v2.ETag == "" || v2.ETag == v1.ETag {
				t.Fatalf("PATCH ETag %q, before it %q: must change", v2.ETag, v1.ETag)
			}
			if got := must(t, 200, "GET", href, nil, map[string]string{"If-None-Match": v1.ETag}); got.ETag != v2.ETag {
				t.Errorf("GET after PATCH: ETag %q, the PATCH answered %q", got.ETag, v2.ETag)
			}

			// A second client still holding v1 loses, and says so.
			stale := c.doIf("PATCH", href, op, map[string]any{k.field: k.patch[k.field]}, map[string]string{"If-Match": v1.ETag})
			if stale.Status != 412 || stale.errorType(t) != "precondition_failed" {
				t.Fatalf("PATCH with a stale If-Match: %d %s", stale.Status, stale.Raw)
			}
			if r := c.doIf("DELETE", href, op, nil, map[string]string{"If-Match": v1.ETag}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
				t.Fatalf("DELETE with a stale If-Match: %d %s", r.Status, r.Raw)
			}
			if now := must(t, 200, "GET", href, nil, nil); now.ETag != v2.ETag || now.Raw != v2.Raw {
				t.Errorf("a refused write changed the resource: ETag %q (want %q), body %s", now.ETag, v2.ETag, now.Raw)
			}
			if r := c.doIf("PATCH", href, op, k.patch, map[string]string{"If-Match": "not a tag"}); r.Status != 400 || r.errorType(t) != "bad_request" {
				t.Errorf("a malformed If-Match: %d %s", r.Status, r.Raw)
			}
			must(t, 200, "DELETE", href, nil, map[string]string{"If-Match": v2.ETag})
			must(t, 404, "GET", href, nil, nil)
		})
	}

	// Two administrators edit one role: both read it, the first writes,
	// the second's write, based on what it read, is refused rather than
	// silently overwriting the first's.
	t.Run("TwoAdministrators", func(t *testing.T) {
		r := must(t, 200, "GET", role, nil, nil)
		first := must(t, 200, "PATCH", role, map[string]any{"description": "first"}, map[string]string{"If-Match": r.ETag})
		second := c.doIf("PATCH", role, op, map[string]any{"description": "second"}, map[string]string{"If-Match": r.ETag})
		if second.Status != 412 || second.errorType(t) != "precondition_failed" {
			t.Fatalf("the second administrator's stale PATCH: %d %s", second.Status, second.Raw)
		}
		if now := must(t, 200, "GET", role, nil, nil); now.Body["description"] != "first" || now.ETag != first.ETag {
			t.Errorf("the role after both: %s (ETag %q, want %q)", now.Raw, now.ETag, first.ETag)
		}
		// Many at once from the same read: the version is checked by the
		// write's own condition, so exactly one wins, however they
		// interleave.
		base := must(t, 200, "GET", role, nil, nil)
		const racers = 6
		statuses := make([]int, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				statuses[i] = c.doIf("PATCH", role, op, map[string]any{"description": fmt.Sprintf("racer %d", i)}, map[string]string{"If-Match": base.ETag}).Status
			})
		}
		wg.Wait()
		won := 0
		for _, st := range statuses {
			switch st {
			case 200:
				won++
			case 412:
			default:
				t.Errorf("a racing PATCH answered %d", st)
			}
		}
		if won != 1 {
			t.Errorf("%d racing PATCHes from one read won (%v), want exactly 1", won, statuses)
		}
		// Without If-Match a write still applies to the current state.
		must(t, 200, "PATCH", role, map[string]any{"description": "third"}, nil)
		must(t, 200, "PATCH", role, map[string]any{"description": "fourth"}, map[string]string{"If-Match": "*"})
	})
}
