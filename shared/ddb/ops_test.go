package ddb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/truora/minidyn/server"
)

var ctx = context.Background()

func putAction(it map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(testTable), Item: it}}
}

func TestTransactWriteRefusesTooManyBeforeSending(t *testing.T) {
	e := newEnv(t)
	items := make([]types.TransactWriteItem, MaxTransactItems+1)
	for i := range items {
		items[i] = putAction(item("p", fmt.Sprint(i)))
	}
	err := TransactWrite(ctx, e.client, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if !errors.Is(err, ErrTooManyItems) {
		t.Fatalf("err = %v, want ErrTooManyItems", err)
	}
	if got := e.count.Total(); got != 0 {
		t.Errorf("counter saw %d calls, want 0", got)
	}
	// Exactly 100 is accepted and applied.
	if err := TransactWrite(ctx, e.client, &dynamodb.TransactWriteItemsInput{TransactItems: items[:MaxTransactItems]}); err != nil {
		t.Fatal(err)
	}
	if got := e.count.ByOperation()["TransactWriteItems"]; got != 1 {
		t.Errorf("TransactWriteItems calls = %d, want 1", got)
	}
}

func TestTransactWriteValidatesActions(t *testing.T) {
	e := newEnv(t)
	big := item("p", "big", "d", s(strings.Repeat("x", MaxItemBytes)))
	cases := []struct {
		name  string
		items []types.TransactWriteItem
		want  error
	}{
		{"oversized put", []types.TransactWriteItem{putAction(item("p", "1")), putAction(big)}, ErrItemTooLarge},
		{"empty action", []types.TransactWriteItem{{}}, ErrInvalidRequest},
		{"two actions in one", []types.TransactWriteItem{{
			Put:    &types.Put{TableName: aws.String(testTable), Item: item("p", "1")},
			Delete: &types.Delete{TableName: aws.String(testTable), Key: key("p", "1")},
		}}, ErrInvalidRequest},
		{"empty key", []types.TransactWriteItem{{Delete: &types.Delete{TableName: aws.String(testTable), Key: key("p", "")}}}, ErrInvalidKey},
	}
	var aggregate []types.TransactWriteItem
	for i := range 11 { // 11 × ~400 KB > 4 MB
		aggregate = append(aggregate, putAction(item("p", fmt.Sprint(i), "d", s(strings.Repeat("x", 390*1024)))))
	}
	cases = append(cases, struct {
		name  string
		items []types.TransactWriteItem
		want  error
	}{"aggregate over 4 MB", aggregate, ErrTooManyItems})

	for _, tc := range cases {
		err := TransactWrite(ctx, e.client, &dynamodb.TransactWriteItemsInput{TransactItems: tc.items})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if got := e.count.Total(); got != 0 {
		t.Errorf("counter saw %d calls, want 0", got)
	}
	if err := TransactWrite(ctx, e.client, &dynamodb.TransactWriteItemsInput{}); err != nil || e.count.Total() != 0 {
		t.Errorf("empty transaction: err = %v, calls = %d; want a no-op", err, e.count.Total())
	}
}

func TestTransactWriteConditionFailure(t *testing.T) {
	e := newEnv(t)
	e.put(t, item("p", "taken", "v", n("1")))
	err := TransactWrite(ctx, e.client, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		putAction(item("p", "free")),
		{Put: &types.Put{
			TableName:           aws.String(testTable),
			Item:                item("p", "taken", "v", n("2")),
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}},
	}})
	var tx *TxCanceledError
	if !errors.As(err, &tx) {
		t.Fatalf("err = %v (%T), want *TxCanceledError", err, err)
	}
	if !errors.Is(err, ErrConditionFailed) || !IsConditionFailed(err) {
		t.Errorf("errors.Is(err, ErrConditionFailed) = false for %v", err)
	}
	if len(tx.Reasons) != 1 || tx.Reasons[0].Index != 1 || tx.Reasons[0].Code != ReasonConditionalCheckFailed {
		t.Errorf("reasons = %+v, want one ConditionalCheckFailed at index 1", tx.Reasons)
	}
	if tx.Conflict() || IsThrottled(err) {
		t.Error("condition failure reported as conflict/throttling")
	}
	var raw *types.TransactionCanceledException
	if !errors.As(err, &raw) {
		t.Error("errors.As to *types.TransactionCanceledException failed")
	}
	if !strings.Contains(err.Error(), "item 1: ConditionalCheckFailed") {
		t.Errorf("message %q", err)
	}
	// Nothing was written: the first put was rolled back.
	got, err := BatchGet(ctx, e.client, testTable, []map[string]types.AttributeValue{key("p", "free")})
	if err != nil || len(got) != 0 {
		t.Errorf("transaction not atomic: %v, %v", got, err)
	}
}

