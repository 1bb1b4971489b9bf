package core

// This file is not in upstream minidyn v0.8.2 (see PATCHES.md).

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSortedSeqMatchesASortedSlice drives a sortedSeq and a sorted slice
// with the same random inserts and deletes, past several chunk splits
// and merges, and requires the same elements at the same positions, the
// same Search answers and independent clones.
func TestSortedSeqMatchesASortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := newSortedSeq(strings.Compare)
	var ref []string

	check := func(step int) {
		t.Helper()
		if s.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(ref))
		}
		if !slices.Equal(s.All(), ref) {
			t.Fatalf("step %d: elements differ from the sorted slice", step)
		}
		for _, j := range []int{0, len(ref) / 3, len(ref) / 2, len(ref) - 1} {
			if j >= 0 && j < len(ref) && s.At(j) != ref[j] {
				t.Fatalf("step %d: At(%d) = %q, want %q", step, j, s.At(j), ref[j])
			}
		}
		for range 20 {
			k := fmt.Sprintf("k%05d", rng.IntN(12000))
			pos, found := s.Search(k)
			wpos, wfound := slices.BinarySearch(ref, k)
			if pos != wpos || found != wfound {
				t.Fatalf("step %d: Search(%q) = %d %v, want %d %v", step, k, pos, found, wpos, wfound)
			}
		}
	}

	for step := range 20000 {
		k := fmt.Sprintf("k%05d", rng.IntN(10000))
		pos, found := slices.BinarySearch(ref, k)
		// Mostly inserts (bulk loads, in order and not), some deletes.
		switch {
		case step%7 == 6 && found:
			if !s.Delete(k) {
				t.Fatalf("step %d: Delete(%q) found nothing", step, k)
			}
			ref = slices.Delete(ref, pos, pos+1)
		case !found:
			s.Insert(k)
			ref = slices.Insert(ref, pos, k)
		}
		if step%997 == 0 {
			check(step)
		}
	}
	check(-1)
	if len(s.chunks) < 4 {
		t.Fatalf("%d chunks for %d elements: the splits were not exercised", len(s.chunks), s.Len())
	}
	for _, c := range s.chunks {
		if len(c) == 0 || len(c) >= 2*seqChunk {
			t.Fatalf("a chunk of %d elements", len(c))
		}
	}

	c := s.Clone()
	for _, k := range ref[:len(ref)/2] {
		s.Delete(k)
	}
	if !slices.Equal(c.All(), ref) {
		t.Fatal("deleting from the original changed its clone")
	}
	if s.Delete("absent") {
		t.Fatal("Delete reported an element that is not there")
	}
	s.Clear()
	if s.Len() != 0 || len(s.All()) != 0 {
		t.Fatal("Clear left elements")
	}
	if pos, found := s.Search("k"); pos != 0 || found {
		t.Fatalf("Search in an empty sequence: %d %v", pos, found)
	}
}
