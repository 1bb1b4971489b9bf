// Command users serves /v2/users: users, access keys and the caller's own
// authorization.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/userswire"
)

func main() {
	d, err := userswire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(userswire.Handler(d))
}
