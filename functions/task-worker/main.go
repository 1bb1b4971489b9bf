// Command task-worker runs tasks from the task queue (SQS event source,
// partial batch responses) and, on every invocation including the
// scheduled one, sweeps the outbox of every queue (shared/outbox).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/taskworkerwire"
)

func main() {
	d, err := taskworkerwire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(taskworkerwire.Handler(d))
}
