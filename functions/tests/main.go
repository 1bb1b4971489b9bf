// Command tests serves /v2/tests: application test configurations and
// starting their runs.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/testswire"
)

func main() {
	d, err := testswire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(testswire.Handler(d))
}
