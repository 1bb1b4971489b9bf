package core

import (
	"fmt"
	"reflect"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/truora/minidyn/types"
)

func strp(s string) *string { return &s }
func boolp(b bool) *bool    { return &b }

// sampleItem has every kind of attribute value, nested lists and maps, and
// the nil/empty distinctions a copy must keep.
func sampleItem(i int) map[string]*types.Item {
	return map[string]*types.Item{
		"PK":      {S: strp(fmt.Sprintf("PRINCIPAL#%06d", i))},
		"SK":      {S: strp("PRINCIPAL")},
		"empty":   {S: strp("")},
		"n":       {N: strp("42.5")},
		"bin":     {B: []byte{1, 2, 3}},
		"nobin":   {B: []byte{}},
		"bs":      {BS: [][]byte{{4}, {5, 6}}},
		"t":       {BOOL: boolp(true)},
		"f":       {BOOL: boolp(false)},
		"null":    {NULL: boolp(true)},
		"ss":      {SS: []*string{strp("a"), strp("b")}},
		"ns":      {NS: []*string{strp("1"), strp("2")}},
		"list":    {L: []*types.Item{{S: strp("x")}, {L: []*types.Item{}}, {M: map[string]*types.Item{"k": {N: strp("7")}}}}},
		"nolist":  {L: []*types.Item{}},
		"map":     {M: map[string]*types.Item{"inner": {SS: []*string{strp("c")}}, "deeper": {M: map[string]*types.Item{}}}},
		"nilattr": nil,
	}
}

func TestPackItemCopiesEveryValue(t *testing.T) {
	orig := sampleItem(1)
	packed := packItem(orig)

	if !reflect.DeepEqual(packed, sampleItem(1)) {
		t.Fatalf("packed item differs:\n got %#v\nwant %#v", packed, sampleItem(1))
	}

	// Empty lists, maps and binaries stay values (non-nil); reflect.DeepEqual
	// already tells nil from empty, this says why it matters.
	if packed["nolist"].L == nil || packed["map"].M["deeper"].M == nil || packed["nobin"].B == nil {
		t.Fatal("an empty list, map or binary became no value")
	}

	// A copy: changing the original afterwards leaves it alone.
	*orig["PK"].S = "changed"
	orig["bin"].B[0] = 9
	*orig["t"].BOOL = false
	orig["list"].L[0] = nil

	if *packed["PK"].S != "PRINCIPAL#000001" || packed["bin"].B[0] != 1 || !*packed["t"].BOOL || packed["list"].L[0] == nil {
		t.Fatalf("packed item shares memory with the original: %#v", packed)
	}
}

func TestPackItemAppendDoesNotWriteIntoNeighbours(t *testing.T) {
	packed := packItem(sampleItem(2))
	before := *packed["PK"].S + *packed["SK"].S + string(packed["bs"].BS[0]) + string(packed["bs"].BS[1])

	// Appending to one packed value must not overwrite what the buffer
	// holds after it.
	_ = append(packed["bin"].B, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	_ = append(packed["bs"].BS[0], 0xff, 0xff, 0xff, 0xff)
	_ = append(packed["list"].L, &types.Item{S: strp("y")})
	_ = append(packed["ss"].SS, strp("z"))

	after := *packed["PK"].S + *packed["SK"].S + string(packed["bs"].BS[0]) + string(packed["bs"].BS[1])
	if after != before || !reflect.DeepEqual(packed, sampleItem(2)) {
		t.Fatalf("an append changed the packed item: %#v", packed)
	}
}

func TestSetItemStoresAPackedCopy(t *testing.T) {
	tbl := NewTable("t")
	item := sampleItem(3)
	tbl.setItem("k", item)

	stored := tbl.Data["k"]
	if !reflect.DeepEqual(stored, sampleItem(3)) {
		t.Fatalf("stored item differs: %#v", stored)
	}

	if stored["PK"] == item["PK"] {
		t.Fatal("the table stores the caller's item, not a packed copy")
	}
}

// BenchmarkStoredItemsGC measures what items kept in memory cost the
// garbage collector: the CPU time of a full collection (runtime.GC, which
// marks every live object) with 20,000 items held, as the table held them
// before packing (one small object per value, string and name) and packed.
// A collection's cost is what the stored table adds to every cycle; the
// cycles a request triggers are set by what it allocates, so this cost
// is, per request, the part that grew with the table. Report: gc-cpu-ns
// per collection and per 1,000 items, and the objects the items hold.
func BenchmarkStoredItemsGC(b *testing.B) {
	const n = 20000

	for _, c := range []struct {
		name string
		keep func(map[string]*types.Item) map[string]*types.Item
	}{
		{"unpacked", deepCopyItemMap},
		{"packed", packItem},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ms0, ms1 runtime.MemStats

			runtime.GC()
			runtime.ReadMemStats(&ms0)

			held := make([]map[string]*types.Item, n)
			for i := range held {
				held[i] = c.keep(sampleItem(i))
			}

			runtime.GC()
			runtime.ReadMemStats(&ms1)

			var cpu time.Duration

			for b.Loop() {
				t0 := processCPU()

				runtime.GC()

				cpu += processCPU() - t0
			}

			runtime.KeepAlive(held)

			perGC := float64(cpu.Nanoseconds()) / float64(b.N)
			b.ReportMetric(perGC, "gc-cpu-ns/op")
			b.ReportMetric(perGC*1000/n, "gc-cpu-ns/1k-items")
			b.ReportMetric(float64(ms1.HeapObjects-ms0.HeapObjects)/n, "objects/item")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}

	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
