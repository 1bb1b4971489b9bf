package localaws

// The realistic mode (realism.go) through the real SDK over the wire. The
// clients retry nothing, so that each refusal is seen as DynamoDB sends it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

const realTable = "real"

func startRealistic(t *testing.T, cfg Realism) (*Dynamo, *dynamodb.Client) {
	t.Helper()
	ctx := t.Context()
	d, err := StartRealisticDynamo(ctx, "", nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	c, err := DynamoClient(ctx, d.Endpoint, func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	if err != nil {
		t.Fatal(err)
	}
	if err := EnsureTable(ctx, c, realTable, fixture(t).Tables["Table"]); err != nil {
		t.Fatal(err)
	}
	return d, c
}

// retrying is a client to the same server with the SDK's standard retries
// (throttles retried), for reads a test makes to check state.
func retrying(t *testing.T, d *Dynamo) *dynamodb.Client {
	t.Helper()
	c, err := DynamoClient(t.Context(), d.Endpoint, func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts, so.MaxBackoff, so.RateLimiter = 20, 5*time.Millisecond, ratelimit.None
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// firstDraw is the first duration a server seeded with seed draws in
// [0, max): the lag of its first write, or the hold of its first
// transaction, when no rate is set.
func firstDraw(seed int64, max time.Duration) time.Duration {
	return time.Duration(rand.New(rand.NewPCG(uint64(seed), 0x5eed)).Int64N(int64(max)))
}

func key(pk, sk string) attrs { return attrs{"PK": s(pk), "SK": s(sk)} }

func getItem(t *testing.T, c *dynamodb.Client, pk, sk string, consistent bool) attrs {
	t.Helper()
	out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(realTable), Key: key(pk, sk), ConsistentRead: aws.Bool(consistent)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func gsiCount(t *testing.T, c *dynamodb.Client, partition string) int {
	t.Helper()
	out, err := c.Query(t.Context(), &dynamodb.QueryInput{
		TableName: aws.String(realTable), IndexName: aws.String("GSI1"),
		KeyConditionExpression: aws.String("GSI1PK = :p"), ExpressionAttributeValues: attrs{":p": s(partition)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}

// A write is seen at once by consistent reads, and by eventual reads and
// the index only once its random lag has passed; a consistent read of the
// index is refused as DynamoDB refuses it.
func TestRealisticReadLag(t *testing.T) {
	const seed, lag = 7, 600 * time.Millisecond
	drawn := firstDraw(seed, lag)
	if drawn < 150*time.Millisecond {
		t.Fatalf("seed %d draws a lag of %s: pick a seed whose first lag leaves time to look", seed, drawn)
	}
	_, c := startRealistic(t, Realism{Seed: seed, ReadLag: lag, IndexLag: lag})
	ctx := t.Context()

	put := time.Now()
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(realTable), Item: attrs{
		"PK": s("A#1"), "SK": s("META"), "GSI1PK": s("ALL"), "GSI1SK": s("1"),
	}}); err != nil {
		t.Fatal(err)
	}
	if it := getItem(t, c, "A#1", "META", true); it == nil {
		t.Fatal("a consistent GetItem right after the PutItem missed it")
	}
	if it := getItem(t, c, "A#1", "META", false); it != nil {
		t.Fatal("an eventual GetItem right after the PutItem saw it")
	}
	if n := gsiCount(t, c, "ALL"); n != 0 {
		t.Fatalf("GSI1 right after the PutItem: %d items, want 0", n)
	}
	bg, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
		realTable: {Keys: []attrs{key("A#1", "META")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(bg.Responses[realTable]); n != 0 {
		t.Fatalf("an eventual BatchGetItem right after the PutItem: %d items, want 0", n)
	}
	bg, err = c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
		realTable: {Keys: []attrs{key("A#1", "META")}, ConsistentRead: aws.Bool(true)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(bg.Responses[realTable]); n != 1 {
		t.Fatalf("a consistent BatchGetItem right after the PutItem: %d items, want 1", n)
	}

	_, err = c.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(realTable), IndexName: aws.String("GSI1"), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("GSI1PK = :p"), ExpressionAttributeValues: attrs{":p": s("ALL")},
	})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" || apiErr.ErrorMessage() != "Consistent reads are not supported on global secondary indexes" {
		t.Fatalf("a consistent Query of GSI1: %v, want the ValidationException", err)
	}

	// The eventual reads see it once the drawn lag has passed, not before.
	var seen time.Duration
	for seen == 0 {
		if time.Since(put) > lag+time.Second {
			t.Fatalf("an eventual GetItem still misses the item %s after the PutItem", time.Since(put))
		}
		if it := getItem(t, c, "A#1", "META", false); it != nil {
			seen = time.Since(put)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if seen < drawn {
		t.Errorf("seen after %s, before the drawn lag %s", seen, drawn)
	}
	if n := gsiCount(t, c, "ALL"); n != 1 {
		t.Errorf("GSI1 once the lag has passed: %d items, want 1", n)
	}
	t.Logf("lag drawn %s, first seen after %s", drawn, seen)
}

// Of two transactions on one item at once, the second is cancelled with
// TransactionConflict at that item's index, and a single write of the item
// is refused meanwhile; the SDK decodes both into its types.
func TestRealisticTransactionConflict(t *testing.T) {
	const seed, hold = 3, 800 * time.Millisecond
	if d := firstDraw(seed, hold); d < 300*time.Millisecond {
		t.Fatalf("seed %d holds the first transaction %s: pick another", seed, d)
	}
	d, c := startRealistic(t, Realism{Seed: seed, TxHold: hold})
	ctx := t.Context()
	update := func(pk string) ddbtypes.TransactWriteItem {
		return ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
			TableName: aws.String(realTable), Key: key(pk, "META"),
			UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: attrs{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}},
		}}
	}
	first := make(chan error, 1)
	go func() {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{update("X")}})
		first <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); ; {
		d.realism.hmu.Lock()
		n := len(d.realism.held)
		d.realism.hmu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first transaction never held its item")
		}
		time.Sleep(time.Millisecond)
	}

	_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{update("Y"), update("X")}})
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("the overlapping transaction: %v, want TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	if !slices.Equal(codes, []string{"None", "TransactionConflict"}) {
		t.Errorf("cancellation reasons %v, want [None TransactionConflict]", codes)
	}
	if want := "Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]"; tce.ErrorMessage() != want {
		t.Errorf("message %q, want %q", tce.ErrorMessage(), want)
	}

	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(realTable), Item: key("X", "META")})
	var conflict *ddbtypes.TransactionConflictException
	if !errors.As(err, &conflict) {
		t.Fatalf("a PutItem of the held item: %v, want TransactionConflictException", err)
	}
	_, err = c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []ddbtypes.TransactGetItem{
		{Get: &ddbtypes.Get{TableName: aws.String(realTable), Key: key("X", "META")}},
	}})
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 1 || aws.ToString(tce.CancellationReasons[0].Code) != "TransactionConflict" {
		t.Fatalf("a TransactGetItems of the held item: %v, want a TransactionConflict cancellation", err)
	}
	// Another item is not held.
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(realTable), Item: key("Z", "META")}); err != nil {
		t.Fatalf("a PutItem of an item no transaction holds: %v", err)
	}

	if err := <-first; err != nil {
		t.Fatalf("the first transaction: %v", err)
	}
	if got := getItem(t, c, "X", "META", true)["n"]; !attrEqual(got, &ddbtypes.AttributeValueMemberN{Value: "1"}) {
		t.Errorf("n = %#v after one applied transaction, want 1", got)
	}
	if it := getItem(t, c, "Y", "META", true); it != nil {
		t.Errorf("the cancelled transaction wrote Y: %v", it)
	}
	// Once applied, the item is free again.
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(realTable), Item: key("X", "META")}); err != nil {
		t.Fatalf("a PutItem after the transaction: %v", err)
	}
}

