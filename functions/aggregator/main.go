// Command aggregator consumes the metrics queue (SQS-triggered): it folds
// the edge's records and the address-set events into metric buckets,
// applies the edge's additions to dynamic address sets, and runs the
// address-expiry sweep.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/aggregatorwire"
)

func main() {
	d, err := aggregatorwire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(aggregatorwire.Handler(d))
}
