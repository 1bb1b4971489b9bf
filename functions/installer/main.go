// Command installer is the CloudFormation custom resource that bootstraps
// a deployed stack's table and stores the operator key in Secrets Manager.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"cads/shared/installer"
	"cads/shared/wire"
)

func main() {
	ctx := context.Background()
	d, err := wire.FromEnv(ctx)
	if err != nil {
		slog.Error("start", "error", err.Error())
		os.Exit(1)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		slog.Error("start: aws config", "error", err.Error())
		os.Exit(1)
	}
	in := &installer.Installer{Store: d.Store, Secrets: installer.SecretsManager{Client: secretsmanager.NewFromConfig(cfg)}, Log: d.Log}
	lambda.Start(cfn.LambdaWrap(in.Handle))
}
