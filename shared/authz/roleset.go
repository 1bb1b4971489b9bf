package authz

import (
	"slices"
	"strings"
	"sync"
)

// RoleSet is a list of roles composed once for many decisions: Decide on a
// RoleSet returns exactly what Decide returns on the same list (the same
// Allowed, Status, Role, Permission, Denied and Considered), at a cost that
// does not grow with the number of roles that cannot match.
//
// Why: Decide on a slice looks at every role in turn. Each role's own index
// makes that cheap (about 20 ns a role), but a denied request still visits
// all of them: about 20 µs at 1,000 roles. A RoleSet files every pattern of
// every role, per effect and method, in a trie on literal path segments
// with an edge for "*" and, at each node, the patterns that end there or
// end with a glued "X**". A request walks the trie once; only the patterns
// its path can reach are looked at.
//
// Building one costs about as much as a few hundred decisions on the slice,
// so it pays only when it is reused: compose the roles once (or let a
// RoleSets cache do it) and share the result. It is immutable and safe for
// concurrent use. Small sets (up to smallSet roles) are not indexed: the
// per-role loop is already as fast as a trie walk there.
type RoleSet struct {
	roles []*CompiledRole
	// upTo[i] is the number of non-nil roles in roles[:i+1]: Considered of
	// a decision granted by roles[i].
	upTo  []int32
	total int // non-nil roles
	// tries[effect][method]; nil when the set is small or nothing is filed
	// there. Effect 0 is permit, 1 is deny.
	tries [2][numMethods]*node
	small bool
}

// smallSet is the largest role list that RoleSet decides with the per-role
// loop (BenchmarkDecideWorst measures both sides of it).
const smallSet = 8

// ref names one pattern: roles[role].matches[order].
type ref struct{ role, order int32 }

// node is a trie node reached by a sequence of whole path segments. Its
// lists hold refs in (role, order) order, because Compose files roles in
// order and each role's matches in order; decide relies on that.
type node struct {
	lit  map[string]*node // the next segment, literally
	star *node            // "*": any one next segment
	end  []ref            // patterns that end here: the path must end here too
	// glued: patterns whose last segment is "X**": the path's next segment
	// must start with X ("" for "/**": any next segment). lens lists the
	// distinct len(X), ascending, so a lookup probes only those prefixes of
	// the segment.
	glued map[string][]ref
	lens  []int
}

// Compose builds the RoleSet of roles, in that order. nil roles are kept
// (they count for nothing, as in Decide). The slice is copied.
func Compose(roles []*CompiledRole) *RoleSet { return compose(roles, len(roles) > smallSet) }

// compose is Compose with the choice of indexing left to the caller, so
// that tests can index small sets too.
func compose(roles []*CompiledRole, index bool) *RoleSet {
	s := &RoleSet{roles: slices.Clone(roles), upTo: make([]int32, len(roles)), small: !index}
	for i, r := range roles {
		if r != nil {
			s.total++
		}
		s.upTo[i] = int32(s.total)
	}
	if s.small {
		return s
	}
	for i, r := range s.roles {
		if r == nil {
			continue
		}
		for k, m := range r.matches {
			eff := 0
			if m.Effect == EffectDeny {
				eff = 1
			}
			t := &s.tries[eff][methodNum(m.Method)]
			if *t == nil {
				*t = &node{}
			}
			(*t).insert(m.Pattern, ref{role: int32(i), order: int32(k)})
		}
	}
	return s
}

