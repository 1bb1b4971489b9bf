package localaws

// Regression tests for the patched minidyn (infra/localaws/minidyn,
// PATCHES.md there): each drives the stand-in through the real SDK and
// asserts what DynamoDB does. Upstream v0.8.2 fails every one of them.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const emuTable = "emu"

func emulator(t *testing.T) *dynamodb.Client {
	t.Helper()
	c := startDynamo(t)
	if err := EnsureTable(t.Context(), c, emuTable, fixture(t).Tables["Table"]); err != nil {
		t.Fatal(err)
	}
	return c
}

type attrs = map[string]ddbtypes.AttributeValue

func put(t *testing.T, c *dynamodb.Client, item attrs) {
	t.Helper()
	if _, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(emuTable), Item: item}); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, c *dynamodb.Client, pk, sk string) attrs {
	t.Helper()
	out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(emuTable), Key: attrs{"PK": s(pk), "SK": s(sk)}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func str(t *testing.T, item attrs, name string) string {
	t.Helper()
	v, ok := item[name].(*ddbtypes.AttributeValueMemberS)
	if !ok {
		t.Fatalf("%s: %#v, want a string", name, item[name])
	}
	return v.Value
}

// REMOVE takes attributes off the item (upstream ignored it: the update
// succeeded and the attributes stayed).
func TestEmulatorUpdateRemove(t *testing.T) {
	c := emulator(t)
	put(t, c, attrs{"PK": s("R"), "SK": s("1"), "a": s("old"), "b": s("gone"), "c": s("gone too"), "d": s("kept")})

	out, err := c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(emuTable),
		Key:                       attrs{"PK": s("R"), "SK": s("1")},
		UpdateExpression:          aws.String("SET a = :a REMOVE b, #c"),
		ExpressionAttributeNames:  map[string]string{"#c": "c"},
		ExpressionAttributeValues: attrs{":a": s("new")},
		ReturnValues:              ddbtypes.ReturnValueAllNew,
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, item := range map[string]attrs{"ALL_NEW": out.Attributes, "GetItem": get(t, c, "R", "1")} {
		if _, ok := item["b"]; ok {
			t.Errorf("%s: b still there: %v", name, item)
		}
		if _, ok := item["c"]; ok {
			t.Errorf("%s: c still there: %v", name, item)
		}
		if str(t, item, "a") != "new" || str(t, item, "d") != "kept" {
			t.Errorf("%s: %v", name, item)
		}
	}

	// A REMOVE whose condition fails changes nothing.
	_, err = c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(emuTable),
		Key:                       attrs{"PK": s("R"), "SK": s("1")},
		UpdateExpression:          aws.String("REMOVE d"),
		ConditionExpression:       aws.String("a = :other"),
		ExpressionAttributeValues: attrs{":other": s("other")},
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("conditional REMOVE: %v, want ConditionalCheckFailedException", err)
	}
	if str(t, get(t, c, "R", "1"), "d") != "kept" {
		t.Error("a failed conditional REMOVE removed d")
	}
}

