// Package accesswire builds the permission check (package access) the way
// every function that decides wires it: over the function's store, on its
// clock, within its staleness bound (wire.Deps).
package accesswire

import (
	"cads/shared/access"
	"cads/shared/wire"
)

// New returns the access service of a function wired with d.
func New(d wire.Deps) *access.Service {
	return access.New(access.NewStore(d.Store), d.Log, access.WithStaleness(d.AuthzStaleness), access.WithClock(d.Clock))
}
