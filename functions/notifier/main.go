// Command notifier delivers queued invitations (SQS-triggered) and marks
// them sent.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/notifierwire"
)

func main() {
	d, err := notifierwire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(notifierwire.Handler(d))
}
