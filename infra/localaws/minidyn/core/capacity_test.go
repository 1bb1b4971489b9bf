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
