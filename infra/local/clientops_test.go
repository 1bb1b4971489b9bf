package local_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestClientOpsThroughTheGateway drives the operations added for clients
// of the reference document through the local gateway and the authorizer:
// held role and group reads, the web control view of page controls, and
// metric prototypes.
func TestClientOpsThroughTheGateway(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	root := "/v2/accounts/" + p.Bootstrap.RootAccount
	must := func(want int, method, path, secret string, body any) reply {
		t.Helper()
		r := c.do(method, path, secret, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, want, r.Raw)
		}
		return r
	}
	id := func(href string) string { return href[strings.LastIndex(href, "/")+1:] }

	t.Run("HeldRoleAndGroup", func(t *testing.T) {
		uid := must(200, "POST", "/v2/users", op, map[string]any{"email": "held@example.com"}).Body["id"].(string)
		dev := must(200, "POST", "/v2/users/"+uid+"/access-keys", op, map[string]any{"type": "bearer", "account": root}).Body["secret_key"].(string)
		role := must(200, "POST", root+"/roles", op, map[string]any{"name": "Prototype reader",
			"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/metric-prototypes**"}}}}).Body["href"].(string)
		group := must(200, "POST", root+"/groups", op, map[string]any{"name": "Readers", "roles": []string{role}}).Body["href"].(string)
		inv := must(200, "POST", root+"/invitations", op, map[string]any{"user_email": "held@example.com", "role": role}).Body
		gi := must(200, "POST", root+"/group-invitations", op, map[string]any{"user_email": "held@example.com", "group": group}).Body
		eventually(t, "the invitations to be sent", func() bool {
			return c.do("GET", inv["href"].(string), op, nil).Body["state"] == "sent" && c.do("GET", gi["href"].(string), op, nil).Body["state"] == "sent"
		})
		must(200, "PATCH", "/v2/users/self/invitations/"+inv["id"].(string), dev, map[string]any{"state": "accepted"})
		must(200, "PATCH", "/v2/users/self/group-invitations/"+gi["id"].(string), dev, map[string]any{"state": "accepted"})

		if r := must(200, "GET", "/v2/users/self/roles/"+id(role), dev, nil); r.Body["href"] != role || r.Body["name"] != "Prototype reader" {
			t.Errorf("held role: %s", r.Raw)
		}
		if r := must(200, "GET", "/v2/users/"+uid+"/groups/"+id(group), dev, nil); r.Body["href"] != group {
			t.Errorf("held group by own id: %s", r.Raw)
		}
		if r := c.do("GET", "/v2/users/self/groups/"+id(role), dev, nil); r.Status != 404 || r.errorType(t) != "not_found" {
			t.Errorf("a role id as a held group: %d %s", r.Status, r.Raw)
		}
		// Another user's held roles are a global route, like the list: no
		// role of the operator's permits /v2/users/*/roles, so both are 403.
		for _, path := range []string{"/v2/users/" + uid + "/roles", "/v2/users/" + uid + "/roles/" + id(role)} {
			if r := c.do("GET", path, op, nil); r.Status != 403 || !strings.Contains(r.Raw, "global route") {
				t.Errorf("the operator reading %s: %d %s", path, r.Status, r.Raw)
			}
		}
		// Leaving the group ends the membership read.
		must(200, "DELETE", "/v2/users/self/groups/"+id(group), dev, nil)
		must(404, "GET", "/v2/users/self/groups/"+id(group), dev, nil)
		must(200, "GET", "/v2/users/self/roles/"+id(role), dev, nil)
	})

	t.Run("WebControls", func(t *testing.T) {
		app := must(200, "POST", "/v2/applications", op, map[string]any{"name": "Web shop", "aliases": []string{"webcontrols.example.com"}}).Body["href"].(string)
		pc := must(200, "POST", app+"/pagecontrols", op, map[string]any{"name": "Block bots", "mode": "request",
			"conditions": map[string]any{"is_crawler": map[string]any{}}, "actions": []any{map[string]any{"type": "deny", "status_code": "403", "body": "no"}}}).Body
		wc := app + "/webcontrols/" + pc["id"].(string)
		r := must(200, "GET", wc, op, nil)
		if r.Body["href"] != wc || r.Body["name"] != "Block bots" || r.Body["version"] != float64(1) {
			t.Errorf("web control: %s", r.Raw)
		}
		if conds, _ := json.Marshal(r.Body["conditions"]); string(conds) != `[{"type":"is_crawler"}]` {
			t.Errorf("conditions: %s", conds)
		}
		list := c.list(t, "GET", app+"/webcontrols?"+url.Values{"attributes": {"+history"}}.Encode(), op)
		if len(list) != 1 || list[0]["href"] != wc || list[0]["history"] == nil {
			t.Errorf("list with history: %v", list)
		}
		if r := c.do("GET", app+"/webcontrols?attributes=nope", op, nil); r.Status != 400 || r.errorType(t) != "bad_request" {
			t.Errorf("bad attributes: %d %s", r.Status, r.Raw)
		}
		if r := c.do("GET", app+"/webcontrols/7", op, nil); r.Status != 404 {
			t.Errorf("missing web control: %d %s", r.Status, r.Raw)
		}
		// Read-only: the gateway routes no write.
		if r := c.do("POST", app+"/webcontrols", op, map[string]any{"name": "x"}); r.Status < 400 || r.Status >= 500 {
			t.Errorf("POST webcontrols: %d %s", r.Status, r.Raw)
		}
	})

	t.Run("MetricPrototypes", func(t *testing.T) {
		body := map[string]any{"default_name": "slow_pages", "expression": "count()", "log_type": "proxy-logs", "filter": "elapsed > 2000", "group_by": "request_path"}
		mp := must(200, "POST", "/v2/metric-prototypes", op, body).Body
		href := mp["href"].(string)
		if r := must(200, "GET", href, op, nil); r.Body["filter"] != "elapsed > 2000" || r.Body["display"] != "slow_pages" {
			t.Errorf("get: %s", r.Raw)
		}
		if list := c.list(t, "GET", "/v2/metric-prototypes", op); len(list) != 1 || list[0]["href"] != href {
			t.Errorf("list: %v", list)
		}
		bad := map[string]any{"default_name": "x", "expression": "count()", "log_type": "proxy-logs", "group_by": "nosuchfield"}
		if r := c.do("POST", "/v2/metric-prototypes", op, bad); r.Status != 400 || !strings.Contains(r.Raw, "group_by") {
			t.Errorf("bad group_by: %d %s", r.Status, r.Raw)
		}

		// In a sub-account: the account cannot be deleted while it has one,
		// and the root account's key does not reach it.
		sub := must(200, "POST", "/v2/accounts", op, map[string]any{"name": "Prototype tenant"}).Body["href"].(string)
		owner := ""
		for _, r := range c.list(t, "GET", sub+"/roles", op) {
			if r["name"] == "Account owner" {
				owner = r["href"].(string)
			}
		}
		inv := must(200, "POST", sub+"/invitations", op, map[string]any{"user_email": "operator@example.com", "role": owner}).Body
		eventually(t, "the invitation to be sent", func() bool { return c.do("GET", inv["href"].(string), op, nil).Body["state"] == "sent" })
		must(200, "PATCH", "/v2/users/self/invitations/"+inv["id"].(string), op, map[string]any{"state": "accepted"})
		inSub := must(200, "POST", "/v2/users/self/authorization", op, map[string]any{"account": sub}).Body["secret_key"].(string)
		subMP := must(200, "POST", "/v2/metric-prototypes", inSub, body).Body["href"].(string)
		must(404, "GET", subMP, op, nil)
		must(404, "DELETE", subMP, op, nil)
		if list := c.list(t, "GET", "/v2/metric-prototypes", inSub); len(list) != 1 || list[0]["href"] != subMP {
			t.Errorf("sub-account list: %v", list)
		}
		if r := c.do("DELETE", sub, op, nil); r.Status != 409 || !strings.Contains(r.Raw, "metric prototypes") {
			t.Errorf("delete an account with a prototype: %d %s", r.Status, r.Raw)
		}
		must(200, "DELETE", subMP, inSub, nil)
		if r := c.do("DELETE", sub, op, nil); r.Status != 200 {
			t.Errorf("delete the emptied account: %d %s", r.Status, r.Raw)
		}

		must(200, "DELETE", href, op, nil)
		must(404, "GET", href, op, nil)
	})
}
