package local_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// condReply is a reply with the headers conditional requests are about.
type condReply struct {
	reply
	ETag, RetryAfter string
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
	r := condReply{reply: reply{Status: res.StatusCode, Raw: string(raw)}, ETag: res.Header.Get("ETag"), RetryAfter: res.Header.Get("Retry-After")}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// doRaw is doIf with a body of any type (no Content-Type when it is
// empty), for uploads and downloads that are not JSON.
func (c client) doRaw(method, path, secret, contentType, body string, header map[string]string) condReply {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
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
		{"address set", "/v2/address-sets", map[string]any{"name": "Tagged set", "type": "manual", "entries": []any{map[string]any{"address": "192.0.2.0/24"}}},
			map[string]any{"description": "edited"}, "description"},
		{"service user", root + "/service-users", map[string]any{"name": "tagged"}, map[string]any{"description": "edited"}, "description"},
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
		// The deletion's first write (its mark) is conditional on the
		// version too.
		if r := c.doIf("DELETE", href, op, nil, map[string]string{"If-Match": v1.ETag}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
			t.Fatalf("DELETE with a stale If-Match: %d %s", r.Status, r.Raw)
		}
		must(t, 200, "GET", href, nil, map[string]string{"If-Match": v2.ETag})
		must(t, 200, "DELETE", href, nil, map[string]string{"If-Match": v2.ETag})
	})
	// Another version's tag of the same resource: the tags end with the
	// version, so the last digit changed names another.
	otherVersion := func(tag string) string {
		last := tag[len(tag)-2]
		if last == '0' {
			return tag[:len(tag)-2] + `1"`
		}
		return tag[:len(tag)-2] + `0"`
	}
	// Invitations to a service user are accepted at once, so no
	// notification changes them under the test.
	t.Run("invitations", func(t *testing.T) {
		su := must(t, 200, "POST", root+"/service-users", map[string]any{"name": "invitee"}, nil).Body["email"].(string)
		group := must(t, 200, "POST", root+"/groups", map[string]any{"name": "Tagged invitees", "roles": []string{role}}, nil).Body["href"].(string)
		for _, inv := range []struct {
			collection string
			body       map[string]any
		}{
			{root + "/invitations", map[string]any{"user_email": su, "role": role}},
			{root + "/group-invitations", map[string]any{"user_email": su, "group": group}},
		} {
			created := must(t, 200, "POST", inv.collection, inv.body, nil)
			href := created.Body["href"].(string)
			v := must(t, 200, "GET", href, nil, nil)
			if v.ETag == "" || v.ETag != created.ETag {
				t.Fatalf("%s: GET ETag %q, the create answered %q", href, v.ETag, created.ETag)
			}
			must(t, 304, "GET", href, nil, map[string]string{"If-None-Match": v.ETag})
			stale := otherVersion(v.ETag)
			if r := c.doIf("PATCH", href, op, map[string]any{"state": "queued"}, map[string]string{"If-Match": stale}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
				t.Fatalf("%s: PATCH with another version's If-Match: %d %s", href, r.Status, r.Raw)
			}
			if r := c.doIf("DELETE", href, op, nil, map[string]string{"If-Match": stale}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
				t.Fatalf("%s: DELETE with another version's If-Match: %d %s", href, r.Status, r.Raw)
			}
			must(t, 200, "DELETE", href, nil, map[string]string{"If-Match": v.ETag})
			must(t, 404, "GET", href, nil, nil)
		}
	})
	t.Run("user", func(t *testing.T) {
		created := must(t, 200, "POST", "/v2/users", map[string]any{"email": "tagged@example.com", "name": "Tagged"}, nil)
		href := created.Body["href"].(string)
		v1 := must(t, 200, "GET", href, nil, nil)
		if v1.ETag == "" || v1.ETag != created.ETag {
			t.Fatalf("GET ETag %q, the create answered %q", v1.ETag, created.ETag)
		}
		must(t, 304, "GET", href, nil, map[string]string{"If-None-Match": v1.ETag})
		v2 := must(t, 200, "PATCH", href, map[string]any{"name": "Retagged"}, map[string]string{"If-Match": v1.ETag})
		if v2.ETag == "" || v2.ETag == v1.ETag {
			t.Fatalf("PATCH ETag %q, before it %q: must change", v2.ETag, v1.ETag)
		}
		if r := c.doIf("PATCH", href, op, map[string]any{"name": "Lost"}, map[string]string{"If-Match": v1.ETag}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
			t.Fatalf("PATCH with a stale If-Match: %d %s", r.Status, r.Raw)
		}
		if now := must(t, 200, "GET", href, nil, nil); now.Body["name"] != "Retagged" || now.ETag != v2.ETag {
			t.Errorf("after the refused PATCH: %s (ETag %q, want %q)", now.Raw, now.ETag, v2.ETag)
		}
	})
	t.Run("access key", func(t *testing.T) {
		created := must(t, 200, "POST", "/v2/users/self/access-keys", map[string]any{"type": "bearer"}, nil)
		href := created.Body["href"].(string)
		v := must(t, 200, "GET", href, nil, nil)
		if v.ETag == "" || v.ETag != created.ETag {
			t.Fatalf("GET ETag %q, the create answered %q", v.ETag, created.ETag)
		}
		must(t, 304, "GET", href, nil, map[string]string{"If-None-Match": v.ETag})
		if r := c.doIf("DELETE", href, op, nil, map[string]string{"If-Match": otherVersion(v.ETag)}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
			t.Fatalf("DELETE with another version's If-Match: %d %s", r.Status, r.Raw)
		}
		must(t, 200, "GET", href, nil, nil)
		must(t, 200, "DELETE", href, nil, map[string]string{"If-Match": v.ETag})
	})
	// A test: PUT creates (an If-Match names no state it could have), a
	// PATCH replaces the configuration (read, then written on the version
	// read) or only the description (one write on the version named).
	t.Run("test", func(t *testing.T) {
		config := map[string]any{"probabilities": 1, "models": map[string]any{"home": map[string]any{"type": "user.StaticSession",
			"requests": []any{map[string]any{"name": "home", "method": "GET", "url": "http://etag.example.com/"}}}}}
		href := "/v2/tests/tagged"
		if r := c.doIf("PUT", href, op, config, map[string]string{"If-Match": "*"}); r.Status != 412 {
			t.Fatalf("PUT with If-Match: %d %s", r.Status, r.Raw)
		}
		created := must(t, 200, "PUT", href, config, nil)
		v1 := must(t, 200, "GET", href, nil, nil)
		if v1.ETag == "" || v1.ETag != created.ETag {
			t.Fatalf("GET ETag %q, the create answered %q", v1.ETag, created.ETag)
		}
		must(t, 304, "GET", href, nil, map[string]string{"If-None-Match": v1.ETag})
		v2 := must(t, 200, "PATCH", href, config, map[string]string{"If-Match": v1.ETag})
		if v2.ETag == "" || v2.ETag == v1.ETag {
			t.Fatalf("PATCH ETag %q, before it %q: must change", v2.ETag, v1.ETag)
		}
		if r := c.doIf("PATCH", href, op, config, map[string]string{"If-Match": v1.ETag}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
			t.Fatalf("PATCH of the configuration with a stale If-Match: %d %s", r.Status, r.Raw)
		}
		desc := func(tag string) condReply {
			return c.doRaw("PATCH", href, op, "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"desc\"\r\n\r\nretagged\r\n--b--\r\n", map[string]string{"If-Match": tag})
		}
		if r := desc(v1.ETag); r.Status != 412 || r.errorType(t) != "precondition_failed" {
			t.Fatalf("PATCH of the description with a stale If-Match: %d %s", r.Status, r.Raw)
		}
		v3 := desc(v2.ETag)
		if v3.Status != 200 || v3.Body["description"] != "retagged" || v3.ETag == "" || v3.ETag == v2.ETag {
			t.Fatalf("PATCH of the description: %d %s (ETag %q, before it %q)", v3.Status, v3.Raw, v3.ETag, v2.ETag)
		}
		if r := c.doIf("DELETE", href, op, nil, map[string]string{"If-Match": v2.ETag}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
			t.Fatalf("DELETE with a stale If-Match: %d %s", r.Status, r.Raw)
		}
		must(t, 200, "DELETE", href, nil, map[string]string{"If-Match": v3.ETag})
	})
	// An archive's download carries its file's tag; a DELETE whose
	// If-Match does not name every archive of the range deletes none.
	t.Run("archived log", func(t *testing.T) {
		now := time.Now().UTC()
		must(t, 200, "POST", app+"/logs", []any{map[string]any{"created": now.Format(time.RFC3339Nano), "stream": "app", "message": "tagged",
			"address": "192.0.2.7", "filename": "app.log", "hostname": "web-1"}}, nil)
		from := now.Truncate(time.Hour)
		to := from.Add(time.Hour)
		ref := strings.Replace(app, "/v2/applications/", "/v2/archived-logs/applications/", 1) + "/custom"
		task := must(t, 200, "POST", "/v2/tasks?wait=5", map[string]any{"type": "prepare-for-download",
			"parameters": map[string]any{"reference": ref, "from": from.Format(time.RFC3339), "to": to.Format(time.RFC3339), "retention": 5}}, nil)
		if task.Body["state"] != "success" {
			t.Fatalf("prepare-for-download: %s", task.Raw)
		}
		href := ref + "?from=" + url.QueryEscape(from.Format(time.RFC3339)) + "&to=" + url.QueryEscape(to.Format(time.RFC3339))
		v := c.doRaw("GET", href, op, "", "", map[string]string{"Accept": "application/gzip"})
		if v.Status != 200 || v.ETag == "" {
			t.Fatalf("download: %d, ETag %q", v.Status, v.ETag)
		}
		if r := c.doRaw("GET", href, op, "", "", map[string]string{"If-None-Match": v.ETag}); r.Status != 304 || r.Raw != "" || r.ETag != v.ETag {
			t.Fatalf("download with the current If-None-Match: %d %q (ETag %q)", r.Status, r.Raw, r.ETag)
		}
		if r := c.doIf("DELETE", href, op, nil, map[string]string{"If-Match": otherVersion(v.ETag)}); r.Status != 412 || r.errorType(t) != "precondition_failed" {
			t.Fatalf("DELETE naming another archive: %d %s", r.Status, r.Raw)
		}
		if r := c.doRaw("GET", href, op, "", "", nil); r.Status != 200 || r.ETag != v.ETag {
			t.Fatalf("after the refused DELETE: %d (ETag %q, want %q)", r.Status, r.ETag, v.ETag)
		}
		must(t, 200, "DELETE", href, nil, map[string]string{"If-Match": v.ETag})
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
