package local_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"cads/infra/local/localtest"
)

var linkNextRE = regexp.MustCompile(`<([^>]+)>;\s*rel="next"`)

// pageOf GETs one page and returns it with the Link rel=next it names
// ("" for none).
func pageOf(t *testing.T, base, path, secret string) ([]map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var page []map[string]any
	if res.StatusCode != 200 || json.Unmarshal(raw, &page) != nil {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, raw)
	}
	next := ""
	if m := linkNextRE.FindStringSubmatch(res.Header.Get("Link")); m != nil {
		u, err := url.Parse(m[1])
		if err != nil {
			t.Fatal(err)
		}
		next = u.RequestURI()
	}
	return page, next
}

// TestAuditTrail through the local gateway: writes of the operator and of
// a session key are listed newest first with who, what and the change,
// without the secrets the writes handed out; the filters and the paging;
// a sub-account's events in its ancestors' lists; a refusal logged, not
// listed.
func TestAuditTrail(t *testing.T) {
	p, logs := localtest.Start(t)
	c := client{t: t, base: p.URL}
	op := p.Bootstrap.Secret
	root := "/v2/accounts/" + p.Bootstrap.RootAccount
	must := func(r reply, want int) reply {
		t.Helper()
		if r.Status != want {
			t.Fatalf("%d %s, want %d", r.Status, r.Raw, want)
		}
		return r
	}
	events := func(account, secret string, q url.Values) ([]map[string]any, string) {
		t.Helper()
		path := account + "/audit-events"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		r := c.do("GET", path, secret, nil)
		var list []map[string]any
		if r.Status != 200 || json.Unmarshal([]byte(r.Raw), &list) != nil {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
		}
		return list, r.Raw
	}

	a := must(c.do("POST", "/v2/accounts", op, map[string]any{"name": "audited"}), 200).Body["href"].(string)
	sess := must(c.do("POST", "/v2/users/self/authorization", op, map[string]any{"account": a}), 200).Body
	secret := sess["secret_key"].(string)
	b := must(c.do("POST", "/v2/accounts", secret, map[string]any{"name": "audited-child"}), 200).Body["href"].(string)
	must(c.do("PATCH", b, op, map[string]any{"keyword": "kid"}), 200)

	all, raw := events(root, op, nil)
	if strings.Contains(raw, secret) || strings.Contains(raw, secret[strings.LastIndexByte(secret, '_')+1:]) || strings.Contains(raw, "secret_key") {
		t.Fatalf("a secret in the audit trail: %s", raw)
	}
	if len(all) < 4 {
		t.Fatalf("%d events, want at least 4: %s", len(all), raw)
	}
	patch, childPost, switchEv := all[0], all[1], all[2]
	if patch["method"] != "PATCH" || patch["target"] != b || patch["account"] != b || patch["status"] != float64(200) {
		t.Fatalf("newest event: %v", patch)
	}
	ops, _ := json.Marshal(patch["patch"])
	if !strings.Contains(string(ops), `"path":"/keyword"`) || !strings.Contains(string(ops), `"value":"kid"`) {
		t.Fatalf("the PATCH's JSON Patch: %s", ops)
	}
	actor := childPost["actor"].(map[string]any)
	if childPost["method"] != "POST" || childPost["target"] != b || childPost["account"] != a || actor["origin_key"] == nil ||
		!strings.HasPrefix(actor["principal"].(string), "/v2/users/") || childPost["resource"].(map[string]any)["name"] != "audited-child" {
		t.Fatalf("the session key's POST: %v", childPost)
	}
	if switchEv["path"] != "/v2/users/self/authorization" || switchEv["request_id"] == "" || switchEv["source_address"] == "" || switchEv["user_agent"] == "" {
		t.Fatalf("the switch: %v", switchEv)
	}

	// Filters.
	if got, _ := events(root, op, url.Values{"action": {"PATCH"}}); len(got) != 1 || got[0]["id"] != patch["id"] {
		t.Fatalf("action=PATCH: %v", got)
	}
	if got, _ := events(root, op, url.Values{"target": {b}}); len(got) != 2 {
		t.Fatalf("target=%s: %v", b, got)
	}
	if got, _ := events(root, op, url.Values{"actor": {actor["key"].(string)}}); len(got) != 1 || got[0]["id"] != childPost["id"] {
		t.Fatalf("actor=the session key: %v", got)
	}
	if got, _ := events(root, op, url.Values{"to": {childPost["time"].(string)}}); len(got) != len(all)-2 && len(got) != len(all)-1 {
		t.Fatalf("to=%s: %d of %d", childPost["time"], len(got), len(all))
	}
	if r := c.do("GET", root+"/audit-events?action=GET", op, nil); r.Status != 400 {
		t.Fatalf("action=GET: %d", r.Status)
	}

	// Paging: one at a time, the same events in the same order.
	var paged []any
	next := root + "/audit-events?limit=1"
	for i := 0; next != "" && i < len(all)+1; i++ {
		var page []map[string]any
		page, next = pageOf(t, p.URL, next, op)
		for _, e := range page {
			paged = append(paged, e["id"])
		}
	}
	if len(paged) != len(all) {
		t.Fatalf("paged %d events, listed %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i] != all[i]["id"] {
			t.Fatalf("page order %v differs from the list", paged)
		}
	}

	// The sub-account's own list has its event; its parent's too.
	if got, _ := events(b, op, nil); len(got) != 1 || got[0]["id"] != patch["id"] {
		t.Fatalf("the child's events: %v", got)
	}
	if got, _ := events(a, op, nil); len(got) != 2 || got[0]["id"] != patch["id"] || got[1]["id"] != childPost["id"] {
		t.Fatalf("the parent's events: %v", got)
	}

	// A refusal: logged with the event's fields, not listed.
	u := must(c.do("POST", "/v2/users", op, map[string]any{"email": "nobody@example.com"}), 200).Body["id"].(string)
	k := must(c.do("POST", "/v2/users/"+u+"/access-keys", op, map[string]any{"type": "bearer", "account": a}), 200).Body["secret_key"].(string)
	must(c.do("PATCH", b, k, map[string]any{"keyword": "evil"}), 403)
	if got, _ := events(root, op, url.Values{"actor": {u}}); len(got) != 0 {
		t.Fatalf("a refusal was listed: %v", got)
	}
	found := false
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"refused"`) && strings.Contains(l, `"principal":"/v2/users/`+u+`"`) && strings.Contains(l, `"path":"`+b+`"`) && strings.Contains(l, `"status":403`) {
			found = true
		}
	}
	if !found {
		t.Fatal("no log line for the refused PATCH")
	}
}
