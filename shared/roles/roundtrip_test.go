package roles_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/caller"
	"cads/shared/domain"
)

// DynamoDB round trips of the main endpoints, the authorizer's excluded
// (shared/access asserts its budget). Sequential counts waves of parallel
// calls; the delay makes parallel calls overlap even under -race. The
// table in docs/data-model.md lists these numbers.
func TestRoundTrips(t *testing.T) {
	e := newEnv(t)
	base := "/v2/accounts/" + e.root
	op := caller.Principal{ID: e.boot.Operator, Kind: domain.KindUser, Email: "operator@example.com", AccountID: e.root, KeyID: e.boot.KeyID}.Context()
	dev, devP := e.user("dev@example.com", e.rootAccount())
	_ = dev
	devCtx := devP.Context()

	type step struct {
		name           string
		ctx            map[string]any
		method, path   string
		body           any
		ct             string
		status         int
		seq, total     int
		after          func(r reply)
		pathFromResult func() string
	}
	var roleHref, groupHref, invID, invHref, suHref string
	// Every list here follows a write of its collection within the
	// journal's window (docs/data-model.md, Read your writes): beside the
	// index Query it reads the journal (one more call in parallel) and the
	// members it names (one BatchGetItem, in parallel with the decision's
	// or one round trip more); a single-item write puts its journal item
	// in parallel (one more call).
	steps := []step{
		{name: "POST role", ctx: op, method: "POST", path: base + "/roles", body: map[string]any{"name": "R"}, status: 200, seq: 2, total: 2, // the roles quota, then the transaction
			after: func(r reply) { roleHref = r.str("href") }},
		{name: "GET roles", ctx: op, method: "GET", path: base + "/roles", status: 200, seq: 2, total: 7},
		{name: "GET role", ctx: op, method: "GET", pathFromResult: func() string { return roleHref }, status: 200, seq: 1, total: 1},
		{name: "PATCH role (JSON Patch)", ctx: op, method: "PATCH", pathFromResult: func() string { return roleHref }, ct: "application/json-patch+json",
			body: `[{"op":"replace","path":"/name","value":"R2"}]`, status: 200, seq: 2, total: 3},
		{name: "POST group", ctx: op, method: "POST", path: base + "/groups", status: 200, seq: 2, total: 2, // the groups quota, then the transaction
			body: map[string]any{"name": "G", "roles": []string{"ROLE"}}, after: func(r reply) { groupHref = r.str("href") }},
		{name: "PATCH group", ctx: op, method: "PATCH", pathFromResult: func() string { return groupHref }, body: map[string]any{"name": "G2"}, status: 200, seq: 2, total: 2},
		{name: "GET groups", ctx: op, method: "GET", path: base + "/groups", status: 200, seq: 2, total: 7},
		// The invitation and its outbox marker in one transaction, the
		// send, then the marker's delete once the send succeeded.
		{name: "POST invitation", ctx: op, method: "POST", path: base + "/invitations", body: map[string]any{"user_email": "dev@example.com", "role": "ROLE"},
			// +1: the invitations quota's Query before the transaction.
			status: 200, seq: 5, total: 7, after: func(r reply) { invID, invHref = r.str("id"), r.str("href") }},
		{name: "GET invitations", ctx: op, method: "GET", path: base + "/invitations", status: 200, seq: 2, total: 7},
		{name: "notifier (per message)", seq: 2, total: 3},
		{name: "GET /v2/users/self/invitations", ctx: devCtx, method: "GET", path: "/v2/users/self/invitations", status: 200, seq: 2, total: 3},
		{name: "PATCH /v2/users/self/invitations/{id} (accept)", ctx: devCtx, method: "PATCH", pathFromResult: func() string { return "/v2/users/self/invitations/" + invID },
			body: map[string]any{"state": "accepted"}, status: 200, seq: 2, total: 2},
		{name: "GET /v2/users/self/roles", ctx: devCtx, method: "GET", path: "/v2/users/self/roles", status: 200, seq: 3, total: 4},
		{name: "DELETE /v2/users/self/roles/{role_id} (leave)", ctx: devCtx, method: "DELETE",
			pathFromResult: func() string { return "/v2/users/self/roles/" + roleHref[strings.LastIndexByte(roleHref, '/')+1:] }, status: 200, seq: 2, total: 3},
		{name: "DELETE invitation (revoke)", ctx: op, method: "DELETE", pathFromResult: func() string { return invHref }, status: 200, seq: 2, total: 2},
		{name: "DELETE group", ctx: op, method: "DELETE", pathFromResult: func() string { return groupHref }, status: 200, seq: 2, total: 4},
		{name: "DELETE role", ctx: op, method: "DELETE", pathFromResult: func() string { return roleHref }, status: 200, seq: 2, total: 4},
		// Who can: the account (1), its RBAC partition (2), the holders of
		// the two roles granting it, each beside its journal (3), the
		// grants the journal names (the bootstrap's, seconds ago) (4), the
		// one holder's first grants beside the principal (5). At rest: 4 / 8.
		{name: "GET who can", ctx: op, method: "GET", path: base + "/access?method=DELETE&path=/v2/applications/x1", status: 200, seq: 5, total: 9},
		{name: "POST service user", ctx: op, method: "POST", path: base + "/service-users", status: 200, seq: 3, total: 3, // account, quota, transaction
			after: func(r reply) { suHref = r.str("href") }},
		{name: "GET service user", ctx: op, method: "GET", pathFromResult: func() string { return suHref }, status: 200, seq: 1, total: 2},
		{name: "GET service users", ctx: op, method: "GET", path: base + "/service-users", status: 200, seq: 3, total: 8},
		{name: "PATCH service user", ctx: op, method: "PATCH", pathFromResult: func() string { return suHref }, body: map[string]any{"name": "x"}, status: 200, seq: 1, total: 3},
		{name: "DELETE service user", ctx: op, method: "DELETE", pathFromResult: func() string { return suHref }, status: 200, seq: 2, total: 5},
	}
	e.dyn.Counter.SetDelay(25 * time.Millisecond)
	for _, s := range steps {
		if s.pathFromResult != nil {
			s.path = s.pathFromResult()
		}
		// Bodies naming the role created by the first step.
		if m, ok := s.body.(map[string]any); ok {
			for k, v := range m {
				switch v {
				case "ROLE":
					m[k] = roleHref
				}
				if l, ok := v.([]string); ok && len(l) == 1 && l[0] == "ROLE" {
					m[k] = []string{roleHref}
				}
			}
		}
		e.dyn.Counter.Reset()
		var r reply
		if s.ctx == nil {
			e.dyn.Counter.SetDelay(0)
			msgs := e.receive()
			e.dyn.Counter.SetDelay(25 * time.Millisecond)
			e.dyn.Counter.Reset()
			if _, err := e.notify(context.Background(), events.SQSEvent{Records: msgs[:1]}); err != nil {
				t.Fatal(err)
			}
		} else {
			var ct []string
			if s.ct != "" {
				ct = []string{s.ct}
			}
			r = e.invoke(s.ctx, s.method, s.path, s.body, ct...)
			if r.Status != s.status {
				t.Fatalf("%s: %d %s", s.name, r.Status, r.Raw)
			}
		}
		seq, total := e.dyn.Counter.Sequential(), e.dyn.Counter.Total()
		t.Logf("%-50s sequential %d, total %d %v", s.name, seq, total, e.dyn.Counter.ByOperation())
		if (seq != s.seq || total != s.total) && !testenv.Realistic() {
			t.Errorf("%s: %d sequential / %d total round trips, want %d / %d (%v)", s.name, seq, total, s.seq, s.total, e.dyn.Counter.ByOperation())
		}
		if s.after != nil {
			s.after(r)
		}
	}
}
