package ddb

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// DynamoDB's own bodies, as it sends them with HTTP 400.
const (
	txConflictBody             = `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]","CancellationReasons":[{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}]}`
	txConditionAndConflictBody = `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, TransactionConflict]","CancellationReasons":[{"Code":"ConditionalCheckFailed","Message":"The conditional request failed"},{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}]}`
	throughputBody             = `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`
	conflictExceptionBody      = `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionConflictException","message":"Transaction is ongoing for the item"}`
	itemSizeBody               = `{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"Item size has exceeded the maximum allowed size"}`
)

// refuser answers the first n calls of one operation with body, and
// passes everything else to minidyn.
type refuser struct {
	next http.Handler
	mu   sync.Mutex
	op   string
	n    int // calls left to refuse; negative: every call
	body string
	seen int // calls of op refused
}

func (f *refuser) set(op string, n int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.op, f.n, f.body, f.seen = op, n, body, 0
}

func (f *refuser) refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

func (f *refuser) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	refuse := f.op != "" && strings.HasSuffix(r.Header.Get("X-Amz-Target"), "."+f.op) && f.n != 0
	if refuse {
		f.n--
		f.seen++
	}
	body := f.body
	f.mu.Unlock()
	if !refuse {
		f.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(body))
}

// newRetryEnv is newEnv behind a refuser, with the clients' own retryer
// (policy p) rather than the tests' fast one.
func newRetryEnv(t *testing.T, p RetryPolicy) (*env, *refuser) {
	t.Helper()
	f := &refuser{next: server.NewServer()}
	hs := httptest.NewServer(f)
	t.Cleanup(hs.Close)
	c := NewCounter()
	client, err := NewClient(context.Background(),
		func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(hs.URL) },
		WithRetries(p), c.Option())
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:   aws.String(testTable),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	return &env{url: hs.URL, client: client, count: c}, f
}

var quick = RetryPolicy{MaxAttempts: 10, Base: time.Millisecond, Max: 4 * time.Millisecond}

func (e *env) tx(ctx context.Context, pk string) error {
	return TransactWrite(ctx, e.client, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(testTable), Item: item(pk, "a"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Put: &types.Put{TableName: aws.String(testTable), Item: item(pk, "b")}},
	}})
}

// Contention is retried inside the one call: the caller sees success, the
// Counter one call of several attempts, and the write happened once.
func TestRetriesContention(t *testing.T) {
	cases := []struct {
		name, op, body string
		do             func(e *env) error
	}{
		{"transaction conflict", "TransactWriteItems", txConflictBody, func(e *env) error { return e.tx(context.Background(), "p1") }},
		{"throughput on an update", "UpdateItem", throughputBody, func(e *env) error {
			_, err := e.client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(testTable), Key: key("p1", "a"),
				UpdateExpression: aws.String("ADD v :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}})
			return err
		}},
		{"conflict on a single-item put", "PutItem", conflictExceptionBody, func(e *env) error {
			_, err := e.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(testTable), Item: item("p1", "a"),
				ConditionExpression: aws.String("attribute_not_exists(pk)")})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, f := newRetryEnv(t, quick)
			f.set(c.op, 4, c.body)
			if err := c.do(e); err != nil {
				t.Fatalf("after 4 refusals: %v", err)
			}
			if f.refused() != 4 {
				t.Fatalf("refused %d calls, want 4", f.refused())
			}
			calls := e.count.Calls()
			if len(calls) != 1 || calls[0].Attempts != 5 {
				t.Fatalf("counted %+v, want one call of 5 attempts", calls)
			}
			out, err := e.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(testTable), Key: key("p1", "a"), ConsistentRead: aws.Bool(true)})
			if err != nil || out.Item == nil {
				t.Fatalf("the write is not there: %v", err)
			}
			if v, ok := out.Item["v"].(*types.AttributeValueMemberN); ok && v.Value != "1" {
				t.Errorf("v = %s: the update was applied more than once", v.Value)
			}
		})
	}
}

// A transaction that also failed a condition is the caller's answer, not
// contention: one attempt.
func TestDoesNotRetryAFailedCondition(t *testing.T) {
	e, f := newRetryEnv(t, quick)
	f.set("TransactWriteItems", -1, txConditionAndConflictBody)
	err := e.tx(context.Background(), "p1")
	if !IsConditionFailed(err) || IsContention(err) {
		t.Fatalf("err = %v, want a failed condition that is not contention", err)
	}
	if f.refused() != 1 {
		t.Fatalf("sent %d times, want 1", f.refused())
	}
}

// Endless contention ends after MaxAttempts with an error IsContention
// recognises.
func TestContentionBudget(t *testing.T) {
	e, f := newRetryEnv(t, quick)
	f.set("TransactWriteItems", -1, txConflictBody)
	err := e.tx(context.Background(), "p1")
	if !IsContention(err) {
		t.Fatalf("err = %v, want contention", err)
	}
	if f.refused() != quick.MaxAttempts {
		t.Fatalf("sent %d times, want %d", f.refused(), quick.MaxAttempts)
	}
}

// Near the deadline the retryer stops before a wait could outlast it: the
// caller gets the contention, in time, never a context error.
func TestContentionStopsBeforeTheDeadline(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 1000, Base: 10 * time.Millisecond, Max: 40 * time.Millisecond}
	e, f := newRetryEnv(t, p)
	f.set("TransactWriteItems", -1, txConflictBody)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := e.tx(ctx, "p1")
	took := time.Since(start)
	if !IsContention(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want contention without a context error", err)
	}
	if took > 400*time.Millisecond {
		t.Errorf("took %v, past the 400ms deadline", took)
	}
	if f.refused() < 3 {
		t.Errorf("only %d attempts before giving up", f.refused())
	}
}

func TestIsItemTooLarge(t *testing.T) {
	e, f := newRetryEnv(t, quick)
	f.set("UpdateItem", -1, itemSizeBody)
	_, err := e.client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(testTable), Key: key("p1", "a"),
		UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("x")}})
	if !IsItemTooLarge(err) || IsContention(err) {
		t.Fatalf("err = %v, want item too large", err)
	}
	if f.refused() != 1 {
		t.Errorf("sent %d times, want 1", f.refused())
	}
	if !IsItemTooLarge(CheckItem(item("p", "s", "big", s(strings.Repeat("x", MaxItemBytes))))) {
		t.Error("the client-side check is not recognised")
	}
	if IsItemTooLarge(errors.New("Item size has exceeded the maximum allowed size")) {
		t.Error("a message alone is recognised")
	}
}
