package local

import (
	"github.com/aws/aws-lambda-go/cfn"

	"cads/infra/gateway"
	"cads/infra/sqssource"
	"cads/shared/installer"
	"cads/shared/wire"
)

// Function is what the local platform runs for one function folder: the
// same constructor its Lambda main calls. Exactly one field is set.
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
	"functions/authorizer": {Authorizer: func(d wire.Deps) gateway.AuthorizerHandler { return gateway.AuthorizerHandler(wire.Authorizer(d)) }},
	"functions/users":      {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.Users(d)) }},
	"functions/accounts":   {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.Accounts(d)) }},
	"functions/roles":      {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.Roles(d)) }},
	"functions/notifier":   {Queue: func(d wire.Deps) sqssource.Handler { return sqssource.Handler(wire.Notifier(d)) }},

	// Applications and tasks (issue 6). Locally, run-action may call loopback only.
	"functions/applications": {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.Applications(d)) }},
	"functions/tasks":        {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.Tasks(d)) }},
	"functions/task-worker":  {Queue: func(d wire.Deps) sqssource.Handler { return sqssource.Handler(wire.LocalTaskWorker(d)) }},

	// Application tests (issue 9). The runner's load generator sends to the stand-in edge only.
	"functions/tests":       {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.Tests(d)) }},
	"functions/test-runner": {Queue: func(d wire.Deps) sqssource.Handler { return sqssource.Handler(wire.TestRunner(d)) }},

	// Address sets and the metrics pipeline (issue 7).
	"functions/address-sets": {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.AddressSets(d)) }},
	"functions/metrics":      {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.Metrics(d)) }},
	"functions/aggregator":   {Queue: func(d wire.Deps) sqssource.Handler { return sqssource.Handler(wire.Aggregator(d)) }},

	// Application logs (issue 8); ingest rides on the aggregator above.
	"functions/logs": {API: func(d wire.Deps) gateway.ProxyHandler { return gateway.ProxyHandler(wire.Logs(d)) }},

	// The installation of a deployed stack (docs/deploy.md).
	"functions/installer": {CustomResource: func(d wire.Deps, s installer.SecretStore) cfn.CustomResourceFunction {
		return (&installer.Installer{Store: d.Store, Secrets: s, Log: d.Log}).Handle
	}},
}