func TestMapErrorPlainConditionFailure(t *testing.T) {
	e := newEnv(t)
	e.put(t, item("p", "x"))
	_, err := e.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(testTable), Item: item("p", "x"),
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if !IsConditionFailed(err) {
		t.Fatalf("IsConditionFailed(%v) = false", err)
	}
	if errors.Is(err, ErrConditionFailed) {
		t.Fatal("raw SDK error unexpectedly matches ErrConditionFailed")
	}
	mapped := MapError(err)
	var ccf *types.ConditionalCheckFailedException
	if !errors.Is(mapped, ErrConditionFailed) || !errors.As(mapped, &ccf) {
		t.Errorf("MapError(%v) = %v: want Is ErrConditionFailed and As *ConditionalCheckFailedException", err, mapped)
	}
	if MapError(mapped) != mapped || MapError(nil) != nil {
		t.Error("MapError is not idempotent")
	}
	other := errors.New("boom")
	if MapError(other) != other || IsConditionFailed(other) || IsConditionFailed(nil) {
		t.Error("unrelated errors mis-mapped")
	}
}

func TestIsThrottled(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("operation error DynamoDB: x: %w", err) }
	yes := []error{
		wrap(&types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}),
		wrap(&types.RequestLimitExceeded{}),
		wrap(&smithy.GenericAPIError{Code: "ThrottlingException"}),
		wrap(&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			{Code: aws.String("None")}, {Code: aws.String("ThrottlingError")},
		}}),
	}
	for _, err := range yes {
		if !IsThrottled(err) {
			t.Errorf("IsThrottled(%v) = false", err)
		}
	}
	no := []error{nil, errors.New("x"), wrap(&types.ConditionalCheckFailedException{}), wrap(&types.InternalServerError{})}
	for _, err := range no {
		if IsThrottled(err) {
			t.Errorf("IsThrottled(%v) = true", err)
		}
	}
	conflict := MapError(&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{{Code: aws.String("TransactionConflict")}}})
	var tx *TxCanceledError
	if !errors.As(conflict, &tx) || !tx.Conflict() || errors.Is(conflict, ErrConditionFailed) {
		t.Errorf("conflict mapping: %v", conflict)
	}
}