func attrEqual(a, b ddbtypes.AttributeValue) bool {
	return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}

// Injected conflicts cancel transactions at the rate asked, each on one
// item, and the same seed cancels the same ones.
func TestRealisticInjectedConflicts(t *testing.T) {
	run := func() []int {
		_, c := startRealistic(t, Realism{Seed: 11, ConflictRate: 0.3})
		var at []int
		for i := range 40 {
			_, err := c.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Put: &ddbtypes.Put{TableName: aws.String(realTable), Item: key(fmt.Sprint("P", i), "1")}},
				{Put: &ddbtypes.Put{TableName: aws.String(realTable), Item: key(fmt.Sprint("P", i), "2")}},
				{Put: &ddbtypes.Put{TableName: aws.String(realTable), Item: key(fmt.Sprint("P", i), "3")}},
			}})
			if err == nil {
				continue
			}
			var tce *ddbtypes.TransactionCanceledException
			if !errors.As(err, &tce) {
				t.Fatalf("transaction %d: %v", i, err)
			}
			n := 0
			for _, r := range tce.CancellationReasons {
				if aws.ToString(r.Code) == "TransactionConflict" {
					n++
				} else if aws.ToString(r.Code) != "None" {
					t.Errorf("transaction %d: reason %q", i, aws.ToString(r.Code))
				}
			}
			if n != 1 {
				t.Errorf("transaction %d: %d conflicts, want 1", i, n)
			}
			if it := getItem(t, c, fmt.Sprint("P", i), "1", true); it != nil {
				t.Errorf("cancelled transaction %d wrote its first item", i)
			}
			at = append(at, i)
		}
		return at
	}
	a, b := run(), run()
	if len(a) < 4 || len(a) > 24 {
		t.Errorf("%d of 40 transactions cancelled at a rate of 0.3", len(a))
	}
	if !slices.Equal(a, b) {
		t.Errorf("seed 11 cancelled %v, then %v", a, b)
	}
}

