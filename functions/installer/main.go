// Command installer is the CloudFormation custom resource that bootstraps
// a deployed stack's table and stores the operator key in Secrets Manager.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"

	"cads/shared/wire/installerwire"
)

func main() {
	d, secrets, err := installerwire.FromEnv(context.Background())
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(cfn.LambdaWrap(installerwire.Handler(d, secrets)))
}
