// Package roleswire wires the roles function (functions/roles).
package roleswire

import (
	"context"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/auditdiff"
	"cads/shared/outbox"
	"cads/shared/roles"
	"cads/shared/wire"
	"cads/shared/wire/accesswire"
)

// FromEnv reads the roles function's dependencies from the environment,
// with the SQS client for wire.NotificationsQueue.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithSQS, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the roles function's handler: roles, invitations, groups,
// group invitations and service users of an account, and the invitee's
// side. Invitations go to wire.NotificationsQueue through its outbox.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, Routes(d), apigw.WithCORS(d.CORSAllowOrigin), apigw.WithAudit(d.Audit, d.AuditRetention, auditdiff.Patch))
}

// Routes is the function's operations, each with its handler
// (TestEveryOperationHasOneHandler).
func Routes(d wire.Deps) *apigw.Router {
	var q *outbox.Queue
	if d.QueueURL(wire.NotificationsQueue) != "" {
		q = outbox.New(d.Store.Tasks, outbox.SQS{Client: d.SQS, URLs: d.QueueURLs}, d.Log).Queue(wire.NotificationsQueue)
	}
	return roles.New(roles.NewStore(d.Store), accesswire.New(d), q, d.Log)
}
