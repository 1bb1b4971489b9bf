package wire_test

import (
	"maps"
	"slices"
	"testing"

	"cads/shared/apigw"
	"cads/shared/routes"
	"cads/shared/wire"
	"cads/shared/wire/accountswire"
	"cads/shared/wire/addresssetswire"
	"cads/shared/wire/applicationswire"
	"cads/shared/wire/logswire"
	"cads/shared/wire/metricsapiwire"
	"cads/shared/wire/roleswire"
	"cads/shared/wire/taskswire"
	"cads/shared/wire/testswire"
	"cads/shared/wire/userswire"
)

// apiRoutes is each API function's router, by its folder under
// functions/ (the contract's x-cads-function).
var apiRoutes = map[string]func(wire.Deps) *apigw.Router{
	"users":        userswire.Routes,
	"accounts":     accountswire.Routes,
	"roles":        roleswire.Routes,
	"applications": applicationswire.Routes,
	"tasks":        taskswire.Routes,
	"tests":        testswire.Routes,
	"address-sets": addresssetswire.Routes,
	"metrics":      metricsapiwire.Routes,
	"logs":         logswire.Routes,
}

// Every operation of the contract has exactly one handler in the function
// the contract names, and every handler serves an operation of its
// function: a handler for another id panics in apigw.Router.Handle, which
// fails the subtest.
func TestEveryOperationHasOneHandler(t *testing.T) {
	d, err := fromEnv(t, map[string]string{
		wire.NotificationsQueue: "https://sqs.us-east-1.amazonaws.com/123456789012/n",
		wire.TestRunsQueue:      "https://sqs.us-east-1.amazonaws.com/123456789012/r",
		wire.TasksQueue:         "https://sqs.us-east-1.amazonaws.com/123456789012/t",
		wire.MetricsQueue:       "https://sqs.us-east-1.amazonaws.com/123456789012/m",
	}, wire.WithSQS)
	if err != nil {
		t.Fatal(err)
	}
	tables := routes.ByFunction()
	for _, f := range slices.Sorted(maps.Keys(tables)) {
		t.Run(f, func(t *testing.T) {
			build, ok := apiRoutes[f]
			if !ok {
				t.Fatalf("the contract names function %s for %d operations; apiRoutes has no router for it", f, len(tables[f]))
			}
			if missing := build(d).Unhandled(); len(missing) > 0 {
				t.Errorf("operations without a handler: %v", missing)
			}
		})
	}
	for f := range apiRoutes {
		if _, ok := tables[f]; !ok {
			t.Errorf("%s has a router but the contract gives it no operation", f)
		}
	}
}
