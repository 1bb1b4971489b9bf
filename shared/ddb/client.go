package ddb

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Defaults applied by NewClient when an endpoint override is present and the
// environment does not supply them.
const (
	LocalRegion          = "us-east-1"
	LocalAccessKeyID     = "local"
	LocalSecretAccessKey = "local"
)

// NewClient builds a DynamoDB client from the environment
// (config.LoadDefaultConfig). AWS_ENDPOINT_URL_DYNAMODB (and the global
// AWS_ENDPOINT_URL, or endpoint_url in the shared config) is honoured by the
// SDK itself; optFns may also set Options.BaseEndpoint.
//
// When, after all optFns have run, the client has an endpoint override
// (Options.BaseEndpoint non-empty), NewClient also
//   - disables response checksum validation (local servers send no
//     X-Amz-Crc32 header);
//   - sets the region to LocalRegion if none is configured;
//   - replaces the credentials with static dummy values if the environment
//     configures none, i.e. the default chain fell through to the EC2
//     instance-metadata provider (no env keys, profile, web identity or
//     container credentials). A local run therefore needs no AWS setup and
//     never waits on IMDS. Code pointing the override at a real AWS endpoint
//     from EC2 must configure credentials explicitly.
//
// Every client retries contention and throttling by DefaultRetries
// (WithRetries, applied before optFns, which may replace it).
//
// Without an override the client is otherwise dynamodb.NewFromConfig(cfg, optFns...).
func NewClient(ctx context.Context, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := LoadConfig(ctx)
	if err != nil {
		return nil, err
	}
	fns := append(append([]func(*dynamodb.Options){WithRetries(DefaultRetries)}, optFns...), applyLocalDefaults)
	return dynamodb.NewFromConfig(cfg, fns...), nil
}

// LoadConfig is the SDK's default configuration (environment, shared
// files, the Lambda's role) with an HTTP client that owns its request
// bodies (OwnBodies): every AWS client of the service is built from it.
func LoadConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS config: %w", err)
	}
	cfg.HTTPClient = OwnBodies(cfg.HTTPClient)
	return cfg, nil
}

// applyLocalDefaults runs last among the client options; see NewClient.
func applyLocalDefaults(o *dynamodb.Options) {
	if aws.ToString(o.BaseEndpoint) == "" {
		return
	}
	o.DisableValidateResponseChecksum = true
	if o.Region == "" {
		o.Region = LocalRegion
	}
	if o.Credentials == nil || aws.IsCredentialsProvider(o.Credentials, (*ec2rolecreds.Provider)(nil)) {
		o.Credentials = credentials.NewStaticCredentialsProvider(LocalAccessKeyID, LocalSecretAccessKey, "")
	}
}
