package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/dlq"
	"cads/infra/localaws"
	"cads/infra/testenv"
)

// A message that always fails ends in the DLQ after maxReceiveCount
// receives; the operator sees it (without consuming it) and redrives it
// to the queue it came from.
func TestDeadLetterListAndRedrive(t *testing.T) {
	ctx := context.Background()
	endpoint, stop, err := localaws.StartSQS(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	c, err := localaws.SQSClient(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := localaws.EnsureQueues(ctx, c, testenv.Template(t).Queues, func(id string) string { return "dlqtest-" + id })
	if err != nil {
		t.Fatal(err)
	}
	src, err := dlq.Resolve(ctx, c, infos["TasksQueue"].URL)
	if err != nil {
		t.Fatal(err)
	}
	if src.DLQ != infos["TasksDLQ"].ARN || src.MaxReceives < 1 {
		t.Fatalf("TasksQueue redrive: %+v, want DLQ %s", src, infos["TasksDLQ"].ARN)
	}
	const body = `{"task":"poison"}`
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src.URL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	// A worker that always fails: receive, never delete, let it come back
	// (at once: its visibility timeout is ended as if it had run out, which
	// counts the same towards the redrive policy; infra/localaws tests the
	// timeout itself).
	deadline := time.Now().Add(20 * time.Second)
	for receives := 0; ; {
		if time.Now().After(deadline) {
			t.Fatalf("the message did not reach the DLQ after %d receives", receives)
		}
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src.URL), VisibilityTimeout: 1, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		receives += len(out.Messages)
		for _, m := range out.Messages {
			testenv.Expire(t, c, src.URL, aws.ToString(m.ReceiptHandle))
		}
		d, err := dlq.Resolve(ctx, c, "dlqtest-TasksDLQ")
		if err != nil {
			t.Fatal(err)
		}
		if d.Messages > 0 {
			if receives < src.MaxReceives {
				t.Fatalf("dead-lettered after %d receives, maxReceiveCount %d", receives, src.MaxReceives)
			}
			break
		}
	}
	d, err := dlq.Resolve(ctx, c, "dlqtest-TasksDLQ")
	if err != nil {
		t.Fatal(err)
	}
	qs, err := dlq.Queues(ctx, c, "dlqtest-")
	if err != nil || len(qs) != len(infos) {
		t.Fatalf("Queues: %d queues, %v; want %d", len(qs), err, len(infos))
	}
	for range 2 { // looking twice shows the same message: a look consumes nothing
		ms, err := dlq.Peek(ctx, c, d, 10)
		if err != nil || len(ms) != 1 || ms[0].Body != body {
			t.Fatalf("Peek = %+v, %v; want the poison message", ms, err)
		}
	}
	back, err := dlq.SourceOf(ctx, c, d)
	if err != nil || back.URL != src.URL {
		t.Fatalf("SourceOf = %+v, %v; want TasksQueue", back, err)
	}
	n, err := dlq.Redrive(ctx, c, d, back, 100)
	if err != nil || n != 1 {
		t.Fatalf("Redrive = %d, %v", n, err)
	}
	if ms, err := dlq.Peek(ctx, c, d, 10); err != nil || len(ms) != 0 {
		t.Fatalf("DLQ after redrive: %+v, %v", ms, err)
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src.URL), WaitTimeSeconds: 1})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != body {
		t.Fatalf("TasksQueue after redrive: %+v, %v", out.Messages, err)
	}
}
