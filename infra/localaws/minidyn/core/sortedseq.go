package core

// This file is not in upstream minidyn v0.8.2 (see PATCHES.md).

import (
	"slices"
	"sort"
)

// seqChunk is the size a chunk of a sortedSeq is split at, in elements.
// Small enough that shifting one is cheap (also under the race detector,
// which checks every byte a copy moves), large enough that the list of
// chunks stays short for tables of tens of thousands of items.
const seqChunk = 512

// sortedSeq is a sorted sequence kept in chunks, so that an insert or a
// delete moves the elements of one chunk instead of the whole tail of
// the sequence. A sorted slice made bulk loads quadratic: 10,000 items
// written into a table of 30,000 moved gigabytes.
//
// Positions are over the whole sequence, as in a slice: At(j), and Search
// returns where an element is or would be.
type sortedSeq[E any] struct {
	cmp    func(a, b E) int
	chunks [][]E // each non-empty and sorted; every element of one sorts before the next chunk's
	starts []int // starts[c] is the position of chunks[c][0]; rebuilt when stale
	n      int
	stale  bool
}

func newSortedSeq[E any](cmp func(a, b E) int, elems ...E) sortedSeq[E] {
	s := sortedSeq[E]{cmp: cmp}
	for _, e := range elems {
		s.Insert(e)
	}

	return s
}

// Len is the number of elements.
func (s *sortedSeq[E]) Len() int { return s.n }

func (s *sortedSeq[E]) index() {
	if !s.stale && len(s.starts) == len(s.chunks) {
		return
	}

	s.starts = s.starts[:0]
	pos := 0

	for _, c := range s.chunks {
		s.starts = append(s.starts, pos)
		pos += len(c)
	}

	s.stale = false
}

// At is the element at position j (0 <= j < Len()).
func (s *sortedSeq[E]) At(j int) E {
	s.index()
	c := sort.Search(len(s.starts), func(c int) bool { return s.starts[c] > j }) - 1

	return s.chunks[c][j-s.starts[c]]
}

// chunkFor is the first chunk whose last element sorts at or after e
// (len(chunks) if none does).
func (s *sortedSeq[E]) chunkFor(e E) int {
	return sort.Search(len(s.chunks), func(c int) bool {
		chunk := s.chunks[c]

		return s.cmp(chunk[len(chunk)-1], e) >= 0
	})
}

// Search returns the position where e is, or would be inserted, and
// whether it is there (slices.BinarySearchFunc over the whole sequence).
func (s *sortedSeq[E]) Search(e E) (int, bool) {
	c := s.chunkFor(e)
	if c == len(s.chunks) {
		return s.n, false
	}

	s.index()
	pos, found := slices.BinarySearchFunc(s.chunks[c], e, s.cmp)

	return s.starts[c] + pos, found
}

// Insert adds e at its sorted position (after equal elements' position as
// slices.BinarySearchFunc places it).
func (s *sortedSeq[E]) Insert(e E) {
	s.n++
	s.stale = true

	if len(s.chunks) == 0 {
		s.chunks = [][]E{{e}}

		return
	}

	c := min(s.chunkFor(e), len(s.chunks)-1)
	pos, _ := slices.BinarySearchFunc(s.chunks[c], e, s.cmp)
	s.chunks[c] = slices.Insert(s.chunks[c], pos, e)

	if len(s.chunks[c]) < 2*seqChunk {
		return
	}

	// Split in two halves, each with its own array so that a later
	// insert into the first does not write over the second.
	full := s.chunks[c]
	second := slices.Clone(full[seqChunk:])
	s.chunks[c] = slices.Clip(full[:seqChunk])
	s.chunks = slices.Insert(s.chunks, c+1, second)
}

// Delete removes e if it is there and reports whether it was.
func (s *sortedSeq[E]) Delete(e E) bool {
	c := s.chunkFor(e)
	if c == len(s.chunks) {
		return false
	}

	pos, found := slices.BinarySearchFunc(s.chunks[c], e, s.cmp)
	if !found {
		return false
	}

	s.n--
	s.stale = true

	if len(s.chunks[c]) == 1 {
		s.chunks = slices.Delete(s.chunks, c, c+1)

		return true
	}

	s.chunks[c] = slices.Delete(s.chunks[c], pos, pos+1)

	return true
}

// All is every element in order, in a new slice.
func (s *sortedSeq[E]) All() []E {
	out := make([]E, 0, s.n)
	for _, c := range s.chunks {
		out = append(out, c...)
	}

	return out
}

// Clone is a copy that shares no array with s.
func (s *sortedSeq[E]) Clone() sortedSeq[E] {
	out := sortedSeq[E]{cmp: s.cmp, n: s.n, stale: true, chunks: make([][]E, len(s.chunks))}
	for i, c := range s.chunks {
		out.chunks[i] = slices.Clone(c)
	}

	return out
}

// Clear removes every element.
func (s *sortedSeq[E]) Clear() {
	s.chunks, s.starts, s.n, s.stale = nil, nil, 0, false
}
