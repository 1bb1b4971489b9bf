// Command applications serves /v2/applications: applications, their
// actions and page controls.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/applicationswire"
)

func main() {
	d, err := applicationswire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(applicationswire.Handler(d))
}
