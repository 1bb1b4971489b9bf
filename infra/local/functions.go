package local

import (
	"github.com/aws/aws-lambda-go/cfn"

	"cads/infra/gateway"
	"cads/infra/sqssource"
	"cads/shared/installer"
	"cads/shared/wire"
	"cads/shared/wire/accountswire"
	"cads/shared/wire/addresssetswire"
	"cads/shared/wire/aggregatorwire"
	"cads/shared/wire/applicationswire"
	"cads/shared/wire/authorizerwire"
	"cads/shared/wire/installerwire"
	"cads/shared/wire/logswire"
	"cads/shared/wire/metricsapiwire"
	"cads/shared/wire/notifierwire"
	"cads/shared/wire/roleswire"
	"cads/shared/wire/taskswire"
	"cads/shared/wire/taskworkerwire"
	"cads/shared/wire/testrunnerwire"
	"cads/shared/wire/testswire"
	"cads/shared/wire/userswire"
)

// Function is what the local platform runs for one function folder: the
// same constructor its Lambda main calls (the function's own package under
// shared/wire). Exactly one field is set.
type Function struct {
	API        func(wire.Deps) gateway.ProxyHandler
	Authorizer func(wire.Deps) gateway.AuthorizerHandler
	Queue      func(wire.Deps) sqssource.Handler
	// CustomResource is a CloudFormation custom resource's handler. It runs
	// at deployment only: locally its work is done at start (the installer
	// is the bootstrap of Platform.runBootstrap, keeping the key in a file).
	CustomResource func(wire.Deps, installer.SecretStore) cfn.CustomResourceFunction
}

// Functions maps each template CodeUri to its constructor. A function in
// template.yaml without an entry here fails the start (and a test).
var Functions = map[string]Function{
	"functions/authorizer": {Authorizer: func(d wire.Deps) gateway.AuthorizerHandler {
		return gateway.AuthorizerHandler(authorizerwire.Handler(d))
	}},
	"functions/users":    {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(userswire.Handler(d)) }},
	"functions/accounts": {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(accountswire.Handler(d)) }},
	"functions/roles":    {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(roleswire.Handler(d)) }},
	"functions/notifier": {Queue: func(d wire.Deps) sqssource.Handler { return sqssource.Handler(notifierwire.Handler(d)) }},

	// Applications and tasks (issue 6). Locally, run-action may call loopback only.
	"functions/applications": {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(applicationswire.Handler(d)) }},
	"functions/tasks":        {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(taskswire.Handler(d)) }},
	"functions/task-worker":  {Queue: func(d wire.Deps) sqssource.Handler { return sqssource.Handler(taskworkerwire.Local(d)) }},

	// Application tests (issue 9). The runner's load generator sends to the stand-in edge only.
	"functions/tests":       {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(testswire.Handler(d)) }},
	"functions/test-runner": {Queue: func(d wire.Deps) sqssource.Handler { return sqssource.Handler(testrunnerwire.Handler(d)) }},

	// Address sets and the metrics pipeline (issue 7).
	"functions/address-sets": {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(addresssetswire.Handler(d)) }},
	"functions/metrics":      {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(metricsapiwire.Handler(d)) }},
	"functions/aggregator":   {Queue: func(d wire.Deps) sqssource.Handler { return sqssource.Handler(aggregatorwire.Handler(d)) }},

	// Application logs (issue 8); ingest rides on the aggregator above.
	"functions/logs": {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(logswire.Handler(d)) }},

	// The installation of a deployed stack (docs/deploy.md).
	"functions/installer": {CustomResource: func(d wire.Deps, s installer.SecretStore) cfn.CustomResourceFunction {
		return installerwire.Handler(d, s)
	}},
}