// An empty list or map comes back as one (upstream sent it as an empty
// attribute value, which the SDK decodes as a copy of the attribute
// decoded before it), also after a cancelled transaction rolled back.
func TestEmulatorEmptyListAndMap(t *testing.T) {
	c := emulator(t)
	checkEmpty := func(what string, item attrs) {
		t.Helper()
		if l, ok := item["nolist"].(*ddbtypes.AttributeValueMemberL); !ok || len(l.Value) != 0 {
			t.Errorf("%s: nolist = %#v, want an empty list", what, item["nolist"])
		}
		if m, ok := item["nomap"].(*ddbtypes.AttributeValueMemberM); !ok || len(m.Value) != 0 {
			t.Errorf("%s: nomap = %#v, want an empty map", what, item["nomap"])
		}
		if l, ok := item["tags"].(*ddbtypes.AttributeValueMemberL); !ok || len(l.Value) != 1 {
			t.Errorf("%s: tags = %#v, want one element", what, item["tags"])
		}
	}
	empty := attrs{
		"PK": s("E"), "SK": s("1"), "a": s("x"), "z": s("y"),
		"tags":   &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{s("t")}},
		"nolist": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}},
		"nomap":  &ddbtypes.AttributeValueMemberM{Value: attrs{}},
	}
	put(t, c, empty)
	checkEmpty("GetItem", get(t, c, "E", "1"))

	q, err := c.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 aws.String(emuTable),
		KeyConditionExpression:    aws.String("PK = :p"),
		ExpressionAttributeValues: attrs{":p": s("E")},
	})
	if err != nil || len(q.Items) != 1 {
		t.Fatalf("Query: %v, %d items", err, len(q.Items))
	}
	checkEmpty("Query", q.Items[0])

	up, err := c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(emuTable),
		Key:                       attrs{"PK": s("E"), "SK": s("1")},
		UpdateExpression:          aws.String("SET nolist = :e, nomap = :m"),
		ExpressionAttributeValues: attrs{":e": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}}, ":m": &ddbtypes.AttributeValueMemberM{Value: attrs{}}},
		ReturnValues:              ddbtypes.ReturnValueAllNew,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkEmpty("UpdateItem ALL_NEW", up.Attributes)

	// A cancelled transaction restores the items it touched, empty
	// values included.
	_, err = c.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Update: &ddbtypes.Update{
			TableName: aws.String(emuTable), Key: attrs{"PK": s("E"), "SK": s("1")},
			UpdateExpression: aws.String("SET a = :v"), ExpressionAttributeValues: attrs{":v": s("changed")},
		}},
		{ConditionCheck: &ddbtypes.ConditionCheck{
			TableName: aws.String(emuTable), Key: attrs{"PK": s("E"), "SK": s("missing")},
			ConditionExpression: aws.String("attribute_exists(PK)"),
		}},
	}})
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("transaction: %v, want TransactionCanceledException", err)
	}
	after := get(t, c, "E", "1")
	checkEmpty("GetItem after a cancelled transaction", after)
	if str(t, after, "a") != "x" {
		t.Errorf("the cancelled transaction's update stayed: %v", after)
	}
}

