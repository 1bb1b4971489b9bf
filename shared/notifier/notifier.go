// Package notifier is the notifier function: it delivers the invitations
// the roles function queues (rbacadmin) to their invitees. It links no
// HTTP layer.
package notifier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"cads/shared/domain"
	"cads/shared/store"
)

// Message is the queue message that asks the notifier to deliver an
// invitation; rbacadmin writes it through the outbox. It names the
// invitation only: the notifier reads the current state, so a message for
// a revoked or answered invitation does nothing.
type Message struct {
	Kind    string `json:"kind"`
	Account string `json:"account"`
	ID      string `json:"id"`
}

// Notification is an invitation being delivered to its invitee.
type Notification struct {
	Invitation string // href of the invitation
	Kind       string // domain.InvitationRole or domain.InvitationGroup
	Email      string // the invitee
	Target     string // href of the role or group
	Account    string // href of the inviting account
	InvitedBy  string // href of the inviter, if known
}

// Notifier delivers invitations to invitees: by e-mail in a deployment
// that has a mail service, by a log line locally. Whatever the channel,
// the invitation also shows in the invitee's own list
// (GET /v2/users/self/invitations) once delivered.
type Notifier interface {
	Notify(ctx context.Context, n Notification) error
}

// LogNotifier delivers by writing one log line per invitation: the local
// platform's channel.
type LogNotifier struct{ Log *slog.Logger }

// Notify logs the invitation.
func (l LogNotifier) Notify(ctx context.Context, n Notification) error {
	l.Log.InfoContext(ctx, "invitation delivered", "invitation", n.Invitation, "kind", n.Kind, "to", n.Email,
		"target", n.Target, "account", n.Account, "invited_by", n.InvitedBy)
	return nil
}

// NotifierStore is what the notifier reads and writes.
type NotifierStore interface {
	GetInvitation(ctx context.Context, account, kind, id string) (domain.Invitation, error)
	MarkInvitationSent(ctx context.Context, inv domain.Invitation) (domain.Invitation, error)
}

// NotifyHandler is the notifier function: an SQS-triggered Lambda handler
// that reports batch item failures, so one bad message does not hold back
// the others (failed ones come back after their visibility timeout and end
// in the dead-letter queue after the queue's maxReceiveCount).
type NotifyHandler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// NewNotifyHandler delivers each queued invitation through n and marks it
// sent. Delivery is at least once: a message redelivered after a delivery
// whose "sent" write failed delivers again. A message for an invitation
// that is no longer queued (sent already, answered, revoked) does nothing,
// and the conditional "sent" write never moves an answered invitation back.
func NewNotifyHandler(st NotifierStore, n Notifier, log *slog.Logger) NotifyHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, rec := range ev.Records {
			if err := deliver(ctx, st, n, rec.Body); err != nil {
				log.ErrorContext(ctx, "invitation not delivered; the message will be retried", "message", rec.MessageId, "error", err.Error())
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			}
		}
		return resp, nil
	}
}

func deliver(ctx context.Context, st NotifierStore, n Notifier, body string) error {
	var msg Message
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Account == "" || msg.ID == "" ||
		(msg.Kind != domain.InvitationRole && msg.Kind != domain.InvitationGroup) {
		// Kept for inspection: it reaches the dead-letter queue.
		return fmt.Errorf("malformed notification %q", body)
	}
	inv, err := st.GetInvitation(ctx, msg.Account, msg.Kind, msg.ID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil // revoked before it was sent
	}
	if err != nil {
		return err
	}
	if inv.State != domain.InvitationQueued {
		return nil
	}
	note := Notification{Invitation: inv.Ref().Href(), Kind: inv.Kind, Email: inv.Email, Target: inv.TargetHref(), Account: "/v2/accounts/" + inv.AccountID}
	if inv.GrantedBy != "" {
		note.InvitedBy = "/v2/users/" + inv.GrantedBy
	}
	if err := n.Notify(ctx, note); err != nil {
		return fmt.Errorf("notify %s: %w", note.Invitation, err)
	}
	if _, err := st.MarkInvitationSent(ctx, inv); err != nil && !errors.Is(err, store.ErrStateChanged) {
		return err
	}
	return nil
}
