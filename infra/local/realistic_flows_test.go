package local_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"cads/infra/local"
	"cads/infra/local/localtest"
	"cads/infra/localaws"
	"cads/infra/testenv"
)

// realisticSeeds are the seeds TestFlowsOnRealisticDynamoDB replays; a
// failure names its seed, and CADS_DYNAMO_REALISM=seed=<n> replays the
// same draws for any other test. make test's race-enabled pass replays
// the first only (the Makefile's TEST_RACE_GATEWAY_SKIP names the second).
var realisticSeeds = []int64{26, 2611}

// TestFlowsOnRealisticDynamoDB replays, on a DynamoDB that behaves as
// AWS documents it (localaws.Realistic: index and eventually consistent
// reads up to 1 s behind, 10 % of transactions cancelled for a conflict,
// 30 % of batches partly unprocessed, 2 % of calls throttled), each flow
// that broke on it: every request is sent the moment the previous answer
// arrives, as a script or an SDK sends it, and must see what the answers
// before it said was done.
func TestFlowsOnRealisticDynamoDB(t *testing.T) {
	if testenv.Realistic() {
		t.Skip("starts its own realistic DynamoDB for each of its seeds: ran in the plain pass")
	}
	for _, seed := range realisticSeeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			cfg := localaws.Realistic(seed)
			p, _ := localtest.Start(t, func(o *local.Options) { o.DynamoRealism = &cfg })
			c := client{t: t, base: p.URL}
			op := p.Bootstrap.Secret
			root := p.Bootstrap.RootAccount
			must := func(status int, method, path, secret string, body any) reply {
				t.Helper()
				r := c.do(method, path, secret, body)
				if r.Status != status {
					t.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, status, r.Raw)
				}
				return r
			}
			list := func(path, secret, field string) []string {
				t.Helper()
				var out []string
				for _, m := range c.list(t, "GET", path, secret) {
					out = append(out, fmt.Sprint(m[field]))
				}
				slices.Sort(out)
				return out
			}

			// A sub-account, then its roles (GSI2).
			sub := must(200, "POST", "/v2/accounts", op, map[string]any{"name": "Realistic tenant"}).Body["href"].(string)
			roles := list(sub+"/roles", op, "name")
			if !slices.Contains(roles, "Account owner") {
				t.Fatalf("roles right after the sub-account's create: %v", roles)
			}

			// An application, then a test upload naming its alias (the
			// alias claims, not GSI1).
			must(200, "POST", "/v2/applications", op, map[string]any{"name": "Realistic shop", "aliases": []string{"realistic.example.com"}})
			test := map[string]any{"probabilities": 1, "models": map[string]any{"home": map[string]any{"type": "user.StaticSession",
				"requests": []any{map[string]any{"name": "home", "method": "GET", "url": "http://realistic.example.com/"}}}}}
			must(200, "PUT", "/v2/tests/realistic", op, test)

			// An address set, then its addresses (GSI2).
			set := must(200, "POST", "/v2/address-sets", op, map[string]any{"name": "Realistic set", "type": "manual",
				"entries": []any{map[string]any{"address": "10.0.0.0/8"}, map[string]any{"address": "2001:db8::7"}}}).Body["href"].(string)
			if got := list(set+"/addresses", op, "address"); len(got) != 2 {
				t.Fatalf("addresses right after the set's create: %v, want 2", got)
			}

			// Refused, accept, then switch in; revoke, then the refusal. A
			// user of the operator's making, who holds nothing yet. The
			// notification is the one asynchronous step: it states its
			// delay, so the test waits for the invitation to be sent.
			uid := must(200, "POST", "/v2/users", op, map[string]any{"email": "realistic@example.com"}).Body["id"].(string)
			user := must(200, "POST", "/v2/users/"+uid+"/access-keys", op, map[string]any{"type": "bearer"}).Body["secret_key"].(string)
			if r := c.do("POST", "/v2/users/self/authorization", user, map[string]any{"account": sub}); r.Status == 200 {
				t.Fatalf("switching in before any invitation: %d %s; want a refusal", r.Status, r.Raw)
			}
			var owner string
			for _, r := range c.list(t, "GET", sub+"/roles", op) {
				if r["name"] == "Account owner" {
					owner = r["href"].(string)
				}
			}
			inv := must(200, "POST", sub+"/invitations", op, map[string]any{"user_email": "realistic@example.com", "role": owner}).Body
			eventually(t, "the invitation to be sent", func() bool { return c.do("GET", inv["href"].(string), op, nil).Body["state"] == "sent" })
			must(200, "PATCH", "/v2/users/self/invitations/"+inv["id"].(string), user, map[string]any{"state": "accepted"})
			inSub := must(200, "POST", "/v2/users/self/authorization", user, map[string]any{"account": sub}).Body["secret_key"].(string)
			must(200, "GET", sub, inSub, nil)
			must(200, "DELETE", inv["href"].(string), op, nil)
			if r := c.do("GET", sub, inSub, nil); r.Status != 403 && r.Status != 401 {
				t.Fatalf("the session key right after its invitation was deleted: %d %s; want a refusal", r.Status, r.Raw)
			}
			if r := c.do("POST", "/v2/users/self/authorization", user, map[string]any{"account": sub}); r.Status == 200 {
				t.Fatalf("switching in right after the invitation was deleted: %d %s; want a refusal", r.Status, r.Raw)
			}

			// Eight clients PATCHing one account at once, then one role,
			// then one application: every PATCH 200 (a lost race is read
			// again and re-applied), and the stored value is one client's
			// last write (each client's own writes are sequential). Under
			// the race detector a 429 is waited out and sent again
			// (racingPatch says why).
			role := must(200, "POST", "/v2/accounts/"+root+"/roles", op, map[string]any{"name": "Realistic role"}).Body["href"].(string)
			app := must(200, "POST", "/v2/applications", op, map[string]any{"name": "Realistic race", "aliases": []string{"race.realistic.example.com"}}).Body["href"].(string)
			const clients, patches = 8, 4
			targets := []struct{ path, field, prefix string }{
				{sub, "keyword", "race-"},
				{role, "description", "race "},
				{app, "name", "Race "},
			}
			testenv.Exclusive(t, "racing-clients")
			var wg sync.WaitGroup
			for _, tg := range targets { // one item at a time (TestConcurrentPatchesAllApply says why)
				for cl := range clients {
					wg.Go(func() {
						for n := range patches {
							v := fmt.Sprintf("%sc%d-n%d", tg.prefix, cl, n)
							if r := racingPatch(c, tg.path, op, map[string]any{tg.field: v}); r.Status != 200 {
								t.Errorf("PATCH %s %s=%s: %d %s", tg.path, tg.field, v, r.Status, r.Raw)
							}
						}
					})
				}
				wg.Wait()
			}
			for _, tg := range targets {
				got := fmt.Sprint(must(200, "GET", tg.path, op, nil).Body[tg.field])
				var last []string
				for cl := range clients {
					last = append(last, fmt.Sprintf("%sc%d-n%d", tg.prefix, cl, patches-1))
				}
				if !slices.Contains(last, got) {
					t.Errorf("%s %s after the race: %q, want one client's last write %v", tg.path, tg.field, got, last)
				}
			}
		})
	}
}
