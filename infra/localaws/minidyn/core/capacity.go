package core

// This file is not in upstream minidyn v0.8.2 (see PATCHES.md, 7): the
// sizes and index entries that DynamoDB bills, taken from the items where
// the table already holds them.

import (
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/truora/minidyn/types"
)

// ReadUnits is what reading size bytes costs: 4 KB steps, at least one,
// halved when eventually consistent.
func ReadUnits(size int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		return u / 2
	}

	return u
}

// WriteUnits is what writing size bytes costs: 1 KB steps, at least one.
func WriteUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

// ItemSize is an item's size by DynamoDB's rules: each attribute's name
// plus its value (0 for no item).
func ItemSize(item map[string]*types.Item) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}

	return n
}

// valueSize is one attribute value's size: UTF-8 bytes of a string, raw
// bytes of a binary, about one byte per two significant digits plus one
// of a number, one byte of a boolean or null, and three bytes plus one per
// element (and each map key's length) of a list or map.
func valueSize(v *types.Item) int {
	switch {
	case v == nil:
		return 0
	case v.S != nil:
		return len(*v.S)
	case v.N != nil:
		return numberSize(*v.N)
	case v.B != nil:
		return len(v.B)
	case v.BOOL != nil, v.NULL != nil:
		return 1
	case v.SS != nil:
		n := 0
		for _, s := range v.SS {
			if s != nil {
				n += len(*s)
			}
		}

		return n
	case v.NS != nil:
		n := 0
		for _, s := range v.NS {
			if s != nil {
				n += numberSize(*s)
			}
		}

		return n
	case v.BS != nil:
		n := 0
		for _, b := range v.BS {
			n += len(b)
		}

		return n
	case v.L != nil:
		n := 3
		for _, e := range v.L {
			n += 1 + valueSize(e)
		}

		return n
	case v.M != nil:
		n := 3
		for k, e := range v.M {
			n += 1 + len(k) + valueSize(e)
		}

		return n
	}

	return 0
}

// numberSize counts significant digits: leading and trailing zeros are
// not stored.
func numberSize(s string) int {
	if e := strings.IndexAny(s, "eE"); e >= 0 {
		s = s[:e]
	}

	s = strings.TrimLeft(s, "+-")
	s = strings.ReplaceAll(s, ".", "")
	s = strings.Trim(s, "0")
	digits := utf8.RuneCountInString(s)

	return (digits+1)/2 + 1
}

// KeyText is a key attribute's value as text: a string or number as
// written, a binary in base64 ("" for none).
func KeyText(v *types.Item) string {
	switch {
	case v == nil:
		return ""
	case v.S != nil:
		return *v.S
	case v.N != nil:
		return *v.N
	case v.B != nil:
		return base64.StdEncoding.EncodeToString(v.B)
	}

	return ""
}

// readSize is what reading a stored item costs through idx (nil: the
// table): the index's projection of it. It sizes the attributes the
// projection keeps, as a write's index entry does, without building the
// projected item.
func readSize(item map[string]*types.Item, idx *index) int {
	if idx == nil || idx.projection == nil || idx.projection.ProjectionType == nil {
		return ItemSize(item)
	}

	switch *idx.projection.ProjectionType {
	case "KEYS_ONLY", "INCLUDE":
		return attributesSize(item, idx.entryAttributes())
	default:
		return ItemSize(item)
	}
}

// attributesSize is the size of the attributes named of item (those it
// has).
func attributesSize(item map[string]*types.Item, names []string) int {
	n := 0

	for _, a := range names {
		if v, ok := item[a]; ok {
			n += len(a) + valueSize(v)
		}
	}

	return n
}

// ItemState is what billing a write needs of one item, taken before the
// write and again after it (the table may change the item in place).
type ItemState struct {
	// Size is the item's size (0 for no item).
	Size    int
	entries []entryState
}

// entryState is an item's entry in one global secondary index.
type entryState struct {
	index string
	in    bool   // the item has every key attribute of the index
	pk    string // the item's value of the index's partition key (KeyText)
	key   string // the entry's key values, encoded to compare
	entry string // the projected entry, encoded to compare
	size  int    // the projected entry's size
}

// globalIndexes are the table's global secondary indexes by name: the
// ones writes are billed for.
func (t *Table) globalIndexes() []string {
	names := make([]string, 0, len(t.Indexes))
	for name, idx := range t.Indexes {
		if idx.typ == indexTypeGlobal {
			names = append(names, name)
		}
	}

	slices.Sort(names)

	return names
}

