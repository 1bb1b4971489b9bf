package rbacadmin_test

import (
	"context"
	"errors"
	"testing"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/rbacadmin"
	"cads/shared/store"
)

// lostAnswerQueue queues the message for real, lets the notifier deliver
// it at once, and then reports the send as failed: the answer of a send
// that did reach SQS was lost, and the notifier was quicker than the
// request's undo.
type lostAnswerQueue struct {
	e    *env
	real rbacadmin.Queue
}

func (q lostAnswerQueue) Send(ctx context.Context, body []byte) error {
	if err := q.real.Send(ctx, body); err != nil {
		return err
	}
	if q.e.deliver() != 1 {
		q.e.t.Error("the lost answer's message was not delivered")
	}
	return errors.New("connection reset before the answer")
}

// withQueue makes the roles function of e use q (nil: none).
func (e *env) withQueue(q rbacadmin.Queue) {
	e.roles = apigw.Lambda(e.deps.Log, rbacadmin.New(e.st, access.New(e.st, e.deps.Log), q, e.deps.Log))
}

// A send reported as failed whose message was delivered all the same:
// the invitation went out, so the request answers 200 with it (state
// sent), not a 503 that would make the caller invite twice.
func TestInvitationDeliveredDespiteAFailedSendIsASuccess(t *testing.T) {
	e := newEnv(t)
	base := "/v2/accounts/" + e.root
	role := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "Lost answers",
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications/*"}}}}), 200, "create role").str("href")
	e.withQueue(lostAnswerQueue{e: e, real: rbacadmin.SQSQueue{Client: e.deps.SQS, URL: e.queue}})

	r := e.must(e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "quick@example.com", "role": role}), 200, "invite")
	if r.str("state") != store.InvitationSent || r.Body["sent"] == nil {
		t.Fatalf("invitation delivered before the failed send returned: %s", r.Raw)
	}
	href := r.str("href")
	if got := e.stored(href); got.State != store.InvitationSent {
		t.Fatalf("stored: %+v", got)
	}
	// The same for a re-send of the delivered invitation.
	r = e.must(e.call(e.op, "PATCH", href, map[string]any{"state": "queued"}), 200, "re-send")
	if r.str("state") != store.InvitationSent {
		t.Fatalf("re-send delivered before the failed send returned: %s", r.Raw)
	}
}

// Without a notification queue (a deployment error, not an outage) an
// invitation that needs sending is still a 500, and it is taken back.
func TestInvitationWithoutAQueueIs500(t *testing.T) {
	e := newEnv(t)
	base := "/v2/accounts/" + e.root
	role := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "No queue",
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications/*"}}}}), 200, "create role").str("href")
	e.withQueue(nil)
	r := e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "nobody@example.com", "role": role})
	if r.Status != 500 {
		t.Fatalf("invitation without a queue: %d %s", r.Status, r.Raw)
	}
	if r := e.must(e.call(e.op, "GET", base+"/invitations", nil), 200, "list"); len(r.List) != 0 {
		t.Fatalf("the unsendable invitation was kept: %s", r.Raw)
	}
}
