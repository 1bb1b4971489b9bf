package localaws

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

func TestItemSizeRules(t *testing.T) {
	for _, c := range []struct {
		item string
		want int
	}{
		{`{"PK":{"S":"p"}}`, 3},
		{`{"name":{"S":"héllo"}}`, 4 + 6},     // UTF-8 bytes
		{`{"n":{"N":"123.45"}}`, 1 + 3 + 1},   // 5 significant digits
		{`{"n":{"N":"-0.00100"}}`, 1 + 1 + 1}, // zeros are not significant
		{`{"b":{"B":"AAECAw=="}}`, 1 + 4},     // raw bytes, not base64
		{`{"t":{"BOOL":true},"z":{"NULL":true}}`, 2 + 2},
		{`{"l":{"L":[{"S":"ab"},{"BOOL":false}]}}`, 1 + 3 + (1 + 2) + (1 + 1)},
		{`{"m":{"M":{"k":{"S":"v"}}}}`, 1 + 3 + (1 + 1 + 1)},
		{`{"m":{"M":{}}}`, 1 + 3},
		{`{"ss":{"SS":["a","bc"]}}`, 2 + 3},
	} {
		var it map[string]*server.AttributeValue
		if err := json.Unmarshal([]byte(c.item), &it); err != nil {
			t.Fatal(err)
		}
		if got := server.ItemSize(it); got != c.want {
			t.Errorf("ItemSize(%s) = %d, want %d", c.item, got, c.want)
		}
	}
}

