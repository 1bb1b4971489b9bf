package roles_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/notifier"
	"cads/shared/store"
)

// countingNotifier records every notification it delivers.
type countingNotifier struct {
	mu   sync.Mutex
	sent []notifier.Notification
}

func (c *countingNotifier) Notify(_ context.Context, n notifier.Notification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, n)
	return nil
}

// count is how many notifications went to invitation href.
func (c *countingNotifier) count(href string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.sent {
		if s.Invitation == href {
			n++
		}
	}
	return n
}

// markFails is the notifier's store with the "sent" write failing while
// fail is set: the notifier stops after delivering and before recording
// it, as when its process dies between the two.
type markFails struct {
	*store.Invitations
	fail atomic.Bool
}

func (m *markFails) MarkInvitationSent(ctx context.Context, inv domain.Invitation) (domain.Invitation, error) {
	if m.fail.Load() {
		return domain.Invitation{}, errors.New("the notifier stopped before recording the delivery")
	}
	return m.Invitations.MarkInvitationSent(ctx, inv)
}

// crashVisibility is the visibility timeout, in seconds, of a message the
// tests take off the notifications queue and then never delete: a worker
// that died holding it. It comes back when that runs out, as on SQS;
// the tests end it at once (expire) rather than wait it out, and
// infra/localaws tests the timeout itself.
const crashVisibility = 30

// take receives the one message waiting on the notifications queue.
func (e *env) take() events.SQSMessage {
	e.t.Helper()
	msgs := e.takeAll(1)
	if len(msgs) != 1 {
		e.t.Fatalf("want one message on the queue, got %d", len(msgs))
	}
	return msgs[0]
}

// takeAll receives what the queue holds (at most 10), polling until
// want messages have arrived or 10 s have passed.
func (e *env) takeAll(want int) []events.SQSMessage {
	e.t.Helper()
	var msgs []events.SQSMessage
	deadline := time.Now().Add(10 * time.Second)
	for len(msgs) < want && time.Now().Before(deadline) {
		out, err := e.deps.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queue),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: crashVisibility})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, m := range out.Messages {
			msgs = append(msgs, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), EventSource: "aws:sqs"})
		}
	}
	return msgs
}

// redelivered ends msg's visibility timeout (it was received and never
// deleted), as if the time had passed, and returns its new delivery.
func (e *env) redelivered(msg events.SQSMessage) events.SQSMessage {
	e.t.Helper()
	e.expire(msg)
	got := e.take()
	if got.MessageId != msg.MessageId || got.Body != msg.Body || got.ReceiptHandle == msg.ReceiptHandle {
		e.t.Fatalf("redelivery %+v is not the message %+v", got, msg)
	}
	return got
}

// handle runs a notifier on msgs as the event source does and returns
// the ids of the messages it reported as failed.
func handle(t *testing.T, h notifier.NotifyHandler, msgs ...events.SQSMessage) []string {
	t.Helper()
	ev := events.SQSEvent{Records: msgs}
	roundTrip(t, &ev)
	resp, err := h(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

func (e *env) deleteMessage(msg events.SQSMessage) {
	e.t.Helper()
	if _, err := e.deps.SQS.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queue), ReceiptHandle: aws.String(msg.ReceiptHandle)}); err != nil {
		e.t.Fatal(err)
	}
}

// expire ends msg's visibility timeout now (testenv.Expire).
func (e *env) expire(msg events.SQSMessage) {
	e.t.Helper()
	testenv.Expire(e.t, e.deps.SQS, e.queue, msg.ReceiptHandle)
}

// queueEmpty says whether the notifications queue holds no message at
// all, visible, in flight or delayed: none can arrive or come back later.
func (e *env) queueEmpty() bool {
	e.t.Helper()
	return testenv.QueueDepth(e.t, e.deps.SQS, e.queue) == 0
}

