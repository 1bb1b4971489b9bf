// Package metricswire wires the metrics function (functions/metrics) and
// the metrics-queue sender the address-sets function, the aggregator and
// the test runner share.
package metricswire

import (
	"context"

	"cads/shared/apigw"
	"cads/shared/metrics"
	"cads/shared/wire"
)

// FromEnv reads the metrics function's dependencies from the environment.
func FromEnv(ctx context.Context) (wire.Deps, error) { return wire.FromEnv(ctx) }

// Handler is the metrics function's handler: the metrics of applications
// and address sets.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, metrics.NewHandler(d.Store, d.Log))
}

// Sender is wire.MetricsQueue, or nil where none is configured (address-set
// events then wait in their outbox for the sweep; test runs keep no
// access records).
func Sender(d wire.Deps) metrics.Sender {
	if url := d.QueueURL(wire.MetricsQueue); url != "" {
		return metrics.SQSSender{Client: d.SQS, QueueURL: url}
	}
	return nil
}
