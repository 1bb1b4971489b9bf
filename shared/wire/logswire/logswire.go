// Package logswire wires the logs function (functions/logs).
package logswire

import (
	"context"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/auditdiff"
	"cads/shared/logs"
	"cads/shared/logs/logsapi"
	"cads/shared/wire"
)

// FromEnv reads the logs function's dependencies from the environment.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the logs function's handler: GET and POST
// /v2/applications/{id}/logs. Ingest rides on the aggregator.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, Routes(d), apigw.WithCORS(d.CORSAllowOrigin), apigw.WithAudit(d.Audit, d.AuditRetention, auditdiff.Patch))
}

// Routes is the function's operations, each with its handler
// (TestEveryOperationHasOneHandler).
func Routes(d wire.Deps) *apigw.Router {
	return logsapi.NewHandler(logs.NewStore(d.Store), access.New(access.NewStore(d.Store), d.Log, access.WithStaleness(d.AuthzStaleness)), d.Log)
}