// Throttles come as DynamoDB sends them, decoded into the SDK's type, at
// the rate asked; the SDK's standard retryer retries them.
func TestRealisticThrottle(t *testing.T) {
	d, c := startRealistic(t, Realism{Seed: 5, ThrottleRate: 0.25})
	throttled := 0
	for range 80 {
		_, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(realTable), Key: key("T", "1")})
		var pte *ddbtypes.ProvisionedThroughputExceededException
		switch {
		case err == nil:
		case errors.As(err, &pte):
			throttled++
			if !strings.Contains(pte.ErrorMessage(), "provisioned throughput") {
				t.Errorf("message %q", pte.ErrorMessage())
			}
		default:
			t.Fatalf("GetItem: %v", err)
		}
	}
	if throttled < 8 || throttled > 35 {
		t.Errorf("%d of 80 requests throttled at a rate of 0.25", throttled)
	}
	// With its retries, the SDK gets through.
	rc := retrying(t, d)
	for range 20 {
		if _, err := rc.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(realTable), Key: key("T", "1")}); err != nil {
			t.Fatalf("GetItem with retries: %v", err)
		}
	}
}

// Batches come back partly unprocessed (never wholly), and retrying what
// is left completes them.
func TestRealisticUnprocessedBatches(t *testing.T) {
	_, c := startRealistic(t, Realism{Seed: 9, UnprocessedRate: 1})
	ctx := t.Context()
	var writes []ddbtypes.WriteRequest
	var keys []attrs
	for i := range 10 {
		writes = append(writes, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: attrs{"PK": s("B"), "SK": s(fmt.Sprint(i)), "v": s("x")}}})
		keys = append(keys, key("B", fmt.Sprint(i)))
	}
	pending := map[string][]ddbtypes.WriteRequest{realTable: writes}
	rounds := 0
	for len(pending) > 0 {
		rounds++
		if rounds > 20 {
			t.Fatal("BatchWriteItem never completed")
		}
		n := len(pending[realTable])
		out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
		if err != nil {
			t.Fatal(err)
		}
		if left := len(out.UnprocessedItems[realTable]); n >= 2 && (left == 0 || left == n) {
			t.Errorf("round %d: %d of %d unprocessed, want some but not all", rounds, left, n)
		}
		pending = out.UnprocessedItems
	}
	if rounds < 2 {
		t.Errorf("BatchWriteItem completed in %d round", rounds)
	}

	got := map[string]bool{}
	req := map[string]ddbtypes.KeysAndAttributes{realTable: {Keys: keys, ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("SK")}}
	for rounds = 0; len(req) > 0; rounds++ {
		if rounds > 20 {
			t.Fatal("BatchGetItem never completed")
		}
		out, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Responses[realTable] {
			if _, extra := it["v"]; extra {
				t.Errorf("projection lost: %v", it)
			}
			got[str(t, it, "SK")] = true
		}
		if left, ok := out.UnprocessedKeys[realTable]; ok {
			if !aws.ToBool(left.ConsistentRead) || aws.ToString(left.ProjectionExpression) != "SK" {
				t.Errorf("unprocessed keys lost their options: %+v", left)
			}
		}
		req = out.UnprocessedKeys
	}
	if len(got) != 10 || rounds < 2 {
		t.Errorf("BatchGetItem: %d items in %d rounds, want 10 in more than one", len(got), rounds)
	}
}

