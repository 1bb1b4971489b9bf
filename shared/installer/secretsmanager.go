package installer

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsManager is the SecretStore on AWS.
type SecretsManager struct {
	Client *secretsmanager.Client
}

// Put stores value as a new version labelled AWSCURRENT.
func (s SecretsManager) Put(ctx context.Context, secretID, value string) error {
	if _, err := s.Client.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId:     aws.String(secretID),
		SecretString: aws.String(value),
	}); err != nil {
		return fmt.Errorf("put secret value: %w", err)
	}
	return nil
}

// HasValue tells whether a version carries the AWSCURRENT label; it reads
// the secret's metadata only, never its value.
func (s SecretsManager) HasValue(ctx context.Context, secretID string) (bool, error) {
	out, err := s.Client.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(secretID)})
	if err != nil {
		return false, fmt.Errorf("describe secret: %w", err)
	}
	for _, stages := range out.VersionIdsToStages {
		if slices.Contains(stages, "AWSCURRENT") {
			return true, nil
		}
	}
	return false, nil
}
