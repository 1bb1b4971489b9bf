package metrics

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSSender sends to the metrics queue.
type SQSSender struct {
	Client   *sqs.Client
	QueueURL string
}

// Send sends each body as one message, ten per call.
func (s SQSSender) Send(ctx context.Context, bodies ...string) error {
	for start := 0; start < len(bodies); start += 10 {
		batch := bodies[start:min(start+10, len(bodies))]
		entries := make([]sqstypes.SendMessageBatchRequestEntry, len(batch))
		for i, b := range batch {
			entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)}
		}
		out, err := s.Client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.QueueURL), Entries: entries})
		if err != nil {
			return fmt.Errorf("send to metrics queue: %w", err)
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("send to metrics queue: %d of %d messages refused (%s)", len(out.Failed), len(entries), aws.ToString(out.Failed[0].Message))
		}
	}
	return nil
}

// SendAfter sends one message that becomes visible after delay (at most 15
// minutes, SQS' limit). It uses SendMessage: per-message delays of
// SendMessageBatch are not honoured by every SQS implementation.
func (s SQSSender) SendAfter(ctx context.Context, body string, delay time.Duration) error {
	secs := int32(min(max(delay, 0), maxWakeDelay) / time.Second)
	_, err := s.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL), MessageBody: aws.String(body), DelaySeconds: secs})
	if err != nil {
		return fmt.Errorf("send to metrics queue: %w", err)
	}
	return nil
}
