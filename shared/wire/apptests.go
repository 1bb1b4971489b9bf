package wire

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/apptests"
	"cads/shared/loadgen"
	"cads/shared/metrics"
)

// TestRunsQueue is the logical id, in template.yaml, of the queue of
// application test runs.
const TestRunsQueue = "TestRunsQueue"

// Tests is the tests function's handler: application test configurations
// and starting their runs, which are queued on TestRunsQueue.
func Tests(d Deps) apigw.ProxyHandler {
	var q apptests.Queue
	if url := d.QueueURLs[TestRunsQueue]; url != "" && d.SQS != nil {
		q = sqsQueue{client: d.SQS, url: url}
	}
	return apigw.Lambda(d.Log, apptests.New(d.Store, access.New(d.Store, d.Log), q, d.Log))
}

// TestRunner is the test runner function's handler: it executes queued
// runs with the load generator, which delivers every request to the
// platform's edge (d.Edge) and nowhere else (docs/application-tests.md),
// and sends the access records of runs that target an application to
// MetricsQueue.
func TestRunner(d Deps) apptests.RunHandler {
	var sink apptests.RecordSink
	if url := d.QueueURLs[MetricsQueue]; url != "" && d.SQS != nil {
		sink = metrics.SQSSender{Client: d.SQS, QueueURL: url}
	}
	return apptests.NewRunner(d.Store, loadgen.Local{Edge: d.Edge}, sink, d.Log)
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
