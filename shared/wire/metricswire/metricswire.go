// Package metricswire wires the metrics-queue senders the address-sets
// function, the aggregator and the test runner share (the metrics
// function's own wiring is metricsapiwire).
package metricswire

import (
	"cads/shared/metrics"
	"cads/shared/outbox"
	"cads/shared/wire"
)

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
	return outbox.New(d.Store.Tasks, outbox.SQS{Client: d.SQS, URLs: d.QueueURLs}, d.Log).Queue(wire.MetricsQueue)
}
