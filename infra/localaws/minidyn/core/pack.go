package core

// This file is not in upstream minidyn v0.8.2 (see PATCHES.md): it stores
// each item in a few blocks of memory instead of a pointer graph of small
// objects, so that the garbage collector's work for the stored table stays
// small as the table grows.

import (
	"unsafe"

	"github.com/truora/minidyn/types"
)

// packItem returns a copy of item whose values live in a handful of
// allocations: one array of every types.Item node (nested list and map
// members included), one of the string headers their S, N, SS and NS point
// to, one of the pointers their lists and sets hold, one of booleans and
// one byte buffer for every string, binary value and attribute name. A
// stored item otherwise costs the collector several objects per attribute
// (the map entry's key, the types.Item, the *string and its bytes), each
// marked on every cycle for as long as the item is stored: with thousands
// of items the collector's share of each request grew with the table.
//
// The copy reads as any item does. Its strings point into the byte buffer,
// which nothing writes after packing; binary values are sliced with their
// capacity capped, so an append copies instead of writing into a
// neighbour. Writers replace values rather than change them in place, and
// an item is packed again each time it is stored (setItem).
func packItem(item map[string]*types.Item) map[string]*types.Item {
	if item == nil {
		return nil
	}

	var s packSizes
	s.addMap(item)

	p := packer{
		nodes: make([]types.Item, 0, s.nodes),
		strs:  make([]string, 0, s.strs),
		ptrs:  make([]*types.Item, 0, s.ptrs),
		sptrs: make([]*string, 0, s.sptrs),
		bools: make([]bool, 0, s.bools),
		bins:  make([][]byte, 0, s.bins),
		buf:   make([]byte, 0, s.bytes),
	}

	return p.packMap(item)
}

// packSizes counts what packItem allocates.
type packSizes struct {
	nodes, strs, ptrs, sptrs, bools, bins, bytes int
}

func (s *packSizes) addMap(m map[string]*types.Item) {
	for k, v := range m {
		s.bytes += len(k)
		s.add(v)
	}
}

func (s *packSizes) add(it *types.Item) {
	if it == nil {
		return
	}

	s.nodes++
	s.bytes += len(it.B)

	for _, p := range []*string{it.S, it.N} {
		if p != nil {
			s.strs++
			s.bytes += len(*p)
		}
	}

	for _, set := range [][]*string{it.SS, it.NS} {
		s.sptrs += len(set)

		for _, p := range set {
			if p != nil {
				s.strs++
				s.bytes += len(*p)
			}
		}
	}

	if it.BOOL != nil {
		s.bools++
	}

	if it.NULL != nil {
		s.bools++
	}

	s.bins += len(it.BS)
	for _, b := range it.BS {
		s.bytes += len(b)
	}

	s.ptrs += len(it.L)
	for _, e := range it.L {
		s.add(e)
	}

	s.addMap(it.M)
}

// packer carves packItem's copy out of its arrays; each has the capacity
// packSizes counted, so no append reallocates and every pointer into them
// stays valid.
type packer struct {
	nodes []types.Item
	strs  []string
	ptrs  []*types.Item
	sptrs []*string
	bools []bool
	bins  [][]byte
	buf   []byte
}

func (p *packer) packMap(m map[string]*types.Item) map[string]*types.Item {
	out := make(map[string]*types.Item, len(m))

	for k, v := range m {
		out[p.str(k)] = p.pack(v)
	}

	return out
}

func (p *packer) pack(it *types.Item) *types.Item {
	if it == nil {
		return nil
	}

	p.nodes = append(p.nodes, types.Item{})
	out := &p.nodes[len(p.nodes)-1]

	if it.B != nil {
		out.B = p.bytes(it.B)
	}

	out.BOOL = p.bool(it.BOOL)
	out.NULL = p.bool(it.NULL)
	out.S = p.strPtr(it.S)
	out.N = p.strPtr(it.N)
	out.SS = p.strSet(it.SS)
	out.NS = p.strSet(it.NS)

	if it.BS != nil {
		start := len(p.bins)
		for _, b := range it.BS {
			if b == nil {
				p.bins = append(p.bins, nil)
			} else {
				p.bins = append(p.bins, p.bytes(b))
			}
		}

		out.BS = p.bins[start:len(p.bins):len(p.bins)]
	}

	// A nil L or M is no value, an empty one is an empty list or map
	// (deepCopyTypesItem): the copy keeps the difference.
	if it.L != nil {
		start := len(p.ptrs)
		p.ptrs = p.ptrs[:start+len(it.L)]
		out.L = p.ptrs[start : start+len(it.L) : start+len(it.L)]

		for i, e := range it.L {
			out.L[i] = p.pack(e)
		}
	}

	if it.M != nil {
		out.M = p.packMap(it.M)
	}

	return out
}

// bytes copies b into the buffer; the slice's capacity ends with it.
func (p *packer) bytes(b []byte) []byte {
	start := len(p.buf)
	p.buf = append(p.buf, b...)

	return p.buf[start:len(p.buf):len(p.buf)]
}

// str copies s into the buffer and returns a string that reads it there.
func (p *packer) str(s string) string {
	if s == "" {
		return ""
	}

	start := len(p.buf)
	p.buf = append(p.buf, s...)

	return unsafe.String(&p.buf[start], len(s))
}

func (p *packer) strPtr(s *string) *string {
	if s == nil {
		return nil
	}

	p.strs = append(p.strs, p.str(*s))

	return &p.strs[len(p.strs)-1]
}

func (p *packer) strSet(set []*string) []*string {
	if set == nil {
		return nil
	}

	start := len(p.sptrs)
	for _, s := range set {
		p.sptrs = append(p.sptrs, p.strPtr(s))
	}

	return p.sptrs[start:len(p.sptrs):len(p.sptrs)]
}

func (p *packer) bool(b *bool) *bool {
	if b == nil {
		return nil
	}

	p.bools = append(p.bools, *b)

	return &p.bools[len(p.bools)-1]
}
