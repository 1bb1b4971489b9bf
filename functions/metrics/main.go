// Command metrics serves the metrics endpoints of applications and
// address sets.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/metricsapiwire"
)

func main() {
	d, err := metricsapiwire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(metricsapiwire.Handler(d))
}
