// Command accounts serves /v2/accounts: the account tree, entitlements and
// billing.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/accountswire"
)

func main() {
	d, err := accountswire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(accountswire.Handler(d))
}
