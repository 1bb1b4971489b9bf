// Package userswire wires the users function (functions/users).
package userswire

import (
	"context"
	"net/http"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/auditdiff"
	"cads/shared/caller"
	"cads/shared/openapi"
	"cads/shared/users"
	"cads/shared/wire"
	"cads/shared/wire/accesswire"
)

// FromEnv reads the users function's dependencies from the environment.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the users function's handler: users, access keys, the
// caller's own authorization and the API's description. The description
// rides on this function because, like the self-service calls, any
// authenticated principal may read it (docs/api.md#api-description).
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, Routes(d), apigw.WithCORS(d.CORSAllowOrigin), apigw.WithAudit(d.Audit, d.AuditRetention, auditdiff.Patch))
}

// Routes is the function's operations, each with its handler
// (TestEveryOperationHasOneHandler).
func Routes(d wire.Deps) *apigw.Router {
	r := users.New(users.NewStore(d.Store), accesswire.New(d), d.Log)
	r.Handle("getOpenapi.Json", apigw.Handle(d.Log, describe))
	return r
}

// describe answers the OpenAPI document as embedded.
func describe(*http.Request, caller.Principal) (int, any, error) {
	return http.StatusOK, &apigw.Binary{ContentType: "application/json", Data: []byte(openapi.JSON())}, nil
}
