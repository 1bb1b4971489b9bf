// Package userswire wires the users function (functions/users).
package userswire

import (
	"context"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/identity"
	"cads/shared/wire"
	"cads/shared/wire/accesswire"
)

// FromEnv reads the users function's dependencies from the environment.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the users function's handler: users, access keys and the
// caller's own authorization.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, identity.New(d.Store, accesswire.New(d), d.Log))
}
