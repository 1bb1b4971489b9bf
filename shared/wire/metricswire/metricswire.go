// Package metricswire wires the metrics function (functions/metrics) and
// the metrics-queue senders the address-sets function, the aggregator and
// the test runner share.
package metricswire

import (
	"context"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/metrics"
	"cads/shared/outbox"
	"cads/shared/wire"
)

// FromEnv reads the metrics function's dependencies from the environment.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the metrics function's handler: the metrics of applications
// and address sets.
func Handler(d wire.Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, metrics.NewHandler(d.Store, access.New(d.Store, d.Log, access.WithStaleness(d.AuthzStaleness)), d.Log))
}

// Sender sends to wire.MetricsQueue what needs no outbox marker (expiry
// wake-ups, a test run's access records), or is nil where no metrics
// queue is configured (test runs then keep no access records).
func Sender(d wire.Deps) metrics.Sender {
	if d.QueueURL(wire.MetricsQueue) != "" {
		return outbox.SQS{Client: d.SQS, URLs: d.QueueURLs}.To(wire.MetricsQueue)
	}
	return nil
}

// Events is the outbox of wire.MetricsQueue, which address-set events go
// through; without a metrics queue they wait in it.
func Events(d wire.Deps) *outbox.Queue {
	return outbox.New(d.Store, outbox.SQS{Client: d.SQS, URLs: d.QueueURLs}, d.Log).Queue(wire.MetricsQueue)
}
