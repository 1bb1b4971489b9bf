// Package addresssetswire wires the address-sets function
// (functions/address-sets).
package addresssetswire

import (
	"context"

	"cads/shared/access"
	"cads/shared/addresssets"
	"cads/shared/addresssets/addresssetsapi"
	"cads/shared/apigw"
	"cads/shared/auditdiff"
	"cads/shared/wire"
	"cads/shared/wire/accesswire"
	"cads/shared/wire/metricswire"
)

// FromEnv reads the address-sets function's dependencies from the
// environment, with the SQS client for wire.MetricsQueue.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithSQS, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the address-sets function's handler: /v2/address-sets and
// /v2/address-sets/{id}[/addresses]. Address-set events go to
// wire.MetricsQueue.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, Routes(d), apigw.WithCORS(d.CORSAllowOrigin), apigw.WithAudit(d.Audit, d.AuditRetention, auditdiff.Patch))
}

// Routes is the function's operations, each with its handler
// (TestEveryOperationHasOneHandler).
func Routes(d wire.Deps) *apigw.Router {
	svc := addresssets.NewService(addresssets.NewStore(d.Store), metricswire.Events(d), metricswire.Sender(d), d.Log)
	return addresssetsapi.New(svc, addresssets.NewStore(d.Store), accesswire.New(d), d.Log)
}