// After a burst of concurrent mixed writes (conditional ones, updates,
// deletes, transactions, batches, with conflicts, throttles and
// unprocessed items on), the replicas hold exactly the primary's items,
// in the table and in the index.
func TestRealisticReplicaConverges(t *testing.T) {
	d, c := startRealistic(t, Realism{
		Seed: 21, ReadLag: 40 * time.Millisecond, IndexLag: 70 * time.Millisecond, TxHold: 3 * time.Millisecond,
		ConflictRate: 0.1, ThrottleRate: 0.05, UnprocessedRate: 0.3,
	})
	if len(d.realism.replicas) != 2 {
		t.Fatalf("%d replicas for two lags, want 2", len(d.realism.replicas))
	}
	ctx := t.Context()
	one := &ddbtypes.AttributeValueMemberN{Value: "1"}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range 60 {
				pk := fmt.Sprint("K", r.IntN(12))
				item := attrs{"PK": s(pk), "SK": s("S"), "GSI1PK": s("G" + fmt.Sprint(r.IntN(3))), "GSI1SK": s(fmt.Sprint(w, "-", i))}
				var err error
				switch r.IntN(6) {
				case 0:
					_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(realTable), Item: item})
				case 1:
					_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(realTable), Item: item, ConditionExpression: aws.String("attribute_not_exists(PK)")})
				case 2:
					_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
						TableName: aws.String(realTable), Key: key(pk, "S"),
						UpdateExpression:          aws.String("ADD n :one REMOVE GSI1PK"),
						ConditionExpression:       aws.String("attribute_exists(PK)"),
						ExpressionAttributeValues: attrs{":one": one},
					})
				case 3:
					_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(realTable), Key: key(pk, "S")})
				case 4:
					other := fmt.Sprint("K", r.IntN(12))
					_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
						{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String(realTable), Key: key("K-check", "S"), ConditionExpression: aws.String("attribute_not_exists(PK)")}},
						{Put: &ddbtypes.Put{TableName: aws.String(realTable), Item: item}},
						{Update: &ddbtypes.Update{TableName: aws.String(realTable), Key: key(other, "T"), UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: attrs{":one": one}}},
					}})
				case 5:
					_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{realTable: {
						{PutRequest: &ddbtypes.PutRequest{Item: attrs{"PK": s(pk), "SK": s("B"), "GSI1PK": s("G9"), "GSI1SK": s(fmt.Sprint(i))}}},
						{DeleteRequest: &ddbtypes.DeleteRequest{Key: key(fmt.Sprint("K", r.IntN(12)), "B")}},
					}}})
				}
				_ = err // refusals of every kind are part of the burst
			}
		})
	}
	wg.Wait()
	d.Settle()

	rc := retrying(t, d)
	scan := func(consistent bool, index string) []string {
		in := &dynamodb.ScanInput{TableName: aws.String(realTable), ConsistentRead: aws.Bool(consistent)}
		if index != "" {
			in.IndexName = aws.String(index)
		}
		var out []string
		p := dynamodb.NewScanPaginator(rc, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				out = append(out, fmt.Sprintf("%v", render(it)))
			}
		}
		slices.Sort(out)
		return out
	}
	primary := scan(true, "")
	if len(primary) < 5 {
		t.Fatalf("the burst left %d items", len(primary))
	}
	if replica := scan(false, ""); !slices.Equal(primary, replica) {
		t.Errorf("the base replica differs from the primary:\nprimary %v\nreplica %v", primary, replica)
	}
	var indexed []string
	for _, it := range primary {
		if strings.Contains(it, "GSI1PK=") {
			indexed = append(indexed, it)
		}
	}
	if index := scan(false, "GSI1"); !slices.Equal(indexed, index) {
		t.Errorf("GSI1 differs from the primary's indexed items:\nprimary %v\nindex   %v", indexed, index)
	}
}

