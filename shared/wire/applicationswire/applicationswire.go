// Package applicationswire wires the applications function
// (functions/applications).
package applicationswire

import (
	"context"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/applications"
	"cads/shared/auditdiff"
	"cads/shared/wire"
	"cads/shared/wire/accesswire"
	"cads/shared/wire/taskswire"
)

// FromEnv reads the applications function's dependencies from the
// environment, with the SQS client for wire.TasksQueue.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithSQS, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the applications function's handler: applications, their
// actions and page controls. Actions submit tasks through the task outbox.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, Routes(d), apigw.WithCORS(d.CORSAllowOrigin), apigw.WithAudit(d.Audit, d.AuditRetention, auditdiff.Patch))
}

// Routes is the function's operations, each with its handler
// (TestEveryOperationHasOneHandler).
func Routes(d wire.Deps) *apigw.Router {
	return applications.New(applications.NewStore(d.Store), accesswire.New(d), taskswire.Outbox(d), d.Log)
}
