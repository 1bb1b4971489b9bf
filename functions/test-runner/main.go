// Command test-runner executes queued application test runs
// (SQS-triggered) and records their results.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/testrunnerwire"
)

func main() {
	d, err := testrunnerwire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(testrunnerwire.Handler(d))
}
