package authz

import (
	"fmt"
	"testing"

	"github.com/gobwas/glob"
)

// Benchmarks of the hot path. Run:
//
//	go test -run '^$' -bench . -benchmem -cpu 1 -count 5 ./shared/authz/
//
// The figures in docs/performance.md come from
//
//	go test -run '^$' -bench 'Decide' -cpu 1 -count 5 -benchmem ./shared/authz/

const benchPerms = 20

// benchRoles builds n roles of 20 permissions each, shaped like real ones:
// the automatic GET of the account, application, test, address-set and
// role permissions with per-role ids, two catch-all patterns (first segment
// wildcarded or glued "**") and one deny, spread over all methods.
func benchRoles(tb testing.TB, n int) []*CompiledRole {
	out := make([]*CompiledRole, n)
	for k := 0; k < n; k++ {
		ps := []Permission{
			perm("GET", "permit", "/v2/accounts/a1"),
			perm("GET", "permit", fmt.Sprintf("/v2/applications/app%d-0**", k)),
			perm("GET", "permit", fmt.Sprintf("/v2/applications/app%d-1/*", k)),
			perm("PATCH", "permit", fmt.Sprintf("/v2/applications/app%d-0", k)),
			perm("PATCH", "permit", fmt.Sprintf("/v2/applications/app%d-1/actions/*", k)),
			perm("POST", "permit", fmt.Sprintf("/v2/applications/app%d-0/actions", k)),
			perm("DELETE", "permit", fmt.Sprintf("/v2/applications/app%d-0/**", k)),
			perm("DELETE", "deny", fmt.Sprintf("/v2/applications/app%d-0/actions/prod**", k)),
			perm("GET", "permit", fmt.Sprintf("/v2/tests/t%d", k), fmt.Sprintf("/v2/tests/t%d-x", k)),
			perm("PUT", "permit", fmt.Sprintf("/v2/tests/t%d", k)),
			perm("PATCH", "permit", fmt.Sprintf("/v2/tests/t%d", k)),
			perm("GET", "permit", fmt.Sprintf("/v2/address-sets/s%d/**", k)),
			perm("PATCH", "permit", fmt.Sprintf("/v2/address-sets/s%d", k)),
			perm("GET", "permit", fmt.Sprintf("/v2/accounts/a1/roles/r%d", k)),
			perm("GET", "permit", fmt.Sprintf("/v2/accounts/a1/invitations/i%d", k)),
			perm("POST", "permit", "/v2/tasks"),
			perm("GET", "permit", fmt.Sprintf("/v2/*/k%d", k)),             // catch-all: wildcard first segment
			perm("GET", "permit", fmt.Sprintf("/v2/applicationsx%d**", k)), // catch-all: glued **
			perm("PUT", "permit", fmt.Sprintf("/v2/applications/app%d-0", k)),
			perm("GET", "permit", fmt.Sprintf("/v2/applications/*/metrics%d", k)),
		}
		if len(ps) != benchPerms {
			tb.Fatalf("%d permissions", len(ps))
		}
		out[k] = mustCompile(tb, Role{ID: fmt.Sprintf("r%d", k), AccountID: "a1", Name: fmt.Sprintf("role %d", k), Permissions: ps})
	}
	return out
}

type benchCase struct {
	name, method, path string
	allowed            bool
}

func benchCases(n int) []benchCase {
	last := n - 1
	return []benchCase{
		// granted by the first role
		{"allowed-first", "GET", "/v2/applications/app0-0/logs", true},
		// granted only by the last role: every role is looked at
		{"allowed-last", "GET", fmt.Sprintf("/v2/applications/app%d-1/logs", last), true},
		// nothing matches: every role is looked at (the common 403)
		{"denied", "GET", "/v2/applications/other/logs", false},
		// the last role would permit, its own deny blocks it (1 allocation: Denied)
		{"denied-by-deny", "DELETE", fmt.Sprintf("/v2/applications/app%d-0/actions/prod1", last), false},
	}
}

func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		roles := benchRoles(b, n)
		for _, c := range benchCases(n) {
			b.Run(fmt.Sprintf("roles=%d/%s", n, c.name), func(b *testing.B) {
				if d := Decide(roles, c.method, c.path); d.Allowed != c.allowed {
					b.Fatalf("%s %s: %s", c.method, c.path, d.Explain())
				}
				b.ReportAllocs()
				for b.Loop() {
					Decide(roles, c.method, c.path)
				}
			})
		}
	}
}

// worstSizes are the role counts of BenchmarkDecideWorst and
// BenchmarkDecideSet, named as reported.
var worstSizes = []struct {
	name string
	n    int
}{{"1role", 1}, {"50x20", 50}, {"1000x20", 1000}}

