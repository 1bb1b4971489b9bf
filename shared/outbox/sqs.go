package outbox

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQS is the one SQS sender of every producer: it sends to the queues
// whose URLs it knows, by logical id (wire.Deps.QueueURLs).
type SQS struct {
	Client *sqs.Client
	URLs   map[string]string
}

// MaxDelay is SQS' longest message delay.
const MaxDelay = 15 * time.Minute

func (s SQS) url(queue string) (string, error) {
	u := s.URLs[queue]
	if s.Client == nil || u == "" {
		return "", fmt.Errorf("no %s is configured", queue)
	}
	return u, nil
}

// Send sends each body as one message, ten per SendMessageBatch call; a
// batch with refused entries is an error (the whole batch is sent again
// later, which consumers tolerate).
func (s SQS) Send(ctx context.Context, queue string, bodies ...string) error {
	u, err := s.url(queue)
	if err != nil {
		return err
	}
	for start := 0; start < len(bodies); start += 10 {
		batch := bodies[start:min(start+10, len(bodies))]
		entries := make([]sqstypes.SendMessageBatchRequestEntry, len(batch))
		for i, b := range batch {
			entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)}
		}
		out, err := s.Client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(u), Entries: entries})
		if err != nil {
			return fmt.Errorf("send to %s: %w", queue, err)
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("send to %s: %d of %d messages refused (%s)", queue, len(out.Failed), len(entries), aws.ToString(out.Failed[0].Message))
		}
	}
	return nil
}

// SendAfter sends one message that becomes visible after delay (at most
// MaxDelay). It uses SendMessage: per-message delays of SendMessageBatch
// are not honoured by every SQS implementation.
func (s SQS) SendAfter(ctx context.Context, queue, body string, delay time.Duration) error {
	u, err := s.url(queue)
	if err != nil {
		return err
	}
	secs := int32(min(max(delay, 0), MaxDelay) / time.Second)
	if _, err := s.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String(body), DelaySeconds: secs}); err != nil {
		return fmt.Errorf("send to %s: %w", queue, err)
	}
	return nil
}

// To is s bound to one queue: the sender of messages that need no marker
// (expiry wake-ups, a test run's access records, the edge's batches).
func (s SQS) To(queue string) Bound { return Bound{s: s, queue: queue} }

// Bound sends to one queue.
type Bound struct {
	s     SQS
	queue string
}

// Send sends each body as one message.
func (b Bound) Send(ctx context.Context, bodies ...string) error {
	return b.s.Send(ctx, b.queue, bodies...)
}

// SendAfter sends one message visible after delay.
func (b Bound) SendAfter(ctx context.Context, body string, delay time.Duration) error {
	return b.s.SendAfter(ctx, b.queue, body, delay)
}
