// Package testswire wires the tests function (functions/tests).
package testswire

import (
	"context"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/auditdiff"
	"cads/shared/outbox"
	"cads/shared/tests/testsapi"
	"cads/shared/wire"
	"cads/shared/wire/accesswire"
)

// FromEnv reads the tests function's dependencies from the environment,
// with the SQS client for wire.TestRunsQueue.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithSQS, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the tests function's handler: application test
// configurations and starting their runs, which go to wire.TestRunsQueue
// through its outbox.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, Routes(d), apigw.WithCORS(d.CORSAllowOrigin), apigw.WithAudit(d.Audit, d.AuditRetention, auditdiff.Patch))
}

// Routes is the function's operations, each with its handler
// (TestEveryOperationHasOneHandler).
func Routes(d wire.Deps) *apigw.Router {
	var q *outbox.Queue
	if d.QueueURL(wire.TestRunsQueue) != "" {
		q = outbox.New(d.Store.Tasks, outbox.SQS{Client: d.SQS, URLs: d.QueueURLs}, d.Log).Queue(wire.TestRunsQueue)
	}
	return testsapi.New(testsapi.NewStore(d.Store), accesswire.New(d), q, d.Log)
}
