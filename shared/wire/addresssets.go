package wire

import (
	"cads/shared/access"
	"cads/shared/addresssets"
	"cads/shared/apigw"
	"cads/shared/metrics"
)

// MetricsQueue is the logical id, in template.yaml, of the queue the
// aggregator consumes: the edge's ingest batches, address-set events and
// expiry wake-ups.
const MetricsQueue = "MetricsQueue"

// metricsSender is the metrics queue, or nil where none is configured
// (address-set events then wait in their outbox for the sweep).
func metricsSender(d Deps) metrics.Sender {
	if url := d.QueueURLs[MetricsQueue]; url != "" && d.SQS != nil {
		return metrics.SQSSender{Client: d.SQS, QueueURL: url}
	}
	return nil
}

func addressSetService(d Deps) *addresssets.Service {
	return addresssets.NewService(d.Store, metricsSender(d), d.Log)
}

// AddressSets is the address-sets function's handler: /v2/address-sets
// and /v2/address-sets/{id}[/addresses].
func AddressSets(d Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, addresssets.New(addressSetService(d), d.Store, access.New(d.Store, d.Log), d.Log))
}

// Metrics is the metrics function's handler: the metrics of applications
// and address sets.
func Metrics(d Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, metrics.NewHandler(d.Store, d.Log))
}

// Aggregator is the metrics queue's handler.
func Aggregator(d Deps) metrics.SQSHandler {
	send := metricsSender(d)
	a := metrics.NewAggregator(d.Store, addresssets.NewService(d.Store, send, d.Log), send, d.Log)
	a.Logs = logIngester(d)
	return a.Handle
}
