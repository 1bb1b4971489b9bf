package roles_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/notifier"
	"cads/shared/outbox"
	"cads/shared/roles"
	"cads/shared/store"
	"cads/shared/wire"
)

// faultySender is the real SQS sender behind a switch: refuse sends
// nothing; loseAnswer sends and then reports a failure (the answer of a
// send that reached SQS was lost).
type faultySender struct {
	real       outbox.Sender
	refuse     atomic.Bool
	loseAnswer atomic.Bool
}

func (s *faultySender) Send(ctx context.Context, queue string, bodies ...string) error {
	if s.refuse.Load() {
		return errors.New("service unavailable")
	}
	if err := s.real.Send(ctx, queue, bodies...); err != nil {
		return err
	}
	if s.loseAnswer.Load() {
		return errors.New("connection reset before the answer")
	}
	return nil
}

// withSender makes the roles function of e send through s; its markers
// are due at once, so the next sweep is theirs. It returns that sweep's
// outbox: the task worker's, over the real queues.
func (e *env) withSender(s outbox.Sender) *outbox.Outbox {
	o := outbox.New(e.st.Tasks, s, e.deps.Log)
	o.ResendAfter = 0
	e.withQueue(o.Queue(wire.NotificationsQueue))
	sweep := outbox.New(e.st.Tasks, outbox.SQS{Client: e.deps.SQS, URLs: e.deps.QueueURLs}, e.deps.Log)
	sweep.ResendAfter = time.Hour
	return sweep
}

// withQueue makes the roles function of e use q (nil: none).
func (e *env) withQueue(q *outbox.Queue) {
	e.roles = apigw.Lambda(e.deps.Log, roles.New(roles.NewStore(e.st), access.New(access.NewStore(e.st), e.deps.Log), q, e.deps.Log))
}

func (e *env) markers() []store.OutboxMarker {
	e.t.Helper()
	testenv.AwaitIndexes() // the outbox is found through an index
	due, err := e.st.Tasks.DueOutbox(context.Background(), time.Now().Add(time.Hour), 10)
	if err != nil {
		e.t.Fatal(err)
	}
	return due
}

// An invitation whose send SQS refused was written with its outbox
// marker: the request answers 200 with it queued, and the sweep delivers
// it once SQS is back. The same for a re-send (PATCH) of a delivered
// invitation.
func TestInvitationSendRefusedIsQueuedAndTheSweepDelivers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	base := "/v2/accounts/" + e.root
	role := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "Outage",
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications/*"}}}}), 200, "create role").str("href")
	s := &faultySender{real: outbox.SQS{Client: e.deps.SQS, URLs: e.deps.QueueURLs}}
	sweep := e.withSender(s)

	s.refuse.Store(true)
	r := e.must(e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": "later@example.com", "role": role}), 200, "invite")
	href := r.str("href")
	if r.str("state") != domain.InvitationQueued {
		t.Fatalf("invitation whose send was refused: %s", r.Raw)
	}
	if m := e.markers(); len(m) != 1 || m[0].Queue != wire.NotificationsQueue {
		t.Fatalf("outbox after the refused send: %+v", m)
	}
	if !e.queueEmpty() {
		t.Fatal("a refused send queued a message")
	}
	testenv.AwaitIndexes() // the outbox is found through an index
	if n, err := sweep.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if got := e.deliver(); got != 1 || e.stored(href).State != domain.InvitationSent || len(e.markers()) != 0 {
		t.Fatalf("after the sweep: %d delivered, %+v, markers %+v", got, e.stored(href), e.markers())
	}

	// Re-send of the delivered invitation while SQS refuses: 200, queued
	// again, delivered by the sweep.
	r = e.must(e.call(e.op, "PATCH", href, map[string]any{"state": "queued"}), 200, "re-send")
	if r.str("state") != domain.InvitationQueued || e.stored(href).State != domain.InvitationQueued {
		t.Fatalf("re-send whose send was refused: %s", r.Raw)
	}
	testenv.AwaitIndexes() // the outbox is found through an index
	if n, err := sweep.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after the re-send: %d %v", n, err)
	}
	if got := e.deliver(); got != 1 || e.stored(href).State != domain.InvitationSent {
		t.Fatalf("after the re-send's sweep: %d delivered, %+v", got, e.stored(href))
	}
	testenv.AwaitIndexes() // the outbox is found through an index
	if n, err := sweep.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("a sweep after delivery sent %d (%v)", n, err)
	}
}

// A send reported as failed whose message reached the queue: the marker
// stays, so the sweep sends a second copy, which finds the invitation
// sent and notifies nobody.
func TestInvitationLostAnswerIsDeliveredOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	n := &countingNotifier{}
	e.notify = notifier.NewNotifyHandler(e.st.Invitations, n, quietLog)
	s := &faultySender{real: outbox.SQS{Client: e.deps.SQS, URLs: e.deps.QueueURLs}}
	sweep := e.withSender(s)
	s.loseAnswer.Store(true)
	href := e.newInvitation("quick@example.com")
	s.loseAnswer.Store(false)
	if got := e.deliver(); got != 1 || n.count(href) != 1 {
		t.Fatalf("first copy: %d delivered, %d notifications", got, n.count(href))
	}
	testenv.AwaitIndexes() // the outbox is found through an index
	if c, err := sweep.Sweep(ctx); err != nil || c != 1 {
		t.Fatalf("sweep: %d %v; want the marker the lost answer left", c, err)
	}
	if got := e.deliver(); got != 1 || n.count(href) != 1 || e.stored(href).State != domain.InvitationSent {
		t.Fatalf("second copy: %d handled, %d notifications, %+v; want one notification in all", got, n.count(href), e.stored(href))
	}
}

// Without a notification queue (a deployment error, not an outage) an
// invitation that needs sending is a 500, found before anything is
// written.
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
	if m := e.markers(); len(m) != 0 {
		t.Fatalf("markers: %+v", m)
	}
}
