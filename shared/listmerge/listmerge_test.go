package listmerge

import (
	"slices"
	"testing"
)

// A source read only in part bounds the union at its last position; a
// position two sources give is one member, seen from both.
func TestUnionStopsAtTheLeastAdvancedPartialSource(t *testing.T) {
	pages := []Sorted{{Pos: []string{"a", "c", "e"}, More: false}, {Pos: []string{"b", "c"}, More: true}}
	var seen [][2]int
	order, more := Union(pages, false, 10, func(src, i int) { seen = append(seen, [2]int{src, i}) })
	if !slices.Equal(order, []string{"a", "b", "c"}) || !more {
		t.Fatalf("ascending: %v more=%v, want [a b c] and more (e lies past the second source's c)", order, more)
	}
	if !slices.Equal(seen, [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}}) {
		t.Fatalf("seen %v", seen)
	}
	desc := []Sorted{{Pos: []string{"e", "c", "a"}}, {Pos: []string{"d", "b"}}}
	if order, more := Union(desc, true, 3, func(int, int) {}); !slices.Equal(order, []string{"e", "d", "c"}) || !more {
		t.Fatalf("descending, n=3: %v more=%v", order, more)
	}
	if order, more := Union(desc, true, 10, func(int, int) {}); len(order) != 5 || more {
		t.Fatalf("whole: %v more=%v", order, more)
	}
}
