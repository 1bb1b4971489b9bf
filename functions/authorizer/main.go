// Command authorizer is the API's Lambda REQUEST authorizer.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/authorizerwire"
)

func main() {
	d, err := authorizerwire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(authorizerwire.Handler(d))
}