// insert files a normalised pattern.
func (n *node) insert(pat string, r ref) {
	segs := strings.Split(pat[1:], "/")
	for i, seg := range segs {
		if x, ok := strings.CutSuffix(seg, "**"); ok && i == len(segs)-1 {
			if n.glued == nil {
				n.glued = map[string][]ref{}
			}
			if _, ok := n.glued[x]; !ok {
				k, _ := slices.BinarySearch(n.lens, len(x))
				if k == len(n.lens) || n.lens[k] != len(x) {
					n.lens = slices.Insert(n.lens, k, len(x))
				}
			}
			n.glued[x] = append(n.glued[x], r)
			return
		}
		if seg == "*" {
			if n.star == nil {
				n.star = &node{}
			}
			n = n.star
			continue
		}
		c := n.lit[seg]
		if c == nil {
			if n.lit == nil {
				n.lit = map[string]*node{}
			}
			c = &node{}
			n.lit[seg] = c
		}
		n = c
	}
	n.end = append(n.end, r)
}

// walk calls v.list with every list of refs whose patterns match, where
// rest is what the segments leading to n left of a canonical path: "" or
// "/segment...".
func (n *node) walk(rest string, v *visit) {
	if rest == "" {
		v.list(n.end)
		return
	}
	seg, next := rest[1:], ""
	if i := strings.IndexByte(seg, '/'); i >= 0 {
		seg, next = seg[:i], seg[i:]
	}
	for _, l := range n.lens {
		if l > len(seg) {
			break
		}
		if rs, ok := n.glued[seg[:l]]; ok {
			v.list(rs)
		}
	}
	if c := n.lit[seg]; c != nil {
		c.walk(next, v)
	}
	if n.star != nil {
		n.star.walk(next, v)
	}
}

// denyRef is a matching deny; blocked records that its role also has a
// matching permit, so the deny is what refused that role.
type denyRef struct {
	ref
	blocked bool
}

// visit is the state of one decision's walks: first over the deny trie,
// collecting every matching deny, then over the permit trie, keeping the
// earliest matching permit of a role that no deny of its own blocks (the
// least role, then the least order in it). One concrete type rather than
// an interface, and no slice of its own array stored in it, so that it
// stays on the stack: a decision allocates only when more than len(buf)
// denies match.
type visit struct {
	collect bool // the deny walk
	buf     [8]denyRef
	n       int       // denies in buf
	more    []denyRef // all of them, once they outgrow buf
	best    ref       // the permit walk's answer so far
}

// denies returns the matching denies; sorted by (role, order) once the
// deny walk is over.
func (v *visit) denies() []denyRef {
	if v.more != nil {
		return v.more
	}
	return v.buf[:v.n]
}

func (v *visit) list(rs []ref) {
	if v.collect {
		for _, r := range rs {
			switch {
			case v.more != nil:
				v.more = append(v.more, denyRef{ref: r})
			case v.n == len(v.buf):
				v.more = append(append(make([]denyRef, 0, 4*len(v.buf)), v.buf[:]...), denyRef{ref: r})
			default:
				v.buf[v.n] = denyRef{ref: r}
				v.n++
			}
		}
		return
	}
	// Lists are sorted by role, so a list is read only up to its first
	// unblocked permit, or to the first role past the best so far.
	for _, r := range rs {
		if r.role > v.best.role {
			return
		}
		if v.blocked(r.role) {
			continue
		}
		if r.role < v.best.role || r.order < v.best.order {
			v.best = r
		}
		return
	}
}

// blocked reports whether role has a matching deny, and marks its first.
func (v *visit) blocked(role int32) bool {
	ds := v.denies()
	if len(ds) == 0 {
		return false
	}
	i, ok := slices.BinarySearchFunc(ds, role, func(d denyRef, role int32) int { return int(d.role - role) })
	if ok {
		ds[i].blocked = true
	}
	return ok
}

const noRole = 1<<31 - 1

// Len returns the number of roles of the set, nil ones included.
func (s *RoleSet) Len() int { return len(s.roles) }

