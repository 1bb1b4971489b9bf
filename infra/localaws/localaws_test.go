package localaws

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"cads/infra/sam"
)

func fixture(t *testing.T) *sam.Template {
	t.Helper()
	tp, err := sam.Load("testdata/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func startDynamo(t *testing.T) *dynamodb.Client {
	t.Helper()
	endpoint, stop, err := StartDynamo(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	c, err := DynamoClient(t.Context(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startSQS(t *testing.T) (*sqs.Client, string) {
	t.Helper()
	endpoint, stop, err := StartSQS(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	c, err := SQSClient(t.Context(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return c, endpoint
}

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }

func TestDynamoTableFromTemplate(t *testing.T) {
	ctx := t.Context()
	c := startDynamo(t)
	tb := fixture(t).Tables["Table"]

	for range 2 { // the second call finds the table and succeeds
		if err := EnsureTable(ctx, c, "things", tb); err != nil {
			t.Fatal(err)
		}
	}

	item := map[string]ddbtypes.AttributeValue{
		"PK": s("USER#1"), "SK": s("PROFILE"), "GSI1PK": s("EMAIL#a@example.com"), "GSI1SK": s("USER#1"), "name": s("Ada"),
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("things"), Item: item}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("things"),
		Key:       map[string]ddbtypes.AttributeValue{"PK": s("USER#1"), "SK": s("PROFILE")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := got.Item["name"].(*ddbtypes.AttributeValueMemberS); !ok || n.Value != "Ada" {
		t.Fatalf("GetItem: %#v", got.Item)
	}
	q, err := c.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String("things"),
		IndexName:                 aws.String("GSI1"),
		KeyConditionExpression:    aws.String("GSI1PK = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": s("EMAIL#a@example.com")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Items) != 1 {
		t.Fatalf("Query on GSI1: %d items", len(q.Items))
	}

	// A leftover table with other keys is refused rather than reused.
	other := tb
	other.KeySchema = []sam.KeyElement{{AttributeName: "GSI1PK", KeyType: "HASH"}}
	if err := EnsureTable(ctx, c, "things", other); err == nil || !strings.Contains(err.Error(), "exists with key schema") {
		t.Fatalf("EnsureTable with other keys: %v", err)
	}
}

func TestRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:0"} {
		if _, _, err := StartSQS(t.Context(), addr); err == nil {
			t.Errorf("StartSQS(%s) succeeded", addr)
		}
		if _, _, err := StartDynamo(t.Context(), addr); err == nil {
			t.Errorf("StartDynamo(%s) succeeded", addr)
		}
	}
}

func TestQueuesRedriveToDLQ(t *testing.T) {
	ctx := t.Context()
	c, _ := startSQS(t)
	qs := fixture(t).Queues
	nameFor := func(id string) string { return "redrive-" + strings.ToLower(id) }

	infos, err := EnsureQueues(ctx, c, qs, nameFor)
	if err != nil {
		t.Fatal(err)
	}
	again, err := EnsureQueues(ctx, c, qs, nameFor) // idempotent
	if err != nil {
		t.Fatal(err)
	}
	if infos["Work"] != again["Work"] || infos["WorkDLQ"] != again["WorkDLQ"] {
		t.Errorf("second EnsureQueues: %v, first: %v", again, infos)
	}
	work, dlq := infos["Work"], infos["WorkDLQ"]
	if work.Name != "redrive-work" || work.ARN != "arn:aws:sqs:"+Region+":"+AccountID+":redrive-work" {
		t.Errorf("Work: %+v", work)
	}
	// goaws' URL host does not resolve; everything below works only because
	// the SDK sends to its endpoint, not to the QueueUrl's host.
	if !strings.HasPrefix(work.URL, "http://"+Region+".127.0.0.1:") {
		t.Errorf("goaws queue URL %q: the quirk this package documents changed", work.URL)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(work.URL), AttributeNames: []sqstypes.QueueAttributeName{"All"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["VisibilityTimeout"] != "1" || !strings.Contains(attrs.Attributes["RedrivePolicy"], dlq.ARN) {
		t.Errorf("Work attributes: %v", attrs.Attributes)
	}

	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(work.URL), MessageBody: aws.String("poison"),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"kind": {DataType: aws.String("String"), StringValue: aws.String("test")},
		},
	}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	receives := 0
	var receiveCounts []string
	for time.Since(start) < 6*time.Second {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(work.URL), WaitTimeSeconds: 1, MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			receives++
			receiveCounts = append(receiveCounts, m.Attributes["ApproximateReceiveCount"])
			if v := m.MessageAttributes["kind"]; aws.ToString(v.StringValue) != "test" {
				t.Errorf("message attributes: %v", m.MessageAttributes)
			}
		}
		d, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Messages) == 1 && aws.ToString(d.Messages[0].Body) == "poison" {
			t.Logf("in the DLQ after %d receives and %v (VisibilityTimeout 1 s, maxReceiveCount 2); ApproximateReceiveCount seen: %v",
				receives, time.Since(start).Round(10*time.Millisecond), receiveCounts)
			if receives != 2 {
				t.Errorf("received %d times before redrive, want maxReceiveCount = 2", receives)
			}
			return
		}
	}
	t.Fatalf("not in the DLQ after %v and %d receives", time.Since(start), receives)
}

func TestStopEndsLongPolls(t *testing.T) {
	endpoint, stop, err := StartSQS(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := SQSClient(t.Context(), endpoint, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		t.Fatal(err)
	}
	infos, err := EnsureQueues(t.Context(), c, map[string]sam.Queue{"Idle": {LogicalID: "Idle", VisibilityTimeout: 30,
		MessageRetentionPeriod: 60, MaximumMessageSize: 1024}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan error, 1)
	go func() {
		_, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(infos["Idle"].URL), WaitTimeSeconds: 20,
		})
		polled <- err
	}()
	time.Sleep(200 * time.Millisecond)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("stop took %v with a 20 s long poll open", took)
	}
	select {
	case <-polled:
	case <-time.After(2 * time.Second):
		t.Error("long poll still open after stop")
	}
	if err := stop(ctx); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

func TestEnsureQueuesRefusesCycle(t *testing.T) {
	qs := map[string]sam.Queue{
		"A": {LogicalID: "A", RedrivePolicy: &sam.RedrivePolicy{DeadLetterQueue: "B", MaxReceiveCount: 1}},
		"B": {LogicalID: "B", RedrivePolicy: &sam.RedrivePolicy{DeadLetterQueue: "A", MaxReceiveCount: 1}},
	}
	_, err := EnsureQueues(t.Context(), nil, qs, nil)
	if err == nil || !strings.Contains(err.Error(), "redrive cycle A -> B -> A") {
		t.Fatalf("got %v", err)
	}
}

func TestQueueNames(t *testing.T) {
	cases := []struct {
		q       sam.Queue
		nameFor func(string) string
		want    string
	}{
		{sam.Queue{LogicalID: "Jobs"}, nil, "Jobs"},
		{sam.Queue{LogicalID: "Jobs", QueueName: "jobs"}, nil, "jobs"},
		{sam.Queue{LogicalID: "Jobs", QueueName: "jobs"}, func(id string) string { return "dev-" + id }, "dev-Jobs"},
		{sam.Queue{LogicalID: "Jobs", FIFO: true}, func(string) string { return "" }, "Jobs.fifo"},
	}
	for i, c := range cases {
		if got := queueName(c.q, c.nameFor); got != c.want {
			t.Errorf("%d: got %q, want %q", i, got, c.want)
		}
	}
}

func TestClientRejectsBadEndpoint(t *testing.T) {
	for _, e := range []string{"", "127.0.0.1:4566", "ftp://x"} {
		if _, err := SQSClient(t.Context(), e); err == nil {
			t.Errorf("SQSClient(%q) succeeded", e)
		}
		if _, err := DynamoClient(t.Context(), e); err == nil {
			t.Errorf("DynamoClient(%q) succeeded", e)
		}
	}
}

// Items loaded in-process are what requests over the wire read, through
// the table and its indexes, and a load into a missing table fails.
func TestDynamoLoad(t *testing.T) {
	ctx := t.Context()
	d, err := StartDynamoServer(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	c, err := DynamoClient(ctx, d.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := EnsureTable(ctx, c, "things", fixture(t).Tables["Table"]); err != nil {
		t.Fatal(err)
	}
	var items []map[string]ddbtypes.AttributeValue
	for i := range 30 {
		items = append(items, map[string]ddbtypes.AttributeValue{
			"PK": s("GROUP#1"), "SK": s(fmt.Sprintf("MEMBER#%02d", i)), "GSI1PK": s("ALL"), "GSI1SK": s(fmt.Sprintf("%02d", 29-i)),
			"n": &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(i)}, "tags": &ddbtypes.AttributeValueMemberSS{Value: []string{"a", "b"}},
		})
	}
	if err := d.Load(ctx, "things", items); err != nil {
		t.Fatal(err)
	}
	q, err := c.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String("things"),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": s("GROUP#1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Items) != 30 {
		t.Fatalf("Query: %d items, want 30", len(q.Items))
	}
	if n, ok := q.Items[7]["n"].(*ddbtypes.AttributeValueMemberN); !ok || n.Value != "7" {
		t.Errorf("item 7: %#v", q.Items[7])
	}
	if ss, ok := q.Items[7]["tags"].(*ddbtypes.AttributeValueMemberSS); !ok || len(ss.Value) != 2 {
		t.Errorf("item 7's tags: %#v", q.Items[7]["tags"])
	}
	q, err = c.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String("things"),
		IndexName:                 aws.String("GSI1"),
		KeyConditionExpression:    aws.String("GSI1PK = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": s("ALL")},
		Limit:                     aws.Int32(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Items) != 1 || q.Items[0]["SK"].(*ddbtypes.AttributeValueMemberS).Value != "MEMBER#29" {
		t.Errorf("first of GSI1: %#v", q.Items)
	}
	if err := d.Load(ctx, "nothing", items[:1]); err == nil {
		t.Error("a load into a missing table succeeded")
	}

	// The same items put one request at a time read back the same, from
	// the table and from the index, in the same order; so does an item
	// of every type written twice (its index entry moves out).
	every := map[string]ddbtypes.AttributeValue{"PK": s("GROUP#1"), "SK": s("MEMBER#07"), "GSI1PK": s("ALL"), "GSI1SK": s("99"),
		"b": &ddbtypes.AttributeValueMemberB{Value: []byte{0, 1}}, "ok": &ddbtypes.AttributeValueMemberBOOL{Value: true},
		"null": &ddbtypes.AttributeValueMemberNULL{Value: true}, "ns": &ddbtypes.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs": &ddbtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}}, "empty": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}},
		"m": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{s("x"),
			&ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}}}}}}}
	moved := map[string]ddbtypes.AttributeValue{"PK": s("GROUP#1"), "SK": s("MEMBER#08")}
	more := []map[string]ddbtypes.AttributeValue{every, moved}
	if err := d.Load(ctx, "things", more); err != nil {
		t.Fatal(err)
	}
	if err := EnsureTable(ctx, c, "byrequest", fixture(t).Tables["Table"]); err != nil {
		t.Fatal(err)
	}
	for _, it := range append(items, more...) {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("byrequest"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	for _, index := range []*string{nil, aws.String("GSI1")} {
		scan := func(table string) []map[string]ddbtypes.AttributeValue {
			out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), IndexName: index})
			if err != nil {
				t.Fatal(err)
			}
			return out.Items
		}
		loaded, put := scan("things"), scan("byrequest")
		if want := map[bool]int{true: 30, false: 29}[index == nil]; len(loaded) != want || !reflect.DeepEqual(loaded, put) {
			t.Errorf("index %v: %d items loaded, %d put by request (want %d, the same):\n%v\n%v", aws.ToString(index), len(loaded), len(put), want, loaded, put)
		}
	}
}