// render is an item as sorted name=value text.
func render(it attrs) string {
	var parts []string
	for k, v := range it {
		switch v := v.(type) {
		case *ddbtypes.AttributeValueMemberS:
			parts = append(parts, k+"="+v.Value)
		case *ddbtypes.AttributeValueMemberN:
			parts = append(parts, k+"="+v.Value)
		default:
			parts = append(parts, fmt.Sprintf("%s=%#v", k, v))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// A Query or Scan page ends once it has read 1 MB (before the filter),
// with a LastEvaluatedKey; items loaded in-process are visible at once to
// every read.
func TestRealisticOneMegabytePages(t *testing.T) {
	d, c := startRealistic(t, Realism{Seed: 1, ReadLag: time.Second, IndexLag: time.Second})
	ctx := t.Context()
	blob := strings.Repeat("x", 10_000)
	var items []attrs
	for i := range 300 {
		items = append(items, attrs{"PK": s("BIG"), "SK": s(fmt.Sprintf("%03d", i)), "GSI1PK": s("BIG"), "GSI1SK": s(fmt.Sprintf("%03d", i)), "payload": s(blob)})
	}
	if err := d.Load(ctx, realTable, items); err != nil {
		t.Fatal(err)
	}
	size := 0
	for name, v := range items[0] {
		size += len(name) + len(v.(*ddbtypes.AttributeValueMemberS).Value)
	}
	perPage := (1<<20 + size - 1) / size // the page ends with the item that reaches 1 MB

	for _, tc := range []struct {
		name  string
		query bool
		index string
		cons  bool
	}{{"query", true, "", true}, {"eventual query", true, "", false}, {"index query", true, "GSI1", false}, {"scan", false, "", true}, {"index scan", false, "GSI1", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var pages []int
			var start attrs
			for {
				var (
					n    int
					last attrs
				)
				if tc.query {
					in := &dynamodb.QueryInput{TableName: aws.String(realTable), KeyConditionExpression: aws.String("PK = :p"),
						ExpressionAttributeValues: attrs{":p": s("BIG")}, ExclusiveStartKey: start, ConsistentRead: aws.Bool(tc.cons)}
					if tc.index != "" {
						in.IndexName, in.KeyConditionExpression = aws.String(tc.index), aws.String("GSI1PK = :p")
					}
					out, err := c.Query(ctx, in)
					if err != nil {
						t.Fatal(err)
					}
					n, last = len(out.Items), out.LastEvaluatedKey
				} else {
					in := &dynamodb.ScanInput{TableName: aws.String(realTable), ExclusiveStartKey: start, ConsistentRead: aws.Bool(tc.cons)}
					if tc.index != "" {
						in.IndexName = aws.String(tc.index)
					}
					out, err := c.Scan(ctx, in)
					if err != nil {
						t.Fatal(err)
					}
					n, last = len(out.Items), out.LastEvaluatedKey
				}
				pages = append(pages, n)
				if len(last) == 0 {
					break
				}
				start = last
			}
			want := []int{perPage, perPage, 300 - 2*perPage}
			if !slices.Equal(pages, want) {
				t.Errorf("pages of %v items, want %v", pages, want)
			}
		})
	}

	// A filter that matches nothing still ends the page at 1 MB read.
	out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(realTable), KeyConditionExpression: aws.String("PK = :p"),
		FilterExpression: aws.String("payload = :none"), ExpressionAttributeValues: attrs{":p": s("BIG"), ":none": s("none")}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 0 || len(out.LastEvaluatedKey) == 0 {
		t.Errorf("filtered page: %d items, LastEvaluatedKey %v; want none and a key", len(out.Items), out.LastEvaluatedKey)
	}
}

func TestParseRealism(t *testing.T) {
	for _, off := range []string{"", "0", "off"} {
		if r, err := ParseRealism(off); r != nil || err != nil {
			t.Errorf("%q: %v, %v; want off", off, r, err)
		}
	}
	r, err := ParseRealism("42")
	if err != nil || *r != Realistic(42) {
		t.Errorf(`"42": %v, %v; want the preset with seed 42`, r, err)
	}
	r, err = ParseRealism("seed=7,lag=200ms,tx-hold=5ms,conflicts=0,throttles=1%,unprocessed=0.5,page-bytes=4096")
	want := Realism{Seed: 7, ReadLag: 200 * time.Millisecond, IndexLag: 200 * time.Millisecond, TxHold: 5 * time.Millisecond, ThrottleRate: 0.01, UnprocessedRate: 0.5, PageBytes: 4096}
	if err != nil || *r != want {
		t.Errorf("knobs: %+v, %v; want %+v", r, err, want)
	}
	if r, err := ParseRealism("on"); err != nil || r == nil || r.ConflictRate != 0.10 {
		t.Errorf(`"on": %+v, %v; want the preset`, r, err)
	}
	for _, bad := range []string{"seed=x", "conflicts=2", "speed=1"} {
		if _, err := ParseRealism(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Capacity is metered in realistic mode as on the plain server: a
// consistent read on the primary bills a full unit, an eventual one on the
// replica half, and the partition meter counts both.
func TestRealisticMetersCapacity(t *testing.T) {
	ctx := t.Context()
	pm := NewPartitionMeter(nil)
	d, err := StartRealisticDynamo(ctx, "", pm, Realism{Seed: 1, ReadLag: 50 * time.Millisecond, IndexLag: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	c, err := DynamoClient(ctx, d.Endpoint, func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	if err != nil {
		t.Fatal(err)
	}
	if err := EnsureTable(ctx, c, realTable, fixture(t).Tables["Table"]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(realTable), Item: key("M", "1")}); err != nil {
		t.Fatal(err)
	}
	d.Settle()
	pm.Reset()
	for _, tc := range []struct {
		consistent bool
		want       float64
	}{{true, 1}, {false, 0.5}} {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(realTable), Key: key("M", "1"),
			ConsistentRead: aws.Bool(tc.consistent), ReturnConsumedCapacity: ddbtypes.ReturnConsumedCapacityTotal})
		if err != nil {
			t.Fatal(err)
		}
		if out.Item == nil || out.ConsumedCapacity == nil || aws.ToFloat64(out.ConsumedCapacity.CapacityUnits) != tc.want {
			t.Errorf("GetItem (consistent %v): item %v, capacity %+v; want the item and %g", tc.consistent, out.Item, out.ConsumedCapacity, tc.want)
		}
	}
	if got := pm.Totals()[PartitionKey{Table: realTable, Key: "M"}]; pm.Requests() != 2 || got.RCU != 1.5 {
		t.Errorf("meter: %d requests, %+v; want 2 and 1.5 RCU", pm.Requests(), got)
	}
}

// The bodies are byte for byte what DynamoDB sends.
func TestRealisticErrorBodies(t *testing.T) {
	d, _ := startRealistic(t, Realism{Seed: 2, ConflictRate: 1})
	endpoint := d.Endpoint
	post := func(op, body string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"real","Item":{"PK":{"S":"a"},"SK":{"S":"1"}}}},{"Put":{"TableName":"real","Item":{"PK":{"S":"b"},"SK":{"S":"1"}}}}]}`)
	first := `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict, None]","CancellationReasons":[{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"},{"Code":"None"}]}`
	second := `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]","CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}]}`
	if code != http.StatusBadRequest || (body != first && body != second) {
		t.Errorf("cancelled transaction: %d %s", code, body)
	}
	code, body = post("Query", `{"TableName":"real","IndexName":"GSI1","ConsistentRead":true,"KeyConditionExpression":"GSI1PK = :p","ExpressionAttributeValues":{":p":{"S":"x"}}}`)
	if want := `{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"Consistent reads are not supported on global secondary indexes"}`; code != http.StatusBadRequest || body != want {
		t.Errorf("consistent index query: %d %s, want 400 %s", code, body, want)
	}
	throttling, _ := startRealistic(t, Realism{Seed: 2, ThrottleRate: 1})
	endpoint = throttling.Endpoint
	code, body = post("GetItem", `{"TableName":"real","Key":{"PK":{"S":"a"},"SK":{"S":"1"}}}`)
	if want := `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`; code != http.StatusBadRequest || body != want {
		t.Errorf("throttled GetItem: %d %s, want 400 %s", code, body, want)
	}
}