// BenchmarkDecideWorst is the request that looks at every role: nothing
// matches, so every role must be ruled out. "set" is a RoleSet composed
// once (what a caller that decides more than once should use), "slice" is
// Decide on the plain list, the per-role loop.
func BenchmarkDecideWorst(b *testing.B) {
	for _, sz := range worstSizes {
		roles := benchRoles(b, sz.n)
		set := Compose(roles)
		c := benchCases(sz.n)[2]
		for _, e := range []struct {
			name   string
			decide func(method, path string) Decision
		}{
			{"set", set.Decide},
			{"slice", func(m, p string) Decision { return Decide(roles, m, p) }},
		} {
			b.Run(sz.name+"/"+e.name, func(b *testing.B) {
				if d := e.decide(c.method, c.path); d.Allowed || d.Considered != sz.n {
					b.Fatalf("%s %s: %s", c.method, c.path, d.Explain())
				}
				b.ReportAllocs()
				for b.Loop() {
					e.decide(c.method, c.path)
				}
			})
		}
	}
}

// BenchmarkDecideSet is every case of BenchmarkDecide on a RoleSet: the
// early grant, the grant by the last role, nothing matching, and the last
// role blocked by its own deny.
func BenchmarkDecideSet(b *testing.B) {
	for _, sz := range worstSizes {
		set := Compose(benchRoles(b, sz.n))
		for _, c := range benchCases(sz.n) {
			b.Run(sz.name+"/"+c.name, func(b *testing.B) {
				if d := set.Decide(c.method, c.path); d.Allowed != c.allowed {
					b.Fatalf("%s %s: %s", c.method, c.path, d.Explain())
				}
				b.ReportAllocs()
				for b.Loop() {
					set.Decide(c.method, c.path)
				}
			})
		}
	}
}

// BenchmarkCompose is the cost of building the index, to weigh against the
// decisions it saves.
func BenchmarkCompose(b *testing.B) {
	for _, sz := range worstSizes[1:] {
		roles := benchRoles(b, sz.n)
		b.Run(sz.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compose(roles)
			}
		})
	}
}

// BenchmarkNaiveScan is the plain linear scan over gobwas patterns that the
// index replaces (about 4 ns per permission).
func BenchmarkNaiveScan(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		compiled := benchRoles(b, n)
		type pat struct {
			method, effect string
			g              *glob.Pattern
		}
		var roles [][]pat
		for _, c := range compiled {
			var ps []pat
			for _, p := range c.Role().Permissions {
				for _, s := range p.Spec {
					ps = append(ps, pat{p.Method, p.Effect, glob.MustCompile(s, '/')})
				}
			}
			roles = append(roles, ps)
		}
		decide := func(method, path string) bool {
			for _, ps := range roles {
				permit, deny := false, false
				for _, p := range ps {
					if p.method == method && p.g.Match(path) {
						if p.effect == EffectDeny {
							deny = true
						} else {
							permit = true
						}
					}
				}
				if permit && !deny {
					return true
				}
			}
			return false
		}
		for _, c := range benchCases(n) {
			b.Run(fmt.Sprintf("roles=%d/%s", n, c.name), func(b *testing.B) {
				if decide(c.method, c.path) != c.allowed {
					b.Fatal("naive scan disagrees")
				}
				b.ReportAllocs()
				for b.Loop() {
					decide(c.method, c.path)
				}
			})
		}
	}
}

// BenchmarkEvaluate is the whole per-request path of the authorizer:
// CheckPath, SelfService, ScopeFor, Applicable (allocates the filtered
// slice) and Decide, with Reason built.
func BenchmarkEvaluate(b *testing.B) {
	roles := benchRoles(b, 50)
	for _, c := range benchCases(50)[1:3] {
		in := Input{Method: c.method, Path: c.path, PrincipalID: "u1", KeyAccount: "a1", Target: "a1", TargetAncestors: []string{"r0"}, Held: roles}
		b.Run("roles=50/"+c.name, func(b *testing.B) {
			if d := Evaluate(in); d.Allowed != c.allowed {
				b.Fatal(d.Reason)
			}
			b.ReportAllocs()
			for b.Loop() {
				Evaluate(in)
			}
		})
	}
}

func BenchmarkCheckPath(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = CheckPath("/v2/applications/k3x9q2abcdefgh/actions/a1b2c3d4e5f6g7h8")
	}
}

// The Decide hot path does not allocate when it allows or when nothing
// matches; this keeps that a test failure rather than a benchmark footnote.
func TestDecideDoesNotAllocate(t *testing.T) {
	roles := benchRoles(t, 50)
	for _, c := range benchCases(50)[:3] {
		if n := testing.AllocsPerRun(100, func() { Decide(roles, c.method, c.path) }); n != 0 {
			t.Errorf("%s: %v allocations per decision", c.name, n)
		}
	}
	set := Compose(benchRoles(t, 1000))
	for _, c := range benchCases(1000)[:3] {
		if n := testing.AllocsPerRun(100, func() { set.Decide(c.method, c.path) }); n != 0 {
			t.Errorf("RoleSet, %s: %v allocations per decision", c.name, n)
		}
	}
}
