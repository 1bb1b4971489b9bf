package local_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"cads/shared/openapi"
)

// patchTypes are the media types tried on every PATCH route.
var patchTypes = []string{"application/json", "application/merge-patch+json", "application/json-patch+json", "text/plain"}

// contractPatchTypes maps each PATCH path of the contract to the request
// media types it lists.
func contractPatchTypes(t *testing.T) map[string][]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]any `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(openapi.JSON()), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for path, ops := range doc.Paths {
		op, ok := ops["patch"]
		if !ok {
			continue
		}
		for mt := range op.RequestBody.Content {
			out[path] = append(out[path], mt)
		}
		sort.Strings(out[path])
	}
	return out
}

// TestPatchMediaTypesAreTheContracts: on every PATCH route of the
// contract, each media type the contract lists is accepted (200 on a
// resource that exists, the resource's own 404 on one that does not) and
// any other is 415. A change made with application/merge-patch+json shows
// on the next read.
func TestPatchMediaTypesAreTheContracts(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	root := "/v2/accounts/" + p.Bootstrap.RootAccount
	must := func(method, path string, body any) map[string]any {
		t.Helper()
		r := c.do(method, path, op, body)
		if r.Status != 200 {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Raw)
		}
		return r.Body
	}
	// Resources to patch, by contract path, with a name each patch sets
	// to itself or to a new value.
	type target struct{ href, field, value string }
	targets := map[string]target{}
	sub := must("POST", "/v2/accounts", map[string]any{"name": "Patch tenant"})
	targets["/v2/accounts/{id}"] = target{sub["href"].(string), "name", "Patch tenant"}
	u := must("POST", "/v2/users", map[string]any{"email": "patched@example.com", "name": "Patched"})
	targets["/v2/users/{id}"] = target{"/v2/users/" + u["id"].(string), "name", "Patched"}
	role := must("POST", root+"/roles", map[string]any{"name": "Patch reader",
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/metric-prototypes**"}}}})
	targets["/v2/accounts/{id}/roles/{role_id}"] = target{role["href"].(string), "name", "Patch reader"}
	group := must("POST", root+"/groups", map[string]any{"name": "Patch readers", "roles": []string{role["href"].(string)}})
	targets["/v2/accounts/{id}/groups/{group_id}"] = target{group["href"].(string), "name", "Patch readers"}
	set := must("POST", "/v2/address-sets", map[string]any{"name": "Patch set", "type": "manual", "entries": []any{map[string]any{"address": "192.0.2.0/24"}}})
	targets["/v2/address-sets/{id}"] = target{set["href"].(string), "name", "Patch set"}
	app := must("POST", "/v2/applications", map[string]any{"name": "Patch shop", "aliases": []string{"patch-shop.example.com"}})
	targets["/v2/applications/{id}"] = target{app["href"].(string), "name", "Patch shop"}
	act := must("POST", app["href"].(string)+"/actions", map[string]any{"id": "ping", "url": "https://ops.example.com/ping", "name": "Ping"})
	targets["/v2/applications/{id}/actions/{action_id}"] = target{act["href"].(string), "name", "Ping"}
	pc := must("POST", app["href"].(string)+"/pagecontrols", map[string]any{"name": "Block bots", "mode": "request",
		"conditions": map[string]any{"is_crawler": map[string]any{}}, "actions": []any{map[string]any{"type": "deny", "status_code": "403", "body": "no"}}})
	targets["/v2/applications/{id}/pagecontrols/{pagecontrol_id}"] = target{pc["href"].(string), "name", "Block bots"}

	routes := contractPatchTypes(t)
	if len(routes) < 10 {
		t.Fatalf("the contract has only %d PATCH routes", len(routes))
	}
	for path, listed := range routes {
		tg, ok := targets[path]
		href := tg.href
		if !ok {
			// The caller's own account or identity, so that the
			// authorizer lets the request through to the function.
			href = concretePath(strings.NewReplacer("/v2/accounts/{id}", root, "/v2/users/{id}", "/v2/users/self").Replace(path))
		}
		for _, mt := range patchTypes {
			body := `{}`
			switch {
			case mt == "application/json-patch+json" && ok:
				b, _ := json.Marshal([]any{map[string]any{"op": "replace", "path": "/" + tg.field, "value": tg.value}})
				body = string(b)
			case mt == "application/json-patch+json":
				body = `[]`
			case ok:
				b, _ := json.Marshal(map[string]any{tg.field: tg.value})
				body = string(b)
			}
			st, raw := patchAs(t, p.URL, href, op, mt, body)
			switch {
			case !slices.Contains(listed, mt):
				if st != http.StatusUnsupportedMediaType {
					t.Errorf("PATCH %s as %s (not in the contract): %d %s, want 415", path, mt, st, raw)
				}
			case ok && st != http.StatusOK:
				t.Errorf("PATCH %s as %s (in the contract): %d %s, want 200", path, mt, st, raw)
			case st == http.StatusUnsupportedMediaType:
				t.Errorf("PATCH %s as %s (in the contract, no such resource): 415 %s", path, mt, raw)
			}
		}
		if !ok && slices.Contains(listed, "application/merge-patch+json") {
			t.Errorf("PATCH %s lists merge patch but has no resource in this test", path)
		}
	}

	// A merge patch changes what it names, and null removes a member.
	for path, tg := range targets {
		if !slices.Contains(routes[path], "application/merge-patch+json") {
			continue
		}
		b, _ := json.Marshal(map[string]any{tg.field: tg.value + " 2"})
		if st, raw := patchAs(t, p.URL, tg.href, op, "application/merge-patch+json", string(b)); st != 200 {
			t.Errorf("merge patch of %s: %d %s", path, st, raw)
			continue
		}
		if got := must("GET", tg.href, nil)[tg.field]; got != tg.value+" 2" {
			t.Errorf("after a merge patch of %s: %s %v, want %q", path, tg.field, got, tg.value+" 2")
		}
	}
}

func patchAs(t *testing.T, base, href, secret, mediaType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("PATCH", base+href, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mediaType)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}