// Decide is Decide(roles, method, path) for the roles the set was composed
// of.
func (s *RoleSet) Decide(method, path string) Decision {
	if s.small {
		return Decide(s.roles, method, path)
	}
	d := Decision{Status: 403, Method: method, Path: path}
	if !canonical(path) {
		d.Status, d.why = 400, whyBadPath
		return d
	}
	d.Considered = s.total
	mi := methodNum(method)
	if mi < 0 || s.tries[0][mi] == nil {
		return d
	}
	v := visit{collect: true, best: ref{role: noRole, order: noRole}}
	if t := s.tries[1][mi]; t != nil {
		t.walk(path, &v)
		// Lists come in trie order; the binary search needs role order,
		// and the first deny of a role must be its earliest.
		slices.SortFunc(v.denies(), func(a, b denyRef) int {
			if a.role != b.role {
				return int(a.role - b.role)
			}
			return int(a.order - b.order)
		})
	}
	v.collect = false
	s.tries[0][mi].walk(path, &v)
	ds := v.denies()
	for i, x := range ds {
		if x.blocked && x.role < v.best.role && (i == 0 || ds[i-1].role != x.role) {
			d.Denied = append(d.Denied, s.roles[x.role].matches[x.order])
		}
	}
	if v.best.role == noRole {
		return d
	}
	r := s.roles[v.best.role]
	d.Allowed, d.Status, d.why = true, 200, whyGranted
	d.Role, d.RoleName, d.Permission = r.href, r.role.Name, &r.matches[v.best.order]
	d.Considered = int(s.upTo[v.best.role])
	return d
}

// RoleSets is a bounded cache of RoleSets for Evaluate (Input.Sets), owned
// by the caller (one per authorizer container, say, next to its cache of
// compiled roles). It is safe for concurrent use.
//
// Why a cache keyed by role identity: the authorizer filters the held roles
// with Applicable on every request, and composing a RoleSet costs far more
// than one decision on the slice, so a set must be reused across requests.
// Its key is the list of *CompiledRole pointers, in order: a compiled role
// is immutable and built once per role version, so the same pointers mean
// the same roles at the same versions, and a new version of any role
// (a new pointer) misses. Order is part of the key because it decides
// which granting role a Decision reports. The lookup hashes a fingerprint
// computed at Compile and then compares the pointers, one pass each.
//
// Memory: a composed set takes about 7 KB per role of 20 permissions
// (BenchmarkCompose), so the bound is in roles, not in sets.
type RoleSets struct {
	mu       sync.Mutex
	maxRoles int
	roles    int // in the cached sets
	m        map[uint64][]*RoleSet
}

// NewRoleSets returns a cache holding sets of at most maxRoles roles in
// all; when a new set would pass that, the cache is emptied first (sets
// are rebuilt on demand). A list longer than maxRoles is composed and not
// kept.
func NewRoleSets(maxRoles int) *RoleSets {
	return &RoleSets{maxRoles: maxRoles, m: map[uint64][]*RoleSet{}}
}

// For returns the RoleSet of roles, composed once per distinct list.
func (c *RoleSets) For(roles []*CompiledRole) *RoleSet {
	h := uint64(14695981039346656037)
	for _, r := range roles {
		var fp uint64
		if r != nil {
			fp = r.fp
		}
		h = (h ^ fp) * 1099511628211
	}
	c.mu.Lock()
	for _, s := range c.m[h] {
		if slices.Equal(s.roles, roles) {
			c.mu.Unlock()
			return s
		}
	}
	c.mu.Unlock()
	s := Compose(roles)
	if len(roles) > c.maxRoles {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, old := range c.m[h] {
		if slices.Equal(old.roles, roles) {
			return old // composed meanwhile by another request
		}
	}
	if c.roles+len(roles) > c.maxRoles {
		clear(c.m)
		c.roles = 0
	}
	c.m[h] = append(c.m[h], s)
	c.roles += len(roles)
	return s
}

// decide is Decide(roles), through a RoleSet of sets when that pays.
func (c *RoleSets) decide(roles []*CompiledRole, method, path string) Decision {
	if c == nil || len(roles) <= smallSet {
		return Decide(roles, method, path)
	}
	return c.For(roles).Decide(method, path)
}
