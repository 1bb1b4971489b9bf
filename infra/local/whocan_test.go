package local_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Who can through the local gateway (docs/rbac.md, Who can): a grant
// answered a moment ago is listed and a grant left a moment ago is not
// (the holders' index may lag; under CADS_DYNAMO_REALISM it does), the
// account's owner may ask and its Reader may not, and a path naming
// another tenant's account is a 400 in the API's error body. Every
// response is checked against the OpenAPI document by the local platform.
func TestWhoCanThroughTheGateway(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	must := func(r reply, want int, what string) reply {
		t.Helper()
		if r.Status != want {
			t.Fatalf("%s: %d, want %d: %s", what, r.Status, want, r.Raw)
		}
		return r
	}
	str := func(r reply, k string) string { s, _ := r.Body[k].(string); return s }
	sub := must(c.do("POST", "/v2/accounts", op, map[string]any{"name": "Who can"}), 200, "create account")
	subHref := str(sub, "href")
	var roles []map[string]any
	_ = json.Unmarshal([]byte(must(c.do("GET", subHref+"/roles", op, nil), 200, "roles").Raw), &roles)
	roleOf := map[string]string{}
	for _, r := range roles {
		roleOf[r["name"].(string)] = r["href"].(string)
	}
	// member makes a user that holds role in the account (invited by the
	// operator, accepted once the notifier sent the invitation) and
	// returns its id, its key into no account and its key into the account.
	member := func(email, role string) (id, bare, home string) {
		t.Helper()
		id = str(must(c.do("POST", "/v2/users", op, map[string]any{"email": email, "name": "U"}), 200, "create user"), "id")
		bare = str(must(c.do("POST", "/v2/users/"+id+"/access-keys", op, map[string]any{"type": "bearer"}), 200, "key"), "secret_key")
		inv := str(must(c.do("POST", subHref+"/invitations", op, map[string]any{"user_email": email, "role": roleOf[role]}), 200, "invite"), "id")
		deadline := time.Now().Add(20 * time.Second)
		for {
			r := c.do("PATCH", "/v2/users/self/invitations/"+inv, bare, map[string]any{"state": "accepted"})
			if r.Status == 200 {
				break
			}
			if r.Status != 404 || time.Now().After(deadline) {
				t.Fatalf("accept: %d %s", r.Status, r.Raw)
			}
			time.Sleep(20 * time.Millisecond) // the notifier marks it sent
		}
		home = str(must(c.do("POST", "/v2/users/self/access-keys", bare, map[string]any{"type": "bearer", "account": subHref}), 200, "home key"), "secret_key")
		return id, bare, home
	}
	ask := func(secret, method, path string) reply {
		t.Helper()
		return c.do("GET", subHref+"/access?"+url.Values{"method": {method}, "path": {path}}.Encode(), secret, nil)
	}
	listed := func(r reply) []string {
		t.Helper()
		var list []map[string]any
		if err := json.Unmarshal([]byte(r.Raw), &list); err != nil {
			t.Fatalf("not a collection: %s", r.Raw)
		}
		var out []string
		for _, m := range list {
			out = append(out, m["principal"].(string))
		}
		return out
	}

	owner, ownerBare, ownerHome := member("whocan-owner@example.com", "Account owner")
	// Right after the accept: listed, with the role that grants it.
	if got := listed(must(ask(op, "DELETE", "/v2/applications/x1"), 200, "operator asks")); !slices.Equal(got, []string{"/v2/users/" + owner}) {
		t.Fatalf("who can delete an application, right after the owner accepted: %v", got)
	}
	r := must(ask(ownerHome, "DELETE", "/v2/applications/x1"), 200, "owner asks")
	if !strings.Contains(r.Raw, roleOf["Account owner"]) {
		t.Errorf("the member does not name the granting role: %s", r.Raw)
	}
	_, _, readerHome := member("whocan-reader@example.com", "Reader")
	if r := ask(readerHome, "GET", "/v2/applications"); r.Status != 403 || r.errorType(t) != "forbidden" {
		t.Errorf("the Reader asked: %d %s", r.Status, r.Raw)
	}
	if r := ask(ownerHome, "GET", "/v2/accounts/"+p.Bootstrap.RootAccount+"/roles"); r.Status != 400 || r.errorType(t) != "bad_request" {
		t.Errorf("a path naming the parent account: %d %s", r.Status, r.Raw)
	}
	// Right after leaving: no longer listed.
	must(c.do("DELETE", "/v2/users/self/roles/"+roleOf["Account owner"][strings.LastIndexByte(roleOf["Account owner"], '/')+1:], ownerBare, nil), 200, "leave")
	if got := listed(must(ask(op, "DELETE", "/v2/applications/x1"), 200, "operator asks again")); len(got) != 0 {
		t.Fatalf("who can delete an application, right after the owner left: %v", got)
	}
}
