// Package listmerge merges the pages of several sorted collections read as one
// list (a union of address sets, the holders of several roles).
package listmerge

import "slices"

// Sorted is one source's part of a union read (an apigw.Lister's Read over
// several sorted collections): its positions in the read's direction, and
// whether the source has more past them.
type Sorted struct {
	Pos  []string
	More bool
}

// Union orders the distinct positions of the sources' pages, at most n,
// in the read's direction (desc: descending). A source read only in part
// bounds what is known: past its last position another of its members may
// come, so the union ends at the least advanced such position (the next
// read starts after it) and more is set. seen is called, in source order,
// for each position within that bound with its source and its index there:
// the caller keeps what a member carries (several sources may give one).
func Union(pages []Sorted, desc bool, n int, seen func(src, i int)) (order []string, more bool) {
	before := func(a, b string) bool { return a != b && (a < b) != desc }
	var bound string
	bounded := false
	for _, p := range pages {
		if p.More && len(p.Pos) > 0 {
			if last := p.Pos[len(p.Pos)-1]; !bounded || before(last, bound) {
				bound, bounded = last, true
			}
		}
	}
	known := map[string]bool{}
	for src, p := range pages {
		for i, pos := range p.Pos {
			if bounded && before(bound, pos) {
				break
			}
			if !known[pos] {
				known[pos] = true
				order = append(order, pos)
			}
			seen(src, i)
		}
	}
	slices.SortFunc(order, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case before(a, b):
			return -1
		}
		return 1
	})
	more = bounded
	if len(order) > n {
		order, more = order[:n], true
	}
	return order, more
}
