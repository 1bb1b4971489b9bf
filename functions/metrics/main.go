// Command metrics serves the metrics endpoints of applications and
// address sets.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/metricswire"
)

func main() {
	d, err := metricswire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(metricswire.Handler(d))
}
