// Package testrunnerwire wires the test runner (functions/test-runner).
package testrunnerwire

import (
	"context"

	"cads/shared/loadgen"
	"cads/shared/tests"
	"cads/shared/wire"
	"cads/shared/wire/metricswire"
)

// FromEnv reads the test runner's dependencies from the environment, with
// the SQS client for wire.MetricsQueue.
func FromEnv(ctx context.Context) (wire.Deps, error) { return wire.FromEnv(ctx, wire.WithSQS) }

// Handler is the test runner's handler: it executes queued runs with the
// load generator, which delivers every request to the platform's edge
// (d.Edge) and nowhere else (docs/application-tests.md), and sends the
// access records of runs that target an application to wire.MetricsQueue.
func Handler(d wire.Deps) tests.RunHandler {
	return tests.NewRunner(tests.NewRunnerStore(d.Store), loadgen.Local{Edge: loadgen.Edge(d.Edge)}, metricswire.Sender(d), d.Log)
}
