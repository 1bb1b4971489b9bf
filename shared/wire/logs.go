package wire

import (
	"cads/shared/apigw"
	"cads/shared/logs"
)

// Logs is the logs function's handler: GET and POST
// /v2/applications/{id}/logs.
func Logs(d Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, logs.NewHandler(d.Store, d.Log))
}

// logIngester stores the log records of the ingest batches the aggregator
// folds.
func logIngester(d Deps) *logs.Ingester { return logs.NewIngester(d.Store, d.Log) }
