package wire_test

import (
	"context"
	"strings"
	"testing"

	"cads/shared/wire"
)

// fromEnv runs wire.FromEnv with a table, a local DynamoDB endpoint (no
// call is made) and queues, the given QUEUE_URL_* values.
func fromEnv(t *testing.T, queues map[string]string, opts ...wire.Option) (wire.Deps, error) {
	t.Helper()
	t.Setenv("TABLE_NAME", "cads-test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
	for id, url := range queues {
		t.Setenv("QUEUE_URL_"+id, url)
	}
	return wire.FromEnv(context.Background(), opts...)
}

func TestFromEnvQueues(t *testing.T) {
	const url = "https://sqs.us-east-1.amazonaws.com/123456789012/tasks"

	t.Run("no queue, no SQS client", func(t *testing.T) {
		d, err := fromEnv(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.SQS != nil || d.Store == nil || d.Log == nil {
			t.Fatalf("deps: SQS %v, store %v, log %v", d.SQS, d.Store, d.Log)
		}
	})

	t.Run("a queue with WithSQS", func(t *testing.T) {
		d, err := fromEnv(t, map[string]string{wire.TasksQueue: url}, wire.WithSQS)
		if err != nil {
			t.Fatal(err)
		}
		if d.SQS == nil || d.QueueURL(wire.TasksQueue) != url || d.QueueURL(wire.MetricsQueue) != "" {
			t.Fatalf("SQS %v, tasks queue %q, metrics queue %q", d.SQS, d.QueueURL(wire.TasksQueue), d.QueueURL(wire.MetricsQueue))
		}
	})

	// A function whose wiring forgot WithSQS would never send to the queue
	// the template gives it: it must not start.
	t.Run("a queue without WithSQS", func(t *testing.T) {
		_, err := fromEnv(t, map[string]string{wire.TasksQueue: url})
		if err == nil || !strings.Contains(err.Error(), "QUEUE_URL_TasksQueue") || !strings.Contains(err.Error(), "WithSQS") {
			t.Fatalf("err = %v, want one naming QUEUE_URL_TasksQueue and WithSQS", err)
		}
	})

	t.Run("no table", func(t *testing.T) {
		t.Setenv("TABLE_NAME", "")
		if _, err := wire.FromEnv(context.Background()); err == nil {
			t.Fatal("FromEnv without TABLE_NAME succeeded")
		}
	})
}

// QueueURL names no queue without an SQS client, whatever the URLs: the
// caller then takes its no-queue path instead of a nil client.
func TestQueueURLNeedsAClient(t *testing.T) {
	d := wire.Deps{QueueURLs: map[string]string{wire.MetricsQueue: "http://127.0.0.1:1/q"}}
	if got := d.QueueURL(wire.MetricsQueue); got != "" {
		t.Fatalf("QueueURL without a client = %q", got)
	}
}
