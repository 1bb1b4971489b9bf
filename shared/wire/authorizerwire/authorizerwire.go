// Package authorizerwire wires the authorizer function (functions/authorizer).
package authorizerwire

import (
	"context"

	"cads/shared/access"
	"cads/shared/authorizer"
	"cads/shared/wire"
	"cads/shared/wire/accesswire"
)

// FromEnv reads the authorizer's dependencies from the environment. The
// deployed authorizer decides on its warm path within access.DefaultStaleness.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the REQUEST authorizer's handler.
func Handler(d wire.Deps) authorizer.Handler {
	return authorizer.New(accesswire.New(d), d.Log)
}
