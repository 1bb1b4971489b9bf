// Package taskswire wires the tasks function (functions/tasks) and the
// task outbox it shares with the applications function.
package taskswire

import (
	"context"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/auditdiff"
	"cads/shared/outbox"
	"cads/shared/tasks"
	"cads/shared/tasks/tasksapi"
	"cads/shared/wire"
	"cads/shared/wire/accesswire"
)

// FromEnv reads the tasks function's dependencies from the environment,
// with the SQS client for wire.TasksQueue.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithSQS, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the tasks function's handler: POST and GET /v2/tasks.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, Routes(d), apigw.WithCORS(d.CORSAllowOrigin), apigw.WithAudit(d.Audit, d.AuditRetention, auditdiff.Patch))
}

// Routes is the function's operations, each with its handler
// (TestEveryOperationHasOneHandler).
func Routes(d wire.Deps) *apigw.Router {
	return tasksapi.New(tasksapi.NewStore(d.Store), accesswire.New(d), Outbox(d), d.Log)
}

// Outbox writes tasks and sends them to wire.TasksQueue; without a queue
// (a deployment or test that declares none) tasks wait in the outbox and
// every submit logs why.
func Outbox(d wire.Deps) *tasks.Outbox {
	return tasks.NewOutbox(d.Store.Tasks, outbox.New(d.Store.Tasks, outbox.SQS{Client: d.SQS, URLs: d.QueueURLs}, d.Log).Queue(wire.TasksQueue))
}
