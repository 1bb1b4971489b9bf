// Package accountswire wires the accounts function (functions/accounts).
package accountswire

import (
	"context"

	"cads/shared/access"
	"cads/shared/accounts"
	"cads/shared/apigw"
	"cads/shared/auditdiff"
	"cads/shared/wire"
	"cads/shared/wire/accesswire"
)

// FromEnv reads the accounts function's dependencies from the environment.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the accounts function's handler: the account tree, its
// entitlements and billing.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, Routes(d), apigw.WithCORS(d.CORSAllowOrigin), apigw.WithAudit(d.Audit, d.AuditRetention, auditdiff.Patch))
}

// Routes is the function's operations, each with its handler
// (TestEveryOperationHasOneHandler).
func Routes(d wire.Deps) *apigw.Router {
	return accounts.New(accounts.NewStore(d.Store), accesswire.New(d), d.Log)
}
