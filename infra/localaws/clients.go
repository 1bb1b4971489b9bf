package localaws

import (
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/shared/ddb"
)

// localConfig is built by hand rather than with config.LoadDefaultConfig so
// that nothing from the environment (AWS_PROFILE, shared config files,
// AWS_ENDPOINT_URL_*) can point a local client at real AWS or break it.
func localConfig(endpoint string) (aws.Config, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return aws.Config{}, fmt.Errorf("local endpoint %q: want http://host:port", endpoint)
	}
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(endpoint),
		HTTPClient:   ddb.OwnBodies(awshttp.NewBuildableClient()),
	}, nil
}

// DynamoClient returns a DynamoDB client for a local endpoint (see
// StartDynamo). minidyn sends no X-Amz-Crc32 header, so response checksum
// validation is off; it retries as a Lambda's client does
// (ddb.WithRetries(ddb.DefaultRetries)); optFns run after that and may
// override either.
func DynamoClient(ctx context.Context, endpoint string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := localConfig(endpoint)
	if err != nil {
		return nil, err
	}
	opts := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true
	}, ddb.WithRetries(ddb.DefaultRetries)}, optFns...)
	return dynamodb.NewFromConfig(cfg, opts...), nil
}

// SQSClient returns an SQS client for a local endpoint (see StartSQS).
//
// goaws' queue URLs carry a host that does not resolve. That needs no
// workaround: this SDK version speaks SQS' JSON protocol and sends every
// call to the client's endpoint; QueueUrl is only a request field, of which
// goaws uses the last path segment.
func SQSClient(ctx context.Context, endpoint string, optFns ...func(*sqs.Options)) (*sqs.Client, error) {
	cfg, err := localConfig(endpoint)
	if err != nil {
		return nil, err
	}
	return sqs.NewFromConfig(cfg, optFns...), nil
}
