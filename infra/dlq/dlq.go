// Package dlq lets an operator see and redrive the messages that the
// workers gave up on: every worker queue in template.yaml has a dead-letter
// queue (RedrivePolicy, maxReceiveCount) where a message lands after that
// many failed receives, and nothing consumes those queues.
package dlq

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQS is the part of the SQS API this package uses.
type SQS interface {
	ListQueues(context.Context, *sqs.ListQueuesInput, ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error)
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Queue is one queue and, for a queue with a redrive policy, its DLQ.
type Queue struct {
	Name, URL, ARN string
	Messages       int    // approximate visible messages
	InFlight       int    // approximate messages being processed
	DLQ            string // ARN of its dead-letter queue, if any
	MaxReceives    int    // its maxReceiveCount, if any
}

// Queues lists the queues whose name starts with prefix ("" for all), with
// their depth and redrive policy, sorted by name.
func Queues(ctx context.Context, c SQS, prefix string) ([]Queue, error) {
	in := &sqs.ListQueuesInput{}
	if prefix != "" {
		in.QueueNamePrefix = aws.String(prefix)
	}
	var out []Queue
	for {
		page, err := c.ListQueues(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		for _, u := range page.QueueUrls {
			q, err := describe(ctx, c, u)
			if err != nil {
				return nil, err
			}
			out = append(out, q)
		}
		if page.NextToken == nil {
			break
		}
		in.NextToken = page.NextToken
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func describe(ctx context.Context, c SQS, url string) (Queue, error) {
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		return Queue{}, fmt.Errorf("attributes of %s: %w", url, err)
	}
	q := Queue{URL: url, Name: url[strings.LastIndex(url, "/")+1:], ARN: a.Attributes["QueueArn"]}
	q.Messages, _ = strconv.Atoi(a.Attributes["ApproximateNumberOfMessages"])
	q.InFlight, _ = strconv.Atoi(a.Attributes["ApproximateNumberOfMessagesNotVisible"])
	if rp := a.Attributes["RedrivePolicy"]; rp != "" {
		var p struct {
			Target string `json:"deadLetterTargetArn"`
			Max    any    `json:"maxReceiveCount"` // a number or a string, depending on who wrote it
		}
		if err := json.Unmarshal([]byte(rp), &p); err != nil {
			return Queue{}, fmt.Errorf("redrive policy of %s: %w", url, err)
		}
		q.DLQ = p.Target
		q.MaxReceives, _ = strconv.Atoi(strings.Trim(fmt.Sprint(p.Max), `"`))
	}
	return q, nil
}

// Resolve finds a queue by name or URL.
func Resolve(ctx context.Context, c SQS, nameOrURL string) (Queue, error) {
	url := nameOrURL
	if !strings.Contains(nameOrURL, "/") {
		out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(nameOrURL)})
		if err != nil {
			return Queue{}, fmt.Errorf("queue %q: %w", nameOrURL, err)
		}
		url = aws.ToString(out.QueueUrl)
	}
	return describe(ctx, c, url)
}

// SourceOf is the queue whose redrive policy names dlq.
func SourceOf(ctx context.Context, c SQS, dlq Queue) (Queue, error) {
	qs, err := Queues(ctx, c, "")
	if err != nil {
		return Queue{}, err
	}
	for _, q := range qs {
		if q.DLQ != "" && q.DLQ == dlq.ARN {
			return q, nil
		}
	}
	return Queue{}, fmt.Errorf("no queue redrives to %s; name the target queue", dlq.Name)
}

// Message is a dead-lettered message.
type Message struct {
	ID, Body      string
	Receives      int    // ApproximateReceiveCount, including this look
	SentTimestamp string // epoch ms, as SQS reports it
	Attributes    map[string]types.MessageAttributeValue
	receipt       string
}

// Peek returns up to max messages of q and makes them visible again at
// once, so that looking changes nothing but their receive counts.
func Peek(ctx context.Context, c SQS, q Queue, max int) ([]Message, error) {
	var out []Message
	seen := map[string]bool{}
	for len(out) < max {
		batch, err := receive(ctx, c, q, min(10, max-len(out)), 30)
		if err != nil {
			return out, err
		}
		fresh := 0
		for _, m := range batch {
			if !seen[m.ID] {
				seen[m.ID] = true
				out = append(out, m)
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
	}
	for _, m := range out {
		_, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: aws.String(m.receipt), VisibilityTimeout: 0})
		if err != nil {
			return out, fmt.Errorf("release %s: %w", m.ID, err)
		}
	}
	return out, nil
}

func receive(ctx context.Context, c SQS, q Queue, n int, visibility int32) ([]Message, error) {
	r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.URL), MaxNumberOfMessages: int32(n), VisibilityTimeout: visibility, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.Name, err)
	}
	out := make([]Message, 0, len(r.Messages))
	for _, m := range r.Messages {
		rc, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		out = append(out, Message{ID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), Receives: rc,
			SentTimestamp: m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], Attributes: m.MessageAttributes, receipt: aws.ToString(m.ReceiptHandle)})
	}
	return out, nil
}

// Redrive moves up to max messages from dlq to target: each is sent to
// target first and deleted from dlq only once sent, so a failure midway
// can duplicate a message but never lose one (SQS delivers at least once,
// so the workers must tolerate a duplicate anyway).
func Redrive(ctx context.Context, c SQS, dlq, target Queue, max int) (moved int, err error) {
	for moved < max {
		// Long enough to send and delete the batch; a message whose move
		// fails comes back after it.
		batch, err := receive(ctx, c, dlq, min(10, max-moved), 60)
		if err != nil {
			return moved, err
		}
		if len(batch) == 0 {
			return moved, nil
		}
		for _, m := range batch {
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.URL), MessageBody: aws.String(m.Body), MessageAttributes: m.Attributes}); err != nil {
				return moved, fmt.Errorf("send %s to %s: %w", m.ID, target.Name, err)
			}
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq.URL), ReceiptHandle: aws.String(m.receipt)}); err != nil {
				return moved, fmt.Errorf("delete %s from %s (it was sent to %s and will be sent again): %w", m.ID, dlq.Name, target.Name, err)
			}
			moved++
		}
	}
	return moved, nil
}