func TestBatchGet250KeysInParallel(t *testing.T) {
	e := newEnv(t)
	e.putMany(t, "p", 250)
	e.count.Reset()
	e.count.SetDelay(30 * time.Millisecond)

	keys := make([]map[string]types.AttributeValue, 0, 260)
	for i := range 250 {
		keys = append(keys, key("p", fmt.Sprintf("%04d", i)))
	}
	got, err := BatchGet(ctx, e.client, testTable, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 250 {
		t.Fatalf("got %d items, want 250", len(got))
	}
	seen := map[string]bool{}
	for _, it := range got {
		seen[it["sk"].(*types.AttributeValueMemberS).Value] = true
		if _, ok := it["v"]; !ok {
			t.Fatalf("item without v: %v", it)
		}
	}
	if len(seen) != 250 {
		t.Errorf("%d distinct items, want 250", len(seen))
	}
	if tot, seq := e.count.Total(), e.count.Sequential(); tot != 3 || seq != 1 {
		t.Errorf("Total = %d, Sequential = %d; want 3 chunks sent in parallel (3, 1)", tot, seq)
	}
	for _, c := range e.count.Calls() {
		if c.Operation != "BatchGetItem" {
			t.Errorf("unexpected call %s", c.Operation)
		}
	}
}

func TestBatchGetDuplicatesMissingAndProjection(t *testing.T) {
	e := newEnv(t)
	e.put(t, item("p", "a", "v", n("1"), "size", s("big"), "other", s("o")))
	e.count.Reset()
	got, err := BatchGet(ctx, e.client, testTable, []map[string]types.AttributeValue{
		key("p", "a"), key("p", "a"), key("p", "missing"),
	}, "pk", "sk", "size") // "size" is a reserved word
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %v, want one item", got)
	}
	if _, ok := got[0]["other"]; ok || got[0]["size"] == nil || got[0]["pk"] == nil {
		t.Errorf("projection not applied: %v", got[0])
	}
	if e.count.Total() != 1 {
		t.Errorf("calls = %d, want 1", e.count.Total())
	}

	if got, err := BatchGetConsistent(ctx, e.client, testTable, []map[string]types.AttributeValue{key("p", "a")}); err != nil || len(got) != 1 {
		t.Errorf("BatchGetConsistent = %v, %v", got, err)
	}
	if got, err := BatchGet(ctx, e.client, testTable, nil); err != nil || got != nil {
		t.Errorf("BatchGet(no keys) = %v, %v", got, err)
	}
	e.count.Reset()
	if _, err := BatchGet(ctx, e.client, testTable, []map[string]types.AttributeValue{key("p", "a"), key("", "x")}); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("empty key: err = %v, want ErrInvalidKey", err)
	}
	if e.count.Total() != 0 {
		t.Error("invalid keys were sent")
	}
}

// firstTimeUnprocessed leaves every sub-request unprocessed the first time it
// is seen and processes it on the retry.
func firstTimeUnprocessed() func(int, map[string]*server.AttributeValue) bool {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(_ int, raw map[string]*server.AttributeValue) bool {
		id := fmt.Sprint(*raw["pk"].S, "/", *raw["sk"].S)
		mu.Lock()
		defer mu.Unlock()
		if seen[id] {
			return false
		}
		seen[id] = true
		return true
	}
}

func TestBatchRetriesUnprocessed(t *testing.T) {
	e := newEnv(t)
	e.srv.EmulateUnprocessedItems(testTable, firstTimeUnprocessed())
	e.putMany(t, "p", 30) // 2 chunks, each fully unprocessed once
	if got := e.count.ByOperation()["BatchWriteItem"]; got != 4 {
		t.Errorf("BatchWriteItem calls = %d, want 4 (2 chunks × 2 rounds)", got)
	}

	e.srv.EmulateUnprocessedItems(testTable, firstTimeUnprocessed())
	e.count.Reset()
	keys := make([]map[string]types.AttributeValue, 30)
	for i := range keys {
		keys[i] = key("p", fmt.Sprintf("%04d", i))
	}
	got, err := BatchGet(ctx, e.client, testTable, keys)
	if err != nil || len(got) != 30 {
		t.Fatalf("BatchGet = %d items, %v", len(got), err)
	}
	if got := e.count.Total(); got != 2 {
		t.Errorf("BatchGetItem calls = %d, want 2", got)
	}

	// Keys that stay unprocessed fail after bounded retries.
	e.srv.EmulateUnprocessedItems(testTable, func(int, map[string]*server.AttributeValue) bool { return true })
	e.count.Reset()
	_, err = BatchGet(ctx, e.client, testTable, keys[:3])
	if !errors.Is(err, ErrUnprocessed) {
		t.Errorf("err = %v, want ErrUnprocessed", err)
	}
	if got := e.count.Total(); got != unprocessedRetries+1 {
		t.Errorf("calls = %d, want %d", got, unprocessedRetries+1)
	}
	err = BatchWrite(ctx, e.client, testTable, []types.WriteRequest{{DeleteRequest: &types.DeleteRequest{Key: keys[0]}}})
	if !errors.Is(err, ErrUnprocessed) {
		t.Errorf("BatchWrite err = %v, want ErrUnprocessed", err)
	}
}

