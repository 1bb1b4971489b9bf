package localaws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"cads/infra/sam"
)

// EnsureTable creates table name with the keys and indexes t declares. An
// existing table (ResourceInUseException) counts as success if its key
// schema matches. Local tables are always on-demand: capacity means nothing
// here. TTL is requested but minidyn does not implement UpdateTimeToLive, so
// its failure is only logged at debug. No waiter is used: minidyn creates
// tables synchronously and reports an empty TableStatus.
func EnsureTable(ctx context.Context, c *dynamodb.Client, name string, t sam.Table) error {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		KeySchema:   keySchema(t.KeySchema),
	}
	for _, d := range t.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(d.AttributeName),
			AttributeType: ddbtypes.ScalarAttributeType(d.AttributeType),
		})
	}
	for _, ix := range t.GlobalSecondaryIndexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ddbtypes.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.IndexName),
			KeySchema:  keySchema(ix.KeySchema),
			Projection: projection(ix.Projection),
		})
	}
	for _, ix := range t.LocalSecondaryIndexes {
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, ddbtypes.LocalSecondaryIndex{
			IndexName:  aws.String(ix.IndexName),
			KeySchema:  keySchema(ix.KeySchema),
			Projection: projection(ix.Projection),
		})
	}

	_, err := c.CreateTable(ctx, in)
	var inUse *ddbtypes.ResourceInUseException
	switch {
	case errors.As(err, &inUse):
		if err := checkExistingTable(ctx, c, name, in.KeySchema); err != nil {
			return err
		}
		slog.DebugContext(ctx, "table exists", "table", name)
	case err != nil:
		return fmt.Errorf("create table %s (%s): %w", name, t.LogicalID, err)
	default:
		slog.DebugContext(ctx, "table created", "table", name, "gsis", len(in.GlobalSecondaryIndexes))
	}

	if t.TTLAttribute != "" {
		_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(name),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{
				AttributeName: aws.String(t.TTLAttribute),
				Enabled:       aws.Bool(true),
			},
		})
		if err != nil {
			slog.DebugContext(ctx, "TTL not enabled: unsupported by the local DynamoDB; expired items stay",
				"table", name, "attribute", t.TTLAttribute, "err", err)
		}
	}
	return nil
}

// checkExistingTable refuses a table left over with another key schema,
// which would otherwise fail later with confusing validation errors.
func checkExistingTable(ctx context.Context, c *dynamodb.Client, name string, want []ddbtypes.KeySchemaElement) error {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe existing table %s: %w", name, err)
	}
	if out.Table == nil || len(out.Table.KeySchema) == 0 {
		return nil // nothing to compare against
	}
	got := out.Table.KeySchema
	same := slices.EqualFunc(got, want, func(a, b ddbtypes.KeySchemaElement) bool {
		return aws.ToString(a.AttributeName) == aws.ToString(b.AttributeName) && a.KeyType == b.KeyType
	})
	if !same {
		return fmt.Errorf("table %s exists with key schema %s, the template declares %s", name, keyString(got), keyString(want))
	}
	return nil
}

