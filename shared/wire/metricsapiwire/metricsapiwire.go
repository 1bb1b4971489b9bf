// Package metricsapiwire wires the metrics function (functions/metrics):
// the metrics of applications and address sets, and the accounts' metric
// prototypes. The metrics-queue senders other functions share stay in
// metricswire, so that they do not link the prototypes' log schemas.
package metricsapiwire

import (
	"context"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/auditdiff"
	"cads/shared/metrics/metricsapi"
	"cads/shared/metrics/prototypes"
	"cads/shared/wire"
)

// FromEnv reads the metrics function's dependencies from the environment.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the metrics function's handler.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, Routes(d), apigw.WithCORS(d.CORSAllowOrigin), apigw.WithAudit(d.Audit, d.AuditRetention, auditdiff.Patch))
}

// Routes is the function's operations, each with its handler
// (TestEveryOperationHasOneHandler).
func Routes(d wire.Deps) *apigw.Router {
	dec := access.New(access.NewStore(d.Store), d.Log, access.WithStaleness(d.AuthzStaleness))
	r := metricsapi.NewHandler(metricsapi.NewQueryStore(d.Store), dec, d.Log)
	prototypes.Register(r, d.Store.Metrics, dec, d.Log)
	return r
}
