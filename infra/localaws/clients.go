package localaws

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
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
		HTTPClient:   ownBodies{awshttp.NewBuildableClient()},
	}, nil
}

// ownBodies hands the transport a request body of its own, read in full
// from the SDK's.
//
// The SDK closes its request body as soon as the response arrives, and
// its body then answers WriteTo with io.EOF. net/http puts a body it does
// not know to be in memory on the wire before it has finished with it (it
// still reads the body once more to check for bytes beyond
// Content-Length), so a server that answers within that window has the
// SDK close the body under the transport's write loop, which takes the
// io.EOF for a failed write and closes the connection while the SDK reads
// the response: "use of closed network connection". Across a network the
// answer comes too late for that; a stand-in in the same process answers
// within microseconds, and a pause of the write loop (a garbage collection
// after a 1 MB page) opens the window wide. A *bytes.Reader is one net/http
// knows: it writes headers and body in one go before the server can answer,
// and nothing the SDK does afterwards reaches it.
type ownBodies struct{ next aws.HTTPClient }

func (c ownBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return c.next.Do(r)
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close() // Do owns the body, as http.Client.Do does
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	own := r.Clone(r.Context())
	own.Body, own.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	own.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return c.next.Do(own)
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