// newInvitation makes a role and invites email to it; it returns the
// invitation's href.
func (e *env) newInvitation(email string) string {
	e.t.Helper()
	base := "/v2/accounts/" + e.root
	role := e.must(e.call(e.op, "POST", base+"/roles", map[string]any{"name": "Reader of " + email,
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications/*"}}}}), 200, "create role").str("href")
	return e.must(e.call(e.op, "POST", base+"/invitations", map[string]any{"user_email": email, "role": role}), 200, "invite").str("href")
}

// stored reads the invitation href names from the table.
func (e *env) stored(href string) domain.Invitation {
	e.t.Helper()
	ref, ok := domain.ParseInvitationHref(href)
	if !ok {
		e.t.Fatalf("not an invitation href: %s", href)
	}
	inv, err := e.st.Invitations.GetInvitation(context.Background(), ref.Account, ref.Kind, ref.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return inv
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// A notifier that delivers an invitation and records it as sent, then
// dies before deleting the message: the redelivered message finds the
// invitation sent and notifies nobody again, however often it comes back.
func TestNotifierRedeliveryAfterSentDoesNotNotifyTwice(t *testing.T) {
	e := newEnv(t)
	inv := e.newInvitation("crash@example.com")
	n := &countingNotifier{}
	h := notifier.NewNotifyHandler(e.st.Invitations, n, quietLog)

	msg := e.take()
	if failed := handle(t, h, msg); len(failed) != 0 {
		t.Fatalf("first delivery failed: %v", failed)
	}
	// The worker dies here: the message is never deleted.
	sent := e.stored(inv)
	if n.count(inv) != 1 || sent.State != domain.InvitationSent || sent.Sent == nil {
		t.Fatalf("after the first delivery: %d notifications, %+v", n.count(inv), sent)
	}
	for i := range 2 {
		msg = e.redelivered(msg)
		if failed := handle(t, h, msg); len(failed) != 0 {
			t.Fatalf("redelivery %d failed: %v", i+1, failed)
		}
	}
	if c := n.count(inv); c != 1 {
		t.Fatalf("redelivered messages notified the invitee %d times in all, want once", c)
	}
	if again := e.stored(inv); !reflect.DeepEqual(again, sent) {
		t.Fatalf("a redelivery changed the invitation:\n before %+v\n after  %+v", sent, again)
	}
	e.deleteMessage(msg)
	if !e.queueEmpty() {
		t.Fatal("the deleted message came back")
	}
}

// A notifier that delivers and dies before recording the delivery (here:
// the "sent" write fails): the invitation is still queued, so the
// redelivered message notifies the invitee a second time. An e-mail
// cannot be taken back; the contract is at least once. The second
// delivery records it, and later redeliveries notify nobody.
func TestNotifierCrashBeforeMarkingSentNotifiesAgain(t *testing.T) {
	e := newEnv(t)
	inv := e.newInvitation("twice@example.com")
	n := &countingNotifier{}
	st := &markFails{Invitations: e.st.Invitations}
	h := notifier.NewNotifyHandler(st, n, quietLog)

	st.fail.Store(true)
	msg := e.take()
	if failed := handle(t, h, msg); len(failed) != 1 || failed[0] != msg.MessageId {
		t.Fatalf("a delivery whose record failed must be retried; failures %v", failed)
	}
	if got := e.stored(inv); n.count(inv) != 1 || got.State != domain.InvitationQueued || got.Sent != nil {
		t.Fatalf("after the unrecorded delivery: %d notifications, %+v", n.count(inv), got)
	}

	st.fail.Store(false)
	msg = e.redelivered(msg)
	if failed := handle(t, h, msg); len(failed) != 0 {
		t.Fatalf("second delivery failed: %v", failed)
	}
	if c := n.count(inv); c != 2 {
		t.Fatalf("%d notifications after the redelivery, want 2 (at least once: the first was never recorded)", c)
	}
	sent := e.stored(inv)
	if sent.State != domain.InvitationSent || sent.Sent == nil {
		t.Fatalf("after the second delivery: %+v", sent)
	}
	// Not deleted this time either: a third delivery is a no-op.
	msg = e.redelivered(msg)
	if failed := handle(t, h, msg); len(failed) != 0 || n.count(inv) != 2 || !reflect.DeepEqual(e.stored(inv), sent) {
		t.Fatalf("third delivery: failures %v, %d notifications, %+v", failed, n.count(inv), e.stored(inv))
	}
	e.deleteMessage(msg)
}
