package roles_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"cads/infra/local"
	"cads/infra/local/localtest"
	"cads/shared/access"
)

type httpClient struct {
	t    *testing.T
	base string
}

func (c httpClient) do(secret, method, path string, body any, ct ...string) reply {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if len(ct) > 0 {
		req.Header.Set("Content-Type", ct[0])
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := reply{Status: res.StatusCode, Raw: string(raw)}
	if strings.HasPrefix(strings.TrimSpace(r.Raw), "[") {
		_ = json.Unmarshal(raw, &r.List)
	} else {
		_ = json.Unmarshal(raw, &r.Body)
	}
	return r
}

func (c httpClient) must(r reply, want int, what string) reply {
	c.t.Helper()
	if r.Status != want {
		c.t.Fatalf("%s: status %d, want %d: %s", what, r.Status, want, r.Raw)
	}
	return r
}

// End to end through the local platform: HTTP, the local API Gateway, the
// authorizer, the roles function, the notifications queue and the notifier
// run by the SQS event source.
func TestInvitationThroughThePlatform(t *testing.T) {
	p, logs := localtest.Start(t)
	if _, ok := p.Queues["NotificationsQueue"]; !ok {
		t.Fatalf("the platform did not create the notifications queue: %v", p.Queues)
	}
	c := httpClient{t: t, base: p.URL}
	op, root := p.Bootstrap.Secret, "/v2/accounts/"+p.Bootstrap.RootAccount
	target := root + "/service-users"

	role := c.must(c.do(op, "POST", root+"/roles", map[string]any{"name": "Robot keeper",
		"permissions": []map[string]any{permit("GET", target)}}), 200, "create role")
	// A JSON Patch goes through the gateway as text.
	role = c.must(c.do(op, "PATCH", role.str("href"), `[{"op":"add","path":"/permissions/-","value":{"method":"GET","effect":"deny","spec":["/v2/accounts/x"]}}]`, "application/json-patch+json"), 200, "json patch")

	u := c.must(c.do(op, "POST", "/v2/users", map[string]any{"email": "dev@example.com"}), 200, "create user")
	k := c.must(c.do(op, "POST", "/v2/users/"+u.str("id")+"/access-keys", map[string]any{"type": "bearer", "account": root}), 200, "create key")
	dev := k.str("secret_key")
	c.must(c.do(dev, "GET", target, nil), 403, "before the invitation")

	inv := c.must(c.do(op, "POST", root+"/invitations", map[string]any{"user_email": "dev@example.com", "role": role.str("href")}), 200, "invite")
	if inv.str("state") != "queued" {
		t.Fatalf("invitation: %s", inv.Raw)
	}
	eventually(t, "the notifier to send the invitation", func() bool {
		return c.do(op, "GET", inv.str("href"), nil).str("state") == "sent"
	})
	if !strings.Contains(logs.String(), `"msg":"invitation delivered"`) {
		t.Fatal("the notifier logged no delivery")
	}
	if r := c.must(c.do(dev, "GET", "/v2/users/self/invitations", nil), 200, "inbox"); len(r.List) != 1 {
		t.Fatalf("inbox: %s", r.Raw)
	}
	c.must(c.do(dev, "PATCH", "/v2/users/self/invitations/"+inv.str("id"), map[string]any{"state": "accepted"}), 200, "accept")
	c.must(c.do(dev, "GET", target, nil), 200, "after accepting")

	c.must(c.do(op, "DELETE", inv.str("href"), nil), 200, "revoke")
	r := c.must(c.do(dev, "GET", target, nil), 403, "after revoking")
	if e, _ := r.Body["error"].(map[string]any); e["type"] != "forbidden" {
		t.Fatalf("403 body: %s", r.Raw)
	}
	// Nothing went to the dead-letter queue.
	if strings.Contains(logs.String(), "invitation not delivered") {
		t.Fatal("a delivery failed")
	}
}

// The warm path never keeps a refusal: with the deployed staleness bound,
// a user refused a switch into an account before accepting an invitation
// there switches in with the very next request after the accept.
func TestAcceptThenSwitchWarm(t *testing.T) {
	p, _ := localtest.Start(t, func(o *local.Options) { o.AuthzStaleness = access.DefaultStaleness })
	c := httpClient{t: t, base: p.URL}
	op, root := p.Bootstrap.Secret, "/v2/accounts/"+p.Bootstrap.RootAccount

	sub := c.must(c.do(op, "POST", "/v2/accounts", map[string]any{"name": "Customer"}), 200, "create account")
	subHref := sub.str("href")
	// Lists are not what this test is about (nor read-your-writes yet).
	var roles reply
	eventually(t, "the new account's roles to be listed", func() bool {
		roles = c.must(c.do(op, "GET", subHref+"/roles", nil), 200, "the new account's roles")
		return len(roles.List) > 0
	})
	role, _ := roles.List[0]["href"].(string)
	u := c.must(c.do(op, "POST", "/v2/users", map[string]any{"email": "late@example.com"}), 200, "create user")
	dev := c.must(c.do(op, "POST", "/v2/users/"+u.str("id")+"/access-keys", map[string]any{"type": "bearer", "account": root}), 200, "create key").str("secret_key")
	inv := c.must(c.do(op, "POST", subHref+"/invitations", map[string]any{"user_email": "late@example.com", "role": role}), 200, "invite")
	eventually(t, "the notifier to send the invitation", func() bool {
		return c.do(op, "GET", inv.str("href"), nil).str("state") == "sent"
	})
	// Refused before the accept, in the authorizer and in the switch.
	c.must(c.do(dev, "GET", subHref, nil), 403, "before accepting")
	c.must(c.do(dev, "POST", "/v2/users/self/authorization", map[string]any{"account": subHref}), 404, "switch before accepting")

	c.must(c.do(dev, "PATCH", "/v2/users/self/invitations/"+inv.str("id"), map[string]any{"state": "accepted"}), 200, "accept")
	c.must(c.do(dev, "POST", "/v2/users/self/authorization", map[string]any{"account": subHref}), 200, "switch right after accepting")
	c.must(c.do(dev, "GET", subHref, nil), 200, "read right after accepting")
}
