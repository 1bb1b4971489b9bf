package authz

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/gobwas/glob"
)

// CompiledRole is a validated role with its permissions compiled and
// indexed for Decide. It is immutable after Compile and safe for concurrent
// use; build it once per role version and share it.
type CompiledRole struct {
	// permit and deny index entries by method (see methodNum). They come
	// first: they are what Decide reads of every role.
	permit, deny [numMethods]methodIndex
	entries      []entry // all of them, contiguous, addressed by spans

	role    Role // deep copy, permissions normalised
	href    string
	matches []Match // one per (permission, spec entry), in role order
	fp      uint64  // FNV-1a of href and matches: RoleSets' hash (equality is by pointer)
}

// methodIndex locates the entries of one role, one method and one effect.
//
// Why an index: a linear scan costs about 4 ns per pattern (BenchmarkNaiveScan),
// ~4 µs at 1,000 permissions. Most patterns start with a literal segment
// after /v2 ("/v2/applications/*"); such a pattern can only match paths whose
// first segment is that literal, so it is filed in that segment's bucket.
// Patterns whose first segment has a wildcard ("/v2/**", "/v2/applications**")
// go to the catch-all span, which is always scanned. Spans keep role order,
// so the first match Decide reports is the one a plain scan would find.
//
// Why this layout rather than a map per role: a role has a handful of
// buckets, and comparing them with the first 8 bytes of the segment inline
// costs less than hashing the segment once per role. A role's entries are
// one contiguous slice. A bucket's span also holds the catch-all entries,
// merged in role order, so one span is scanned and its first match is the
// earliest - unless the catch-all list is long (maxMerged), where copying it
// into every bucket would cost memory quadratic in the role's size; then it
// is scanned after the bucket.
type methodIndex struct {
	buckets []bucket
	any     span
}

type span struct{ lo, hi int32 } // entries[lo:hi]

type bucket struct {
	key    uint64 // segKey(seg)
	size   int32  // len(seg)
	merged bool   // span includes the catch-all entries
	span
	seg string
}

// maxMerged is the longest catch-all list copied into every bucket.
const maxMerged = 16

// segKey packs the first 8 bytes of a segment, to compare segments without
// dereferencing their bytes in the common case.
func segKey(seg string) uint64 {
	var k uint64
	for i := 0; i < len(seg) && i < 8; i++ {
		k |= uint64(seg[i]) << (8 * i)
	}
	return k
}

type matchKind uint8

const (
	kindLiteral matchKind = iota // no wildcard: path == text
	kindPrefix                   // only a trailing "**": path has prefix text
	kindGlob                     // has a "*" segment: gobwas
)

type entry struct {
	// Necessary conditions of a match, checked inline by scan so that most
	// entries are rejected without a call and without touching the
	// pattern's bytes. All kinds fill them; see prefilter.
	tail    uint64 // tail8(text): the path's 8 bytes ending at len(text) must equal it (when len(text) >= 8)
	endTail uint64 // the path's last 8 bytes, masked by endMask, must equal it
	endMask uint64 // 0 when the pattern has no fixed end (it ends with "**")
	slashes int32  // '/' in the pattern without a trailing "**": the path has exactly that many...
	rest    bool   // ...or, when the pattern ends with "**", at least that many

	kind  matchKind
	order int32   // index in CompiledRole.matches
	text  string  // the pattern, or its literal part before the first '*'
	end   string  // kindGlob without "**": literal text after the last '*'
	g     matcher // kindGlob
}

// matcher is what entries need of a compiled gobwas pattern. An interface
// rather than *glob.Pattern so that the package also builds against
// gobwas/glob v0.2.x, whose Compile returns glob.Glob.
type matcher interface{ Match(string) bool }

// newEntry builds the entry of a normalised pattern.
func newEntry(pat string, order int) (entry, error) {
	e := entry{order: int32(order)}
	head, rest := strings.CutSuffix(pat, "**")
	e.rest = rest
	// Every '/' of a pattern is literal, "*" never matches one, only a
	// trailing "**" may add some.
	e.slashes = int32(strings.Count(head, "/"))
	star := strings.IndexByte(pat, '*')
	switch {
	case star < 0:
		e.kind, e.text, e.end = kindLiteral, pat, pat
	case star == len(head): // NormalizePattern allows "**" only at the end
		e.kind, e.text = kindPrefix, head
	default:
		g, err := glob.Compile(pat, '/')
		if err != nil {
			return e, err
		}
		e.kind, e.text, e.g = kindGlob, pat[:star], g
		if !rest {
			e.end = pat[strings.LastIndexByte(pat, '*')+1:]
		}
	}
	e.tail = tail8(e.text)
	if n := min(len(e.end), 8); n > 0 {
		e.endMask = ^uint64(0) << (8 * (8 - n))
		e.endTail = tail8(e.end) & e.endMask
	}
	return e, nil
}