// State captures item (nil: none) for billing a write.
func (t *Table) State(item map[string]*types.Item) ItemState {
	s := ItemState{Size: ItemSize(item)}

	var whole string // the whole item encoded, shared by ALL projections

	for _, name := range t.globalIndexes() {
		idx := t.Indexes[name]
		// The partition billed is the hash attribute's, even of an item
		// that is not in the index for want of its range attribute.
		e := entryState{index: name, in: item != nil, pk: KeyText(item[idx.keySchema.HashKey])}

		keys := []string{idx.keySchema.HashKey}
		if idx.keySchema.RangeKey != "" {
			keys = append(keys, idx.keySchema.RangeKey)
		}

		for _, k := range keys {
			if _, ok := item[k]; !ok {
				e.in = false
			}
		}

		if !e.in {
			s.entries = append(s.entries, e)
			continue
		}

		var kb strings.Builder
		for _, k := range keys {
			encodeValue(&kb, item[k])
		}

		e.key = kb.String()

		if attrs := idx.entryAttributes(); attrs == nil {
			if whole == "" {
				whole = encodeItem(item, nil)
			}

			e.entry, e.size = whole, s.Size
		} else {
			e.entry, e.size = encodeItem(item, attrs), attributesSize(item, attrs)
		}

		s.entries = append(s.entries, e)
	}

	return s
}

// entryAttributes are the attributes of an item an index entry holds, in
// order, or nil for all of them. A global index without a projection type
// is billed as KEYS_ONLY.
func (i *index) entryAttributes() []string {
	pt := ""
	if i.projection != nil && i.projection.ProjectionType != nil {
		pt = *i.projection.ProjectionType
	}

	if pt == "ALL" {
		return nil
	}

	attrs := []string{i.Table.KeySchema.HashKey, i.Table.KeySchema.RangeKey, i.keySchema.HashKey, i.keySchema.RangeKey}
	if pt == "INCLUDE" {
		for _, a := range i.projection.NonKeyAttributes {
			if a != nil {
				attrs = append(attrs, *a)
			}
		}
	}

	slices.Sort(attrs)
	attrs = slices.Compact(attrs)

	if attrs[0] == "" {
		attrs = attrs[1:]
	}

	return attrs
}

// IndexWrite is what one table write costs one global secondary index,
// billed to the partition Key of the index.
type IndexWrite struct {
	Index, Key string
	Units      float64
}

// IndexWrites is what a write that turned old into new costs the table's
// global secondary indexes: nothing for an index the item is in neither
// before nor after or whose entry is unchanged, a put or a delete when it
// enters or leaves, and both when its index key changes. An entry that
// moves between index partitions is billed to the new one; one that
// leaves, to the old.
func IndexWrites(old, new ItemState) []IndexWrite {
	var out []IndexWrite

	for i, o := range old.entries {
		if i >= len(new.entries) || new.entries[i].index != o.index {
			break // the table's indexes changed: not billed
		}

		n := new.entries[i]

		var u float64

		switch {
		case !o.in && !n.in:
			continue
		case o.in && !n.in:
			u = WriteUnits(o.size)
		case !o.in && n.in:
			u = WriteUnits(n.size)
		case o.key != n.key:
			u = WriteUnits(o.size) + WriteUnits(n.size)
		case o.entry == n.entry:
			continue
		default:
			u = WriteUnits(max(o.size, n.size))
		}

		pk := n.pk
		if pk == "" {
			pk = o.pk
		}

		out = append(out, IndexWrite{Index: o.index, Key: pk, Units: u})
	}

	return out
}

// encodeItem writes the attributes named (nil: all) of item in a form in
// which two items are equal exactly when their encodings are.
func encodeItem(item map[string]*types.Item, names []string) string {
	if names == nil {
		names = make([]string, 0, len(item))
		for k := range item {
			names = append(names, k)
		}

		slices.Sort(names)
	}

	var b strings.Builder

	for _, k := range names {
		v, ok := item[k]
		if !ok {
			continue
		}

		encodeString(&b, k)
		encodeValue(&b, v)
	}

	return b.String()
}

func encodeString(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

func encodeValue(b *strings.Builder, v *types.Item) {
	if v == nil {
		b.WriteByte('-')
		return
	}

	b.WriteByte('{')

	if v.S != nil {
		b.WriteByte('S')
		encodeString(b, *v.S)
	}

	if v.N != nil {
		b.WriteByte('N')
		encodeString(b, *v.N)
	}

	if v.B != nil {
		b.WriteByte('B')
		encodeString(b, string(v.B))
	}

	if v.BOOL != nil {
		b.WriteString("T" + strconv.FormatBool(*v.BOOL))
	}

	if v.NULL != nil {
		b.WriteString("Z" + strconv.FormatBool(*v.NULL))
	}

	encodeStrings := func(tag byte, l []*string) {
		if l == nil {
			return
		}

		b.WriteByte(tag)
		b.WriteString(strconv.Itoa(len(l)))

		for _, s := range l {
			if s == nil {
				b.WriteByte('-')
				continue
			}

			encodeString(b, *s)
		}
	}
	encodeStrings('s', v.SS)
	encodeStrings('n', v.NS)

	if v.BS != nil {
		b.WriteByte('b')
		b.WriteString(strconv.Itoa(len(v.BS)))

		for _, x := range v.BS {
			encodeString(b, string(x))
		}
	}

	if v.L != nil {
		b.WriteByte('L')
		b.WriteString(strconv.Itoa(len(v.L)))

		for _, e := range v.L {
			encodeValue(b, e)
		}
	}

	if v.M != nil {
		b.WriteByte('M')
		b.WriteString(strconv.Itoa(len(v.M)))
		b.WriteString(encodeItem(v.M, nil))
	}

	b.WriteByte('}')
}
