// Command tasks serves /v2/tasks: running tasks on applications and
// reading them.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/taskswire"
)

func main() {
	d, err := taskswire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(taskswire.Handler(d))
}
