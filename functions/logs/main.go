// Command logs serves /v2/applications/{id}/logs: querying the stored
// application log records and submitting custom logs.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/logswire"
)

func main() {
	d, err := logswire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(logswire.Handler(d))
}
