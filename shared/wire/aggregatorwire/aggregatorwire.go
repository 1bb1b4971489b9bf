// Package aggregatorwire wires the aggregator (functions/aggregator), the
// metrics queue's consumer.
package aggregatorwire

import (
	"context"

	"cads/shared/addresssets"
	"cads/shared/logs"
	"cads/shared/metrics"
	"cads/shared/wire"
	"cads/shared/wire/metricswire"
)

// FromEnv reads the aggregator's dependencies from the environment, with
// the SQS client for wire.MetricsQueue (expiry wake-ups, and the events of
// the address-set changes its sweep and the edge's additions make).
func FromEnv(ctx context.Context) (wire.Deps, error) { return wire.FromEnv(ctx, wire.WithSQS) }

// Handler is the metrics queue's handler: it folds the edge's records and
// the address-set events into metric buckets, stores the log records of
// ingest batches, applies the edge's additions to dynamic address sets and
// runs the address-expiry sweep.
func Handler(d wire.Deps) metrics.SQSHandler {
	send := metricswire.Sender(d)
	a := metrics.NewAggregator(d.Store.Metrics, addresssets.NewService(addresssets.NewStore(d.Store), metricswire.Events(d), send, d.Log), send, d.Log)
	a.Logs = logs.NewIngester(d.Store.Logs, d.Log)
	return a.Handle
}
