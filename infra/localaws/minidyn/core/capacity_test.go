package core

import (
	"testing"

	"github.com/truora/minidyn/types"
)

// TestEncodeItemTellsValuesApart checks that the encoding IndexWrites
// compares entries with is equal exactly for equal items: values that a
// careless encoding would confuse come out different.
func TestEncodeItemTellsValuesApart(t *testing.T) {
	s := func(v string) *types.Item { return &types.Item{S: &v} }
	n := func(v string) *types.Item { return &types.Item{N: &v} }
	yes, no := true, false
	distinct := []map[string]*types.Item{
		{},
		{"a": s("1")},
		{"a": n("1")},
		{"a": n("1.0")},
		{"a": &types.Item{B: []byte("1")}},
		{"a": s("1"), "b": s("")},
		{"a": s("1:b1:")},
		{"ab": s("")},
		{"a": &types.Item{BOOL: &yes}},
		{"a": &types.Item{BOOL: &no}},
		{"a": &types.Item{NULL: &yes}},
		{"a": &types.Item{L: []*types.Item{}}},
		{"a": &types.Item{M: map[string]*types.Item{}}},
		{"a": &types.Item{L: []*types.Item{s("x"), s("y")}}},
		{"a": &types.Item{L: []*types.Item{s("y"), s("x")}}},
		{"a": &types.Item{M: map[string]*types.Item{"x": s("y")}}},
		{"a": &types.Item{M: map[string]*types.Item{"y": s("x")}}},
		{"a": &types.Item{SS: []*string{&[]string{"x"}[0]}}},
		{"a": &types.Item{NS: []*string{&[]string{"x"}[0]}}},
	}
	seen := map[string]int{}
	for i, it := range distinct {
		e := encodeItem(it, nil)
		if j, ok := seen[e]; ok {
			t.Errorf("items %d and %d encode alike: %q", j, i, e)
		}
		seen[e] = i
		if again := encodeItem(deepCopyItemMap(it), nil); again != e {
			t.Errorf("item %d: a copy encodes as %q, not %q", i, again, e)
		}
	}
	// Only the names asked for are encoded.
	if encodeItem(map[string]*types.Item{"a": s("1"), "b": s("2")}, []string{"a"}) != encodeItem(map[string]*types.Item{"a": s("1")}, nil) {
		t.Error("a projection encodes attributes it does not hold")
	}
}

// TestReadSizeThroughProjection checks that a Query through a KEYS_ONLY
// or INCLUDE index is billed on the item as the index projects it.
func TestReadSizeThroughProjection(t *testing.T) {
	str := func(v string) *string { return &v }
	table := NewTable("proj")
	table.BillingMode = str("PAY_PER_REQUEST")
	table.AttributesDef = map[string]string{"id": "S", "sk": "S", "g": "S"}

	if err := table.CreatePrimaryIndex(&types.CreateTableInput{KeySchema: []*types.KeySchemaElement{
		{AttributeName: "id", KeyType: "HASH"}, {AttributeName: "sk", KeyType: "RANGE"},
	}}); err != nil {
		t.Fatal(err)
	}

	if err := table.AddGlobalIndexes([]*types.GlobalSecondaryIndex{
		{IndexName: str("keys"), KeySchema: []*types.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}},
			Projection: &types.Projection{ProjectionType: str("KEYS_ONLY")}},
		{IndexName: str("incl"), KeySchema: []*types.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}},
			Projection: &types.Projection{ProjectionType: str("INCLUDE"), NonKeyAttributes: []*string{str("title"), str("absent")}}},
	}); err != nil {
		t.Fatal(err)
	}

	item := map[string]*types.Item{"id": {S: str("1")}, "sk": {S: str("s")}, "g": {S: str("gg")}, "title": {S: str("tt")}, "extra": {S: str("xxxx")}}
	for name, want := range map[string]int{"keys": 3 + 3 + 3, "incl": 3 + 3 + 3 + 7} {
		idx := table.Indexes[name]
		if got := readSize(item, idx); got != want {
			t.Errorf("%s: read size %d, want %d", name, got, want)
		}

		if got, projected := readSize(item, idx), ItemSize(idx.ProjectItem(item)); got != projected {
			t.Errorf("%s: read size %d, the projected item's %d", name, got, projected)
		}
	}

	if got := readSize(item, nil); got != ItemSize(item) {
		t.Errorf("table: read size %d, want %d", got, ItemSize(item))
	}
}
