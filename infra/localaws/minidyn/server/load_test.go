package server

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// loadFixture is items of every attribute type, nested, empty and absent
// ones included, some in both indexes, some in one, one in none, and one
// key written twice (the second put moves its index entries).
func loadFixture() []map[string]ddbtypes.AttributeValue {
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	n := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }

	var items []map[string]ddbtypes.AttributeValue

	for i := range 6 {
		it := map[string]ddbtypes.AttributeValue{
			"PK":    s("P#" + fmt.Sprint(i%2)),
			"SK":    s(fmt.Sprintf("S#%02d", 5-i)),
			"count": n(fmt.Sprint(i * 7)),
			"blob":  &ddbtypes.AttributeValueMemberB{Value: []byte{byte(i), 0, 255}},
			"flag":  &ddbtypes.AttributeValueMemberBOOL{Value: i%2 == 0},
			"none":  &ddbtypes.AttributeValueMemberNULL{Value: true},
			"tags":  &ddbtypes.AttributeValueMemberSS{Value: []string{"a", fmt.Sprint(i)}},
			"nums":  &ddbtypes.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
			"bins":  &ddbtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
			"doc": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{
				"name":  s(fmt.Sprint("doc ", i)),
				"list":  &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{n("1"), s("x"), &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}}}},
				"empty": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}},
			}},
			"emptyMap": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}},
		}
		if i != 3 {
			it["GSI1PK"], it["GSI1SK"] = s("ALL"), s(fmt.Sprintf("%02d", i))
		}

		if i%2 == 1 {
			it["GSI2PK"], it["GSI2SK"] = s("ODD"), n(fmt.Sprint(100-i))
		}

		items = append(items, it)
	}

	// The first item again, out of GSI1 and into GSI2.
	again := map[string]ddbtypes.AttributeValue{"PK": s("P#0"), "SK": s("S#05"), "GSI2PK": s("ODD"), "GSI2SK": n("1"), "v": s("second")}

	return append(items, again)
}

func loadTable(t *testing.T) *Server {
	t.Helper()

	srv := NewServer()
	keys := func(hash, rng string) []ddbtypes.KeySchemaElement {
		return []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: ddbtypes.KeyTypeRange},
		}
	}
	attr := func(name string, typ ddbtypes.ScalarAttributeType) ddbtypes.AttributeDefinition {
		return ddbtypes.AttributeDefinition{AttributeName: aws.String(name), AttributeType: typ}
	}

	_, err := srv.client.CreateTable(context.Background(), &CreateTableInput{
		TableName: aws.String("load"),
		KeySchema: keys("PK", "SK"),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			attr("PK", ddbtypes.ScalarAttributeTypeS), attr("SK", ddbtypes.ScalarAttributeTypeS),
			attr("GSI1PK", ddbtypes.ScalarAttributeTypeS), attr("GSI1SK", ddbtypes.ScalarAttributeTypeS),
			attr("GSI2PK", ddbtypes.ScalarAttributeTypeS), attr("GSI2SK", ddbtypes.ScalarAttributeTypeN),
		},
		BillingMode: ddbtypes.BillingModePayPerRequest,
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{
			{IndexName: aws.String("GSI1"), KeySchema: keys("GSI1PK", "GSI1SK"), Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll}},
			{IndexName: aws.String("GSI2"), KeySchema: keys("GSI2PK", "GSI2SK"), Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	return srv
}

// TestPutItemsStoresWhatPutItemStores puts the same items into two tables,
// one PutItem request at a time and with PutItems: the stored items (packed
// as stored), the table's key order and each index's entries, in order,
// must be the same.
func TestPutItemsStoresWhatPutItemStores(t *testing.T) {
	ctx := context.Background()
	items := loadFixture()

	for i, it := range items {
		direct, wire := mapDDBAttributeMapToTypes(it), mapAttributeValueMapToTypes(mapDDBAttributeMapToWire(it))
		if !reflect.DeepEqual(direct, wire) {
			t.Errorf("item %d converted straight differs from its conversion through the wire types:\n%#v\n%#v", i, direct, wire)
		}
	}

	byRequest, loaded := loadTable(t), loadTable(t)
	for i, it := range items {
		if _, err := byRequest.client.PutItem(ctx, &PutItemInput{TableName: aws.String("load"), Item: mapDDBAttributeMapToWire(it)}); err != nil {
			t.Fatalf("PutItem %d: %v", i, err)
		}
	}

	if err := loaded.PutItems(ctx, "load", items); err != nil {
		t.Fatal(err)
	}

	a, b := byRequest.client.tables["load"], loaded.client.tables["load"]
	if len(a.Data) != 6 || !reflect.DeepEqual(a.Data, b.Data) {
		t.Errorf("stored items differ (%d put by request, %d loaded):\n%#v\n%#v", len(a.Data), len(b.Data), a.Data, b.Data)
	}

	if ak, bk := a.SortedKeys.All(), b.SortedKeys.All(); !reflect.DeepEqual(ak, bk) {
		t.Errorf("key order differs:\n%v\n%v", ak, bk)
	}

	for name, want := range map[string]int{"GSI1": 4, "GSI2": 4} {
		scan := func(srv *Server) []map[string]*AttributeValue {
			out, err := srv.client.Scan(ctx, &ScanInput{TableName: aws.String("load"), IndexName: aws.String(name)})
			if err != nil {
				t.Fatalf("scan %s: %v", name, err)
			}

			return out.Items
		}

		ai, bi := scan(byRequest), scan(loaded)
		if len(ai) != want || !reflect.DeepEqual(ai, bi) {
			t.Errorf("index %s: %d entries put by request, %d loaded, want %d, in the same order:\n%v\n%v", name, len(ai), len(bi), want, ai, bi)
		}
	}

	// A refused item is refused the same way.
	bad := []map[string]ddbtypes.AttributeValue{{"PK": &ddbtypes.AttributeValueMemberS{Value: "no sort key"}}}
	_, errRequest := byRequest.client.PutItem(ctx, &PutItemInput{TableName: aws.String("load"), Item: mapDDBAttributeMapToWire(bad[0])})

	errLoaded := loaded.PutItems(ctx, "load", bad)
	if errRequest == nil || errLoaded == nil {
		t.Fatalf("an item without its sort key: PutItem %v, PutItems %v", errRequest, errLoaded)
	}

	if err := loaded.PutItems(ctx, "missing", items[:1]); err == nil {
		t.Error("a load into a missing table succeeded")
	}
}
