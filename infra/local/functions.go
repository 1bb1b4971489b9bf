package local

import (
	"cads/infra/gateway"
	"cads/infra/sqssource"
	"cads/shared/wire"
)

// Function is what the local platform runs for one function folder: the
// same constructor its Lambda main calls. Exactly one field is set.
type Function struct {
	API        func(wire.Deps) gateway.ProxyHandler
	Authorizer func(wire.Deps) gateway.AuthorizerHandler
	Queue      func(wire.Deps) sqssource.Handler
}

// Functions maps each template CodeUri to its constructor. A function in
// template.yaml without an entry here fails the start (and a test).
var Functions = map[string]Function{
	"functions/authorizer": {Authorizer: func(d wire.Deps) gateway.AuthorizerHandler { return gateway.AuthorizerHandler(wire.Authorizer(d)) }},
	"functions/users":      {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.Users(d)) }},
}
