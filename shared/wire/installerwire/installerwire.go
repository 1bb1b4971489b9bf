// Package installerwire wires the installer function (functions/installer),
// the custom resource that bootstraps a deployed stack.
package installerwire

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"cads/shared/ddb"
	"cads/shared/installer"
	"cads/shared/wire"
)

// FromEnv reads the installer's dependencies from the environment, with
// the stack's secret store.
func FromEnv(ctx context.Context) (wire.Deps, installer.SecretStore, error) {
	d, err := wire.FromEnv(ctx)
	if err != nil {
		return d, nil, err
	}
	cfg, err := ddb.LoadConfig(ctx)
	if err != nil {
		return d, nil, fmt.Errorf("aws config: %w", err)
	}
	return d, installer.SecretsManager{Client: secretsmanager.NewFromConfig(cfg)}, nil
}

// Handler is the custom resource's handler.
func Handler(d wire.Deps, s installer.SecretStore) cfn.CustomResourceFunction {
	return (&installer.Installer{Store: d.Store, Secrets: s, Log: d.Log}).Handle
}
