// Command address-sets serves /v2/address-sets: address sets, their
// entries and the addresses they include.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/addresssetswire"
)

func main() {
	d, err := addresssetswire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(addresssetswire.Handler(d))
}