// tail8 packs the last 8 bytes of s little-endian (the last byte in the top
// bits); a shorter s is padded with zero bytes at the bottom.
func tail8(s string) uint64 {
	var k uint64
	for i := 0; i < 8; i++ {
		if j := len(s) - 8 + i; j >= 0 {
			k |= uint64(s[j]) << (8 * i)
		}
	}
	return k
}

// match reports whether the entry matches a canonical path, exactly: the
// literal and prefix kinds are shortcuts of what gobwas answers for those
// patterns, the glob kind asks gobwas after two cheap literal checks.
// TestIndexedEqualsNaive compares all of it with plain gobwas.
func (e *entry) match(path string) bool {
	switch e.kind {
	case kindLiteral:
		return path == e.text
	case kindPrefix:
		return strings.HasPrefix(path, e.text)
	}
	return strings.HasPrefix(path, e.text) && strings.HasSuffix(path, e.end) && e.g.Match(path)
}

// request is what Decide computes once per request for the index.
type request struct {
	path    string
	seg     string // first segment after /v2/, "" when none
	key     uint64 // segKey(seg)
	end     uint64 // tail8(path)
	slashes int32
}

// first returns the order of the earliest (in role order) entry of ix
// matching the request, or -1. A merged bucket's span already holds the
// catch-all entries in role order, so its first match is the earliest.
func (ix *methodIndex) first(entries []entry, q *request) int32 {
	if q.seg != "" {
		for i := range ix.buckets {
			if b := &ix.buckets[i]; b.key == q.key && int(b.size) == len(q.seg) && b.seg == q.seg {
				best := scan(entries[b.lo:b.hi], q, -1)
				if !b.merged {
					best = scan(entries[ix.any.lo:ix.any.hi], q, best)
				}
				return best
			}
		}
	}
	return scan(entries[ix.any.lo:ix.any.hi], q, -1)
}

// scan returns the order of the first entry of es (in role order) that
// matches and comes before before (-1: no bound), else before.
func scan(es []entry, q *request, before int32) int32 {
	for i := range es {
		e := &es[i]
		if before >= 0 && e.order > before {
			break
		}
		// The prefilter: necessary conditions only, exactness is match's.
		n := len(e.text)
		if len(q.path) < n || q.end&e.endMask != e.endTail ||
			q.slashes != e.slashes && (!e.rest || q.slashes < e.slashes) {
			continue
		}
		if n >= 8 {
			b := q.path[n-8 : n] // tail8, unrolled: this is the hot loop
			if uint64(b[0])|uint64(b[1])<<8|uint64(b[2])<<16|uint64(b[3])<<24|
				uint64(b[4])<<32|uint64(b[5])<<40|uint64(b[6])<<48|uint64(b[7])<<56 != e.tail {
				continue
			}
		}
		if e.match(q.path) {
			return e.order
		}
	}
	return before
}

// patternFirstSegment returns the first segment after "/v2/" of a normalised
// pattern when it is all literal, else "" (the pattern goes to the catch-all
// span). A literal first segment S means the pattern starts with the literal
// text "/v2/S" followed by "/" or its end, so every path it matches has S as
// its first segment.
func patternFirstSegment(p string) string {
	seg := firstSegment(p)
	if strings.IndexByte(seg, '*') >= 0 {
		return ""
	}
	return seg
}