func keyString(ks []ddbtypes.KeySchemaElement) string {
	var parts []string
	for _, k := range ks {
		parts = append(parts, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func keySchema(ks []sam.KeyElement) []ddbtypes.KeySchemaElement {
	out := make([]ddbtypes.KeySchemaElement, 0, len(ks))
	for _, k := range ks {
		out = append(out, ddbtypes.KeySchemaElement{
			AttributeName: aws.String(k.AttributeName),
			KeyType:       ddbtypes.KeyType(k.KeyType),
		})
	}
	return out
}

func projection(p sam.Projection) *ddbtypes.Projection {
	out := &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(p.ProjectionType)}
	if len(p.NonKeyAttributes) > 0 {
		out.NonKeyAttributes = p.NonKeyAttributes
	}
	return out
}

// QueueInfo locates a queue created by EnsureQueues.
type QueueInfo struct {
	URL  string
	ARN  string
	Name string
}

// EnsureQueues creates every queue of qs, dead-letter queues before the
// queues that redrive to them, and (re)applies the template's attributes
// and redrive policy, so it can run again on existing queues. nameFor maps
// a logical id to the queue name; when it is nil or returns "", the
// template's QueueName is used, else the logical id. FIFO names get their
// ".fifo" suffix if missing. Returns queue locations by logical id.
func EnsureQueues(ctx context.Context, c *sqs.Client, qs map[string]sam.Queue, nameFor func(logicalID string) string) (map[string]QueueInfo, error) {
	order, err := dlqFirst(qs)
	if err != nil {
		return nil, err
	}
	infos := make(map[string]QueueInfo, len(qs))
	for _, id := range order {
		q := qs[id]
		name := queueName(q, nameFor)
		attrs := queueAttributes(q)
		if rp := q.RedrivePolicy; rp != nil {
			// dlqFirst put the dead-letter queue earlier in the order.
			policy, err := json.Marshal(map[string]string{
				"deadLetterTargetArn": infos[rp.DeadLetterQueue].ARN,
				"maxReceiveCount":     strconv.Itoa(rp.MaxReceiveCount),
			})
			if err != nil {
				return nil, fmt.Errorf("queue %s: redrive policy: %w", id, err)
			}
			attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] = string(policy)
		}

		create := map[string]string{}
		for k, v := range attrs {
			create[k] = v
		}
		if q.FIFO {
			create[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
		}
		var url string
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: create})
		switch {
		case err == nil:
			url = aws.ToString(out.QueueUrl)
		case isQueueExists(err):
			// Real SQS refuses CreateQueue for an existing queue whose
			// attributes differ; SetQueueAttributes below reconciles them.
			got, gerr := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
			if gerr != nil {
				return nil, fmt.Errorf("queue %s (%s): %w", id, name, errors.Join(err, gerr))
			}
			url = aws.ToString(got.QueueUrl)
		default:
			return nil, fmt.Errorf("create queue %s (%s): %w", id, name, err)
		}

		// goaws ignores the attributes of CreateQueue on an existing queue,
		// and its SetQueueAttributes resets DelaySeconds, MaximumMessageSize
		// and VisibilityTimeout to 0 when they are left out: always send all.
		if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
			return nil, fmt.Errorf("set attributes of queue %s (%s): %w", id, name, err)
		}
		ga, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
		})
		if err != nil {
			return nil, fmt.Errorf("get ARN of queue %s (%s): %w", id, name, err)
		}
		arn := ga.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		if arn == "" {
			return nil, fmt.Errorf("queue %s (%s): no QueueArn attribute", id, name)
		}
		infos[id] = QueueInfo{URL: url, ARN: arn, Name: name}
		slog.DebugContext(ctx, "queue ready", "queue", id, "name", name, "redrive", q.RedrivePolicy != nil)
	}
	return infos, nil
}

func queueName(q sam.Queue, nameFor func(string) string) string {
	var name string
	if nameFor != nil {
		name = nameFor(q.LogicalID)
	}
	if name == "" {
		name = q.QueueName
	}
	if name == "" {
		name = q.LogicalID
	}
	if q.FIFO && !strings.HasSuffix(name, ".fifo") {
		name += ".fifo"
	}
	return name
}

func queueAttributes(q sam.Queue) map[string]string {
	return map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout):             strconv.Itoa(q.VisibilityTimeout),
		string(sqstypes.QueueAttributeNameMessageRetentionPeriod):        strconv.Itoa(q.MessageRetentionPeriod),
		string(sqstypes.QueueAttributeNameReceiveMessageWaitTimeSeconds): strconv.Itoa(q.ReceiveMessageWaitTimeSeconds),
		string(sqstypes.QueueAttributeNameDelaySeconds):                  strconv.Itoa(q.DelaySeconds),
		string(sqstypes.QueueAttributeNameMaximumMessageSize):            strconv.Itoa(q.MaximumMessageSize),
	}
}

// dlqFirst orders logical ids so that every dead-letter queue comes before
// the queues redriving to it; ties are broken by name for stable output.
func dlqFirst(qs map[string]sam.Queue) ([]string, error) {
	ids := make([]string, 0, len(qs))
	for id := range qs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var order []string
	var visit func(id string, path []string) error
	visit = func(id string, path []string) error {
		switch state[id] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("queues: redrive cycle %s", strings.Join(append(path, id), " -> "))
		}
		state[id] = visiting
		if rp := qs[id].RedrivePolicy; rp != nil {
			if _, ok := qs[rp.DeadLetterQueue]; !ok {
				return fmt.Errorf("queue %s: dead-letter queue %q is not among the queues", id, rp.DeadLetterQueue)
			}
			if err := visit(rp.DeadLetterQueue, append(path, id)); err != nil {
				return err
			}
		}
		state[id] = done
		order = append(order, id)
		return nil
	}
	for _, id := range ids {
		if err := visit(id, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

func isQueueExists(err error) bool {
	var exists *sqstypes.QueueNameExists
	if errors.As(err, &exists) {
		return true
	}
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && strings.Contains(apiErr.ErrorCode(), "QueueAlreadyExists")
}
