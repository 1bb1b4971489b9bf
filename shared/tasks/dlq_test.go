package tasks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/localaws"
	"cads/infra/sam"
	"cads/infra/sqssource"
	"cads/shared/domain"
	"cads/shared/outbox"
	"cads/shared/tasks"
)

// The worker behind a real SQS event source (goaws, the local platform's
// SQS server): a task that keeps failing retryably is marked failed by the
// attempt that exhausts the redrive policy's receive count, its
// application goes back to where it was and its message ends in the
// dead-letter queue; so does a message that names no task.
func TestPoisonTasksEndInTheDLQ(t *testing.T) {
	ctx := context.Background()
	endpoint, stop, err := localaws.StartSQS(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop(ctx) }()
	client, err := localaws.SQSClient(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	const receives = 3
	queues, err := localaws.EnsureQueues(ctx, client, map[string]sam.Queue{
		"Tasks":    {LogicalID: "Tasks", VisibilityTimeout: 1, RedrivePolicy: &sam.RedrivePolicy{DeadLetterQueue: "TasksDLQ", MaxReceiveCount: receives}},
		"TasksDLQ": {LogicalID: "TasksDLQ", VisibilityTimeout: 30},
	}, func(id string) string { return "cads-dlq-test-" + strings.ToLower(id) })
	if err != nil {
		t.Fatal(err)
	}

	e := newEnv(t)
	e.w.MaxAttempts = receives
	e.dp.failures.Store(-1)
	e.ob, e.outbox = newOutbox(e.st, outbox.SQS{Client: client, URLs: map[string]string{"TasksQueue": queues["Tasks"].URL}})
	a := e.app(domain.AppRunning)
	tk := e.submit(tasks.TypeStop, a.ID, nil)
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queues["Tasks"].URL), MessageBody: aws.String("not a task")}); err != nil {
		t.Fatal(err)
	}

	srcCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	src := &sqssource.Source{Client: client, QueueURL: queues["Tasks"].URL, QueueARN: queues["Tasks"].ARN, WaitTime: time.Second,
		ReportBatchItemFailures: true, Timeout: 10 * time.Second, Handler: sqssource.Handler(e.w.Handle), Logger: quiet}
	go func() { defer close(done); _ = src.Run(srcCtx) }()
	defer func() { cancel(); <-done }()

	dead := map[string]bool{}
	deadline := time.Now().Add(45 * time.Second)
	for len(dead) < 2 && time.Now().Before(deadline) {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queues["TasksDLQ"].URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			dead[aws.ToString(m.Body)] = true
		}
	}
	if !dead[`{"task":"`+tk.ID+`"}`] || !dead["not a task"] {
		t.Fatalf("dead-letter queue holds %v", dead)
	}
	got, app := e.task(tk.ID), e.appNow(a.ID)
	if got.State != domain.TaskFailed || got.Attempts != receives || !strings.Contains(got.Message, "failed after 3 attempts") {
		t.Fatalf("task %s after %d attempts: %q", got.State, got.Attempts, got.Message)
	}
	if app.State != domain.AppRunning || app.TransitionTask != "" {
		t.Fatalf("application %s (held by %q), want running again", app.State, app.TransitionTask)
	}
}