// Compile validates a role and builds its index. The role must have an ID
// and an AccountID that are single path segments (they form its href).
func Compile(r Role) (*CompiledRole, error) {
	href := r.Href()
	for _, f := range []struct{ name, v string }{{"ID", r.ID}, {"AccountID", r.AccountID}} {
		if f.v == "" || strings.IndexByte(f.v, '/') >= 0 || !canonical("/"+f.v) {
			return nil, fmt.Errorf("authz: compile role %s: %s %s is not a path segment", quoteShort(href), f.name, quoteShort(f.v))
		}
	}
	perms, err := ValidatePermissions(r.Permissions)
	if err != nil {
		return nil, fmt.Errorf("authz: compile role %s: %w", quoteShort(href), err)
	}
	cr := &CompiledRole{href: href}
	cr.role = r
	cr.role.Permissions = perms

	// Entries are collected per (effect, method, segment) in role order,
	// then laid out contiguously, bucket by bucket.
	type group struct {
		seg     string
		entries []entry
	}
	var groups [2][numMethods][]group // [0] permit, [1] deny; group 0 = catch-all
	for i, p := range perms {
		for j, pat := range p.Spec {
			e, err := newEntry(pat, len(cr.matches))
			if err != nil {
				return nil, fmt.Errorf("authz: compile role %s: permissions[%d].spec[%d] %s: %w", quoteShort(href), i, j, quoteShort(pat), err)
			}
			cr.matches = append(cr.matches, Match{
				Role: href, RoleName: r.Name, Permission: i, Spec: j,
				Method: p.Method, Pattern: pat, Effect: p.Effect,
			})

			eff := 0
			if p.Effect == EffectDeny {
				eff = 1
			}
			gs := &groups[eff][methodNum(p.Method)]
			if len(*gs) == 0 {
				*gs = append(*gs, group{}) // the catch-all
			}
			k := 0 // the catch-all, unless the first segment is literal
			if seg := patternFirstSegment(pat); seg != "" {
				for k = 1; k < len(*gs) && (*gs)[k].seg != seg; k++ {
				}
				if k == len(*gs) {
					*gs = append(*gs, group{seg: seg})
				}
			}
			(*gs)[k].entries = append((*gs)[k].entries, e)
		}
	}
	cr.fp = fingerprint(href, cr.matches)
	// Layout: per effect and method, the catch-all span, then one span per
	// bucket holding its entries and the catch-all ones merged in role order.
	for eff, ixs := range []*[numMethods]methodIndex{&cr.permit, &cr.deny} {
		for m := range ixs {
			gs := groups[eff][m]
			if len(gs) == 0 {
				continue
			}
			catchAll := gs[0].entries
			ixs[m].any = cr.appendSpan(catchAll, nil)
			merge := len(catchAll) <= maxMerged
			for _, g := range gs[1:] {
				b := bucket{key: segKey(g.seg), size: int32(len(g.seg)), seg: g.seg, merged: merge}
				if merge {
					b.span = cr.appendSpan(g.entries, catchAll)
				} else {
					b.span = cr.appendSpan(g.entries, nil)
				}
				ixs[m].buckets = append(ixs[m].buckets, b)
			}
		}
	}
	return cr, nil
}

// fingerprint hashes what a decision reads of a role, so that different
// roles rarely share a RoleSets bucket.
func fingerprint(href string, ms []Match) uint64 {
	h := fnv.New64a()
	h.Write([]byte(href))
	for _, m := range ms {
		h.Write([]byte{0, byte(methodNum(m.Method)), m.Effect[0]})
		h.Write([]byte(m.Pattern))
	}
	return h.Sum64()
}

// appendSpan appends a and b, both in role order, merged in role order,
// to c.entries and returns where they are.
func (c *CompiledRole) appendSpan(a, b []entry) span {
	sp := span{lo: int32(len(c.entries))}
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || len(a) > 0 && a[0].order < b[0].order {
			c.entries, a = append(c.entries, a[0]), a[1:]
		} else {
			c.entries, b = append(c.entries, b[0]), b[1:]
		}
	}
	sp.hi = int32(len(c.entries))
	return sp
}

// Href returns /v2/accounts/{account}/roles/{id}. The accessors return
// zero values on a nil role.
func (c *CompiledRole) Href() string {
	if c == nil {
		return ""
	}
	return c.href
}

// ID returns the role id.
func (c *CompiledRole) ID() string {
	if c == nil {
		return ""
	}
	return c.role.ID
}

// AccountID returns the id of the account the role is defined in.
func (c *CompiledRole) AccountID() string {
	if c == nil {
		return ""
	}
	return c.role.AccountID
}

// Name returns the role name.
func (c *CompiledRole) Name() string {
	if c == nil {
		return ""
	}
	return c.role.Name
}

// Inheritable reports whether the role applies only in sub-accounts.
func (c *CompiledRole) Inheritable() bool {
	if c == nil {
		return false
	}
	return c.role.Inheritable
}

// EntitlementAdministrator reports whether the role is one of the platform
// operator's entitlement administrator roles (see ClassAdmin).
func (c *CompiledRole) EntitlementAdministrator() bool {
	if c == nil {
		return false
	}
	return c.role.EntitlementAdministrator
}

// Role returns a deep copy of the role with its normalised permissions.
func (c *CompiledRole) Role() Role {
	if c == nil {
		return Role{}
	}
	r := c.role
	r.Permissions = make([]Permission, len(c.role.Permissions))
	for i, p := range c.role.Permissions {
		p.Spec = append([]string(nil), p.Spec...)
		r.Permissions[i] = p
	}
	return r
}
