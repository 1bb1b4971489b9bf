// Command roles serves an account's roles, role invitations, groups, group
// invitations and service users, and the invitee's side of invitations.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/roleswire"
)

func main() {
	d, err := roleswire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(roleswire.Handler(d))
}
