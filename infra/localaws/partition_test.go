package localaws

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestPartitionMeterCountsPerKey drives the metered server through the SDK
// without asking for ConsumedCapacity and checks what each partition key
// (of the table and of its index) was billed, in total and per second.
func TestPartitionMeterCountsPerKey(t *testing.T) {
	ctx := t.Context()
	clk := &testClock{t: time.Unix(1_700_000_000, 0)}
	pm := NewPartitionMeter(clk.now)
	endpoint, stop, err := StartDynamoMetered(ctx, "", pm)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	c, err := DynamoClient(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := EnsureTable(ctx, c, "things", fixture(t).Tables["Table"]); err != nil {
		t.Fatal(err)
	}
	pm.Reset()
	tbl := aws.String("things")
	// Items of exactly 1,500 bytes: 2 WCU to write, 1 RCU (0.5 eventually
	// consistent) to read.
	itemOf := func(pk, sk string, gsi bool) map[string]ddbtypes.AttributeValue {
		it := map[string]ddbtypes.AttributeValue{"PK": s(pk), "SK": s(sk)}
		n := 1500 - len("PK") - len(pk) - len("SK") - len(sk) - len("d")
		if gsi {
			it["GSI1PK"], it["GSI1SK"] = s("idx"), s(sk)
			n -= len("GSI1PK") + 3 + len("GSI1SK") + len(sk)
		}
		it["d"] = s(strings.Repeat("x", n))
		return it
	}
	for _, sk := range []string{"a", "b"} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: itemOf("hot", sk, true)}); err != nil {
			t.Fatal(err)
		}
	}
	clk.add(time.Second)
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: itemOf("cold", "a", false)}); err != nil {
		t.Fatal(err)
	}
	// A transaction bills twice.
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: tbl, Item: itemOf("cold", "b", false)}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Query(ctx, &dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("#p = :p"),
		ExpressionAttributeNames: map[string]string{"#p": "PK"}, ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s("hot")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Query(ctx, &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("GSI1"), KeyConditionExpression: aws.String(":v = GSI1PK"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": s("idx")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{"things": {Keys: []map[string]ddbtypes.AttributeValue{
		{"PK": s("hot"), "SK": s("a")}, {"PK": s("cold"), "SK": s("a")}, {"PK": s("none"), "SK": s("a")},
	}}}}); err != nil {
		t.Fatal(err)
	}

	want := map[PartitionKey]Units{
		// 2 puts of 2 WCU; a Query of 3,000 bytes (one 4 KB step,
		// halved: eventually consistent); one BatchGetItem key.
		{Table: "things", Key: "hot"}: {RCU: 0.5 + 0.5, WCU: 4},
		// 2 index entries of 2 WCU; the index Query reads both (0.5).
		{Table: "things", Index: "GSI1", Key: "idx"}: {RCU: 0.5, WCU: 4},
		// a put (2) and a transactional put (4); one BatchGetItem key.
		{Table: "things", Key: "cold"}: {RCU: 0.5, WCU: 6},
		// a missing item still costs a read.
		{Table: "things", Key: "none"}: {RCU: 0.5},
	}
	got := pm.Totals()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%v: got %+v, want %+v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("keys: got %v, want %d keys", got, len(want))
	}
	// Per second: "hot" was written in the first second only, "cold" in
	// the second; the peak is one second's sum.
	for _, u := range pm.Snapshot() {
		switch u.PartitionKey {
		case PartitionKey{Table: "things", Key: "cold"}:
			if u.Peak.WCU != 6 {
				t.Errorf("cold peak %+v, want 6 WCU", u.Peak)
			}
		case PartitionKey{Table: "things", Key: "hot"}:
			if u.Peak.WCU != 4 || u.Peak.RCU != 1 {
				t.Errorf("hot peak %+v, want 4 WCU and 1 RCU", u.Peak)
			}
		}
	}
	clk.add(time.Second)
	for range 3 {
		if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: map[string]ddbtypes.AttributeValue{"PK": s("cold"), "SK": s("a")}, ConsistentRead: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range pm.Snapshot() {
		if u.PartitionKey == (PartitionKey{Table: "things", Key: "cold"}) && (u.Peak.RCU != 3 || u.Total.RCU != 3.5) {
			t.Errorf("cold after 3 consistent reads in one second: %v, want peak 3 RCU, total 3.5", u)
		}
	}
	if pm.Requests() != 10 {
		t.Errorf("requests %d, want 10", pm.Requests())
	}
}