// gsiKeys lists the table keys (PK/SK) a GSI1 Query for partition returns.
func gsiKeys(t *testing.T, c *dynamodb.Client, partition string) []string {
	t.Helper()
	out, err := c.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 aws.String(emuTable),
		IndexName:                 aws.String("GSI1"),
		KeyConditionExpression:    aws.String("GSI1PK = :p"),
		ExpressionAttributeValues: attrs{":p": s(partition)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range out.Items {
		keys = append(keys, str(t, it, "PK")+"/"+str(t, it, "SK"))
	}
	return keys
}

// An update that gives an item its GSI keys indexes it (upstream overwrote
// another item's index entry instead); one that removes them, or a Put that
// replaces the item without them, takes it out of the index; one that
// changes them moves it.
func TestEmulatorIndexFollowsUpdates(t *testing.T) {
	c := emulator(t)
	ctx := t.Context()
	put(t, c, attrs{"PK": s("I"), "SK": s("1"), "GSI1PK": s("G"), "GSI1SK": s("1")})
	put(t, c, attrs{"PK": s("I"), "SK": s("2"), "GSI1PK": s("G"), "GSI1SK": s("2")})
	put(t, c, attrs{"PK": s("I"), "SK": s("3")})
	update := func(sk, expr string, values attrs) {
		t.Helper()
		in := &dynamodb.UpdateItemInput{
			TableName: aws.String(emuTable), Key: attrs{"PK": s("I"), "SK": s(sk)},
			UpdateExpression: aws.String(expr),
		}
		if len(values) > 0 {
			in.ExpressionAttributeValues = values
		}
		if _, err := c.UpdateItem(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	want := func(partition string, keys ...string) {
		t.Helper()
		if got := gsiKeys(t, c, partition); !slices.Equal(got, keys) {
			t.Errorf("GSI1 %s: %v, want %v", partition, got, keys)
		}
	}

	update("3", "SET GSI1PK = :p, GSI1SK = :s", attrs{":p": s("G"), ":s": s("3")})
	want("G", "I/1", "I/2", "I/3")

	update("1", "SET GSI1SK = :s", attrs{":s": s("4")})
	want("G", "I/2", "I/3", "I/1")

	update("2", "SET GSI1PK = :p", attrs{":p": s("H")})
	want("G", "I/3", "I/1")
	want("H", "I/2")

	update("3", "REMOVE GSI1PK, GSI1SK", nil)
	want("G", "I/1")

	put(t, c, attrs{"PK": s("I"), "SK": s("1"), "other": s("x")})
	want("G")
	want("H", "I/2")

	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(emuTable), Key: attrs{"PK": s("I"), "SK": s("2")}}); err != nil {
		t.Fatal(err)
	}
	want("H")
}

// queryRun is what paging through a Query returned.
type queryRun struct {
	keys  []string
	pages int
}

// queryAll pages through a Query, following LastEvaluatedKey.
func queryAll(t *testing.T, c *dynamodb.Client, in dynamodb.QueryInput, keyAttr string) queryRun {
	t.Helper()
	var run queryRun
	for {
		out, err := c.Query(t.Context(), &in)
		if err != nil {
			t.Fatal(err)
		}
		run.pages++
		if in.Limit != nil && len(out.Items) > int(*in.Limit) {
			t.Fatalf("page of %d items, limit %d", len(out.Items), *in.Limit)
		}
		for _, it := range out.Items {
			run.keys = append(run.keys, str(t, it, keyAttr))
		}
		if len(out.LastEvaluatedKey) == 0 {
			return run
		}
		if in.Limit != nil && len(out.Items) < int(*in.Limit) {
			t.Fatalf("a page of %d (limit %d) with a LastEvaluatedKey", len(out.Items), *in.Limit)
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		if run.pages > 100 {
			t.Fatal("more than 100 pages")
		}
	}
}

// A Query reads its partition, in key order both ways, in pages that
// resume after LastEvaluatedKey, on the table and on an index, whatever
// the neighbouring partitions' keys look like (the stand-in keys items by
// hash and range joined with a dot: "P" and "P.x" share a prefix).
func TestEmulatorQueryPages(t *testing.T) {
	c := emulator(t)
	hashes := []string{"O", "P", "P#", "P.x", "P.", "Pa", "Q"}
	sks := []string{"a", "b", "b0", "c", "d", "e", "f.g", "z"}
	want := map[string][]string{}
	for hi, h := range hashes {
		for si, sk := range sks {
			put(t, c, attrs{
				"PK": s(h), "SK": s(sk),
				// The index partitions the same items the other way round,
				// its range keys in the reverse order of SK.
				"GSI1PK": s("G" + h), "GSI1SK": s(fmt.Sprintf("%02d", len(sks)-si)), "n": s(fmt.Sprint(hi)),
			})
			want[h] = append(want[h], sk)
		}
	}

	for _, h := range []string{"P", "P.", "P.x", "Q", "nolist"} {
		for _, forward := range []bool{true, false} {
			for _, limit := range []int32{0, 1, 3, 7, 8} {
				exp := slices.Clone(want[h])
				if !forward {
					slices.Reverse(exp)
				}
				in := dynamodb.QueryInput{
					TableName:                 aws.String(emuTable),
					KeyConditionExpression:    aws.String("#pk = :p"),
					ExpressionAttributeNames:  map[string]string{"#pk": "PK"},
					ExpressionAttributeValues: attrs{":p": s(h)},
					ScanIndexForward:          aws.Bool(forward),
				}
				if limit > 0 {
					in.Limit = aws.Int32(limit)
				}
				name := fmt.Sprintf("table %q forward=%v limit=%d", h, forward, limit)
				if got := queryAll(t, c, in, "SK"); !slices.Equal(got.keys, exp) {
					t.Errorf("%s: %v, want %v", name, got.keys, exp)
				}

				// The index orders the partition by GSI1SK, the reverse of SK.
				in.IndexName = aws.String("GSI1")
				in.ExpressionAttributeNames = map[string]string{"#pk": "GSI1PK"}
				in.ExpressionAttributeValues = attrs{":p": s("G" + h)}
				slices.Reverse(exp)
				if got := queryAll(t, c, in, "SK"); !slices.Equal(got.keys, exp) {
					t.Errorf("GSI1 %s: %v, want %v", name, got.keys, exp)
				}
			}
		}
	}

	// Range conditions, the hash condition first or last.
	for _, tc := range []struct {
		expr   string
		values attrs
		want   []string
	}{
		{"SK BETWEEN :a AND :b AND PK = :p", attrs{":p": s("P"), ":a": s("b"), ":b": s("c")}, []string{"b", "b0", "c"}},
		{"PK = :p AND begins_with(SK, :b)", attrs{":p": s("P"), ":b": s("b")}, []string{"b", "b0"}},
		{"PK = :p AND SK > :b", attrs{":p": s("P"), ":b": s("b")}, []string{"b0", "c", "d", "e", "f.g", "z"}},
	} {
		got := queryAll(t, c, dynamodb.QueryInput{
			TableName:                 aws.String(emuTable),
			KeyConditionExpression:    aws.String(tc.expr),
			ExpressionAttributeValues: tc.values,
			Limit:                     aws.Int32(2),
		}, "SK")
		if !slices.Equal(got.keys, tc.want) {
			t.Errorf("%s: %v, want %v", tc.expr, got.keys, tc.want)
		}
	}
}

// Limit counts the items a Query's key condition selects, before the
// filter (upstream counted every item it walked past, other partitions'
// included, once a filter was set).
func TestEmulatorQueryLimitWithFilter(t *testing.T) {
	c := emulator(t)
	for _, h := range []string{"A", "B", "C"} {
		for i, sk := range []string{"1", "2", "3", "4"} {
			item := attrs{"PK": s(h), "SK": s(sk)}
			if i%2 == 1 {
				item["flag"] = s("y")
			}
			put(t, c, item)
		}
	}
	in := dynamodb.QueryInput{
		TableName:                 aws.String(emuTable),
		KeyConditionExpression:    aws.String("PK = :p"),
		FilterExpression:          aws.String("attribute_exists(flag)"),
		ExpressionAttributeValues: attrs{":p": s("B")},
		Limit:                     aws.Int32(3),
	}
	out, err := c.Query(t.Context(), &in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range out.Items {
		got = append(got, str(t, it, "SK"))
	}
	// The first three items of B are read; 2 of them pass the filter.
	if !slices.Equal(got, []string{"2"}) || str(t, out.LastEvaluatedKey, "SK") != "3" || str(t, out.LastEvaluatedKey, "PK") != "B" {
		t.Fatalf("page 1: %v, LastEvaluatedKey %v; want [2] and B/3", got, out.LastEvaluatedKey)
	}
	in.ExclusiveStartKey = out.LastEvaluatedKey
	if out, err = c.Query(t.Context(), &in); err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 || str(t, out.Items[0], "SK") != "4" || len(out.LastEvaluatedKey) != 0 {
		t.Fatalf("page 2: %v, LastEvaluatedKey %v; want [4] and none", out.Items, out.LastEvaluatedKey)
	}
}

// A page resumes after its ExclusiveStartKey even when that item has been
// deleted since (upstream returned nothing: it looked for the item).
func TestEmulatorQueryResumesAfterDeletedKey(t *testing.T) {
	c := emulator(t)
	for _, sk := range []string{"1", "2", "3", "4"} {
		put(t, c, attrs{"PK": s("D"), "SK": s(sk), "GSI1PK": s("GD"), "GSI1SK": s(sk)})
	}
	for _, index := range []string{"", "GSI1"} {
		in := dynamodb.QueryInput{
			TableName:                 aws.String(emuTable),
			KeyConditionExpression:    aws.String("PK = :p"),
			ExpressionAttributeValues: attrs{":p": s("D")},
			Limit:                     aws.Int32(2),
		}
		if index != "" {
			in.IndexName = aws.String(index)
			in.KeyConditionExpression = aws.String("GSI1PK = :p")
			in.ExpressionAttributeValues = attrs{":p": s("GD")}
		}
		out, err := c.Query(t.Context(), &in)
		if err != nil {
			t.Fatal(err)
		}
		lek := out.LastEvaluatedKey
		last := str(t, lek, "SK")
		if _, err := c.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(emuTable), Key: attrs{"PK": s("D"), "SK": s(last)}}); err != nil {
			t.Fatal(err)
		}
		in.ExclusiveStartKey = lek
		if out, err = c.Query(t.Context(), &in); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range out.Items {
			got = append(got, str(t, it, "SK"))
		}
		if len(got) == 0 || got[0] <= last {
			t.Errorf("index %q: after deleted %s: %s", index, last, strings.Join(got, ","))
		}
	}
}