func TestBatchWrite(t *testing.T) {
	e := newEnv(t)
	e.putMany(t, "p", 60)
	if got, seq := e.count.Total(), e.count.Sequential(); got != 3 || seq > 3 {
		t.Errorf("BatchWriteItem calls = %d (sequential %d), want 3", got, seq)
	}
	del := make([]types.WriteRequest, 0, 61)
	for i := range 60 {
		del = append(del, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key("p", fmt.Sprintf("%04d", i))}})
	}
	del = append(del, del[0]) // identical delete sent once
	e.count.Reset()
	if err := BatchWrite(ctx, e.client, testTable, del); err != nil {
		t.Fatal(err)
	}
	if got := e.count.Total(); got != 3 {
		t.Errorf("calls = %d, want 3", got)
	}
	items, err := QueryAll(ctx, e.client, pkQuery("p"), 0)
	if err != nil || len(items) != 0 {
		t.Errorf("after deletes: %d items, %v", len(items), err)
	}

	e.count.Reset()
	bad := [][]types.WriteRequest{
		{{}},
		{{PutRequest: &types.PutRequest{Item: item("p", "1")}, DeleteRequest: &types.DeleteRequest{Key: key("p", "1")}}},
		{{PutRequest: &types.PutRequest{Item: item("p", "1", "d", s(strings.Repeat("x", MaxItemBytes)))}}},
		{{DeleteRequest: &types.DeleteRequest{Key: key("p", "")}}},
	}
	want := []error{ErrInvalidRequest, ErrInvalidRequest, ErrItemTooLarge, ErrInvalidKey}
	for i, reqs := range bad {
		reqs = append([]types.WriteRequest{{PutRequest: &types.PutRequest{Item: item("p", "ok")}}}, reqs...)
		if err := BatchWrite(ctx, e.client, testTable, reqs); !errors.Is(err, want[i]) {
			t.Errorf("case %d: err = %v, want %v", i, err, want[i])
		}
	}
	if e.count.Total() != 0 {
		t.Error("invalid batches were (partly) sent")
	}
}

func pkQuery(pk string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 aws.String(testTable),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(pk)},
	}
}

func TestQueryAllPaging(t *testing.T) {
	e := newEnv(t)
	e.putMany(t, "p", 30)
	e.putMany(t, "other", 5)
	e.count.Reset()

	in := pkQuery("p")
	in.Limit = aws.Int32(7)
	items, err := QueryAll(ctx, e.client, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 30 {
		t.Fatalf("got %d items, want 30", len(items))
	}
	for i, it := range items {
		if want := fmt.Sprintf("%04d", i); it["sk"].(*types.AttributeValueMemberS).Value != want || it["pk"].(*types.AttributeValueMemberS).Value != "p" {
			t.Fatalf("item %d = %v", i, it)
		}
	}
	if got := e.count.Total(); got < 5 || got > 6 {
		t.Errorf("Query calls = %d, want 5 pages of ≤7 (6 if the server returns a final empty page)", got)
	}
	if got := e.count.Sequential(); got != e.count.Total() {
		t.Errorf("pages not sequential: %d of %d", got, e.count.Total())
	}
	if in.ExclusiveStartKey != nil || *in.Limit != 7 {
		t.Error("caller's input was modified")
	}

	// max with a caller page size: stops after enough pages, truncates.
	e.count.Reset()
	items, err = QueryAll(ctx, e.client, in, 10)
	if err != nil || len(items) != 10 {
		t.Fatalf("max 10 with Limit 7: %d items, %v", len(items), err)
	}
	if got := e.count.Total(); got != 2 {
		t.Errorf("calls = %d, want 2", got)
	}

	// max without a page size: the Limit is set to max, one round trip.
	e.count.Reset()
	in = pkQuery("p")
	items, err = QueryAll(ctx, e.client, in, 10)
	if err != nil || len(items) != 10 {
		t.Fatalf("max 10: %d items, %v", len(items), err)
	}
	if got := e.count.Total(); got != 1 {
		t.Errorf("calls = %d, want 1", got)
	}
	if in.Limit != nil {
		t.Error("caller's input was modified")
	}

	// No max and no page size: everything.
	items, err = QueryAll(ctx, e.client, pkQuery("other"), 0)
	if err != nil || len(items) != 5 {
		t.Errorf("other: %d items, %v", len(items), err)
	}
}
