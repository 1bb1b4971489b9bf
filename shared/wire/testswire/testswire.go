// Package testswire wires the tests function (functions/tests).
package testswire

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/apptests"
	"cads/shared/wire"
)

// FromEnv reads the tests function's dependencies from the environment,
// with the SQS client for wire.TestRunsQueue.
func FromEnv(ctx context.Context) (wire.Deps, error) {
	return wire.FromEnv(ctx, wire.WithSQS, wire.WithAuthzStaleness(access.DefaultStaleness))
}

// Handler is the tests function's handler: application test
// configurations and starting their runs, which are queued on
// wire.TestRunsQueue.
func Handler(d wire.Deps) apigw.ProxyHandler {
	var q apptests.Queue
	if url := d.QueueURL(wire.TestRunsQueue); url != "" {
		q = sqsQueue{client: d.SQS, url: url}
	}
	return apigw.Lambda(d.Log, apptests.New(d.Store, access.New(d.Store, d.Log, access.WithStaleness(d.AuthzStaleness)), q, d.Log))
}

// sqsQueue sends to one SQS queue.
type sqsQueue struct {
	client *sqs.Client
	url    string
}

func (q sqsQueue) Send(ctx context.Context, body []byte) error {
	_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(string(body))})
	return err
}