// TestMeterReportsCapacity drives the metered server through the SDK and
// checks each reported number against DynamoDB's rules. Sizes: PK "p*" and
// SK "s" cost 3+3 bytes, attribute "d" 1 byte plus its value.
func TestMeterReportsCapacity(t *testing.T) {
	ctx := t.Context()
	c := startDynamo(t)
	if err := EnsureTable(ctx, c, "things", fixture(t).Tables["Table"]); err != nil {
		t.Fatal(err)
	}
	tbl := aws.String("things")
	total := ddbtypes.ReturnConsumedCapacityTotal
	data := func(n int) ddbtypes.AttributeValue { return s(strings.Repeat("x", n)) }
	key := func(pk string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"PK": s(pk), "SK": s("s")}
	}
	itemOf := func(pk string, size int, extra ...string) map[string]ddbtypes.AttributeValue {
		it := key(pk)
		it["d"] = data(size - len(pk) - 2 - 3 - 1)
		for i := 0; i+1 < len(extra); i += 2 {
			it[extra[i]] = s(extra[i+1])
			it["d"] = data(len(it["d"].(*ddbtypes.AttributeValueMemberS).Value) - len(extra[i]) - len(extra[i+1]))
		}
		return it
	}
	units := func(what string, cc *ddbtypes.ConsumedCapacity, want float64) {
		t.Helper()
		if cc == nil || cc.CapacityUnits == nil {
			t.Errorf("%s: no ConsumedCapacity", what)
			return
		}
		if *cc.CapacityUnits != want {
			t.Errorf("%s: %v capacity units, want %v", what, *cc.CapacityUnits, want)
		}
	}
	sum := func(ccs []ddbtypes.ConsumedCapacity) *ddbtypes.ConsumedCapacity {
		var u float64
		for _, cc := range ccs {
			u += aws.ToFloat64(cc.CapacityUnits)
		}
		return &ddbtypes.ConsumedCapacity{CapacityUnits: &u}
	}
	put := func(what string, it map[string]ddbtypes.AttributeValue, want float64) {
		t.Helper()
		out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: it, ReturnConsumedCapacity: total})
		if err != nil {
			t.Fatal(err)
		}
		units(what, out.ConsumedCapacity, want)
	}

	put("put 1000 B", itemOf("p1", 1000), 1)
	put("replace with 2000 B", itemOf("p1", 2000), 2)
	put("replace 2000 B with 100 B (the larger is billed)", itemOf("p1", 100), 2)
	put("put 5000 B", itemOf("p2", 5000), 5)

	get := func(what, pk string, consistent bool, projection string, want float64) {
		t.Helper()
		in := &dynamodb.GetItemInput{TableName: tbl, Key: key(pk), ConsistentRead: aws.Bool(consistent), ReturnConsumedCapacity: total}
		if projection != "" {
			in.ProjectionExpression = aws.String(projection)
		}
		out, err := c.GetItem(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		units(what, out.ConsumedCapacity, want)
	}
	get("strongly consistent 5000 B", "p2", true, "", 2)
	get("eventually consistent 5000 B", "p2", false, "", 1)
	get("projection is billed for the whole item", "p2", false, "PK", 1)
	get("missing item", "nothing", false, "", 0.5)

	// Query sums its items before rounding, and bills what it read before
	// the filter.
	for i, pk := range []string{"q", "q", "q"} {
		it := itemOf(pk, 2000)
		it["SK"] = s(string(rune('a' + i)))
		put("query item", it, 2)
	}
	query := func(what string, in dynamodb.QueryInput, want float64) {
		t.Helper()
		in.TableName, in.ReturnConsumedCapacity = tbl, total
		in.KeyConditionExpression = aws.String("PK = :pk")
		if in.ExpressionAttributeValues == nil {
			in.ExpressionAttributeValues = map[string]ddbtypes.AttributeValue{}
		}
		in.ExpressionAttributeValues[":pk"] = s("q")
		out, err := c.Query(ctx, &in)
		if err != nil {
			t.Fatal(err)
		}
		units(what, out.ConsumedCapacity, want)
	}
	query("three 2000 B items, eventually consistent", dynamodb.QueryInput{}, 1)
	query("consistent", dynamodb.QueryInput{ConsistentRead: aws.Bool(true)}, 2)
	query("a filter matching nothing still reads", dynamodb.QueryInput{FilterExpression: aws.String("d = :none"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":none": s("none")}}, 1)
	query("Limit 1", dynamodb.QueryInput{Limit: aws.Int32(1)}, 0.5)

	upd, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key("p1"),
		UpdateExpression: aws.String("SET d = :d"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":d": data(3000)},
		ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	units("update growing 100 B to about 3000 B", upd.ConsumedCapacity, 3)
	del, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: key("p2"), ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	units("delete 5000 B", del.ConsumedCapacity, 5)

	// Global secondary index entries: put, change, move, remove.
	put("enter the index", itemOf("g", 500, "GSI1PK", "x", "GSI1SK", "1"), 1+1)
	put("change a projected attribute", itemOf("g", 600, "GSI1PK", "x", "GSI1SK", "1"), 1+1)
	put("move the index key (delete + put)", itemOf("g", 600, "GSI1PK", "y", "GSI1SK", "1"), 1+2)
	put("leave the index", itemOf("g", 600), 1+1)
	put("unchanged item still writes the table, not the index", itemOf("g", 600), 1)
	out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: itemOf("g", 600, "GSI1PK", "x", "GSI1SK", "1"), ReturnConsumedCapacity: ddbtypes.ReturnConsumedCapacityIndexes})
	if err != nil {
		t.Fatal(err)
	}
	if cc := out.ConsumedCapacity; cc == nil || aws.ToFloat64(cc.Table.CapacityUnits) != 1 || aws.ToFloat64(cc.GlobalSecondaryIndexes["GSI1"].CapacityUnits) != 1 {
		t.Errorf("INDEXES breakdown = %+v", cc)
	}

	// Transactions bill twice, a condition check as a write.
	tx, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ReturnConsumedCapacity: total, TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: tbl, Item: itemOf("t1", 1500)}},
		{ConditionCheck: &ddbtypes.ConditionCheck{TableName: tbl, Key: key("p1"), ConditionExpression: aws.String("attribute_exists(PK)")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	units("transaction: put 1500 B + check about 3000 B", sum(tx.ConsumedCapacity), 2*2+2*3)

	bg, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{ReturnConsumedCapacity: total, RequestItems: map[string]ddbtypes.KeysAndAttributes{
		"things": {Keys: []map[string]ddbtypes.AttributeValue{key("t1"), key("p1"), key("nothing")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	units("batch get: each item rounded alone, a missing one too", sum(bg.ConsumedCapacity), 0.5+0.5+0.5)

	bw, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{ReturnConsumedCapacity: total, RequestItems: map[string][]ddbtypes.WriteRequest{
		"things": {{PutRequest: &ddbtypes.PutRequest{Item: itemOf("b1", 1100)}}, {DeleteRequest: &ddbtypes.DeleteRequest{Key: key("t1")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	units("batch write: put 1100 B + delete 1500 B", sum(bw.ConsumedCapacity), 2+2)

	// Not asked, not reported; a failed condition reports nothing (as on
	// AWS, where it is billed all the same).
	plain, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("p1")})
	if err != nil {
		t.Fatal(err)
	}
	if plain.ConsumedCapacity != nil {
		t.Errorf("capacity reported without being asked: %+v", plain.ConsumedCapacity)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: itemOf("p1", 100), ConditionExpression: aws.String("attribute_not_exists(PK)"), ReturnConsumedCapacity: total}); err == nil {
		t.Error("conditional put over an existing item succeeded")
	}
}
