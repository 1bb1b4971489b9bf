package authz

import (
	"fmt"
	"math/rand"
	"reflect"
	"strconv"
	"testing"

	"github.com/gobwas/glob"
)

// Property tests: seeded and bounded, so failures reproduce.

const propRequests = 40 // random requests per role set

// propSets is the number of random role sets per property; -short runs a
// tenth of them, and so does a race-enabled binary: the properties are of
// pure functions, so make test runs their full count without the race
// detector (test-unraced) and a tenth with it, where only the concurrency
// of shared compiled roles is news (TestConcurrentUse keeps its count).
func propSets() int {
	if testing.Short() || raceEnabled {
		return 150
	}
	return 1500
}

func randRoles(t testing.TB, rng *rand.Rand, denyRate float64) []Role {
	return randRolesN(t, rng, denyRate, 8, 13)
}

func randRolesN(t testing.TB, rng *rand.Rand, denyRate float64, maxRoles, maxPerms int) []Role {
	return randRolesCount(t, rng, denyRate, 1+rng.Intn(maxRoles), maxPerms)
}

func randRolesCount(t testing.TB, rng *rand.Rand, denyRate float64, count, maxPerms int) []Role {
	roles := make([]Role, count)
	for i := range roles {
		r := Role{ID: "r" + strconv.Itoa(i), AccountID: "a1", Name: "role" + strconv.Itoa(i)}
		for n := rng.Intn(maxPerms); n > 0; n-- {
			p := Permission{Method: pick(rng, methods), Effect: EffectPermit}
			if rng.Float64() < denyRate {
				p.Effect = EffectDeny
			}
			for k := 1 + rng.Intn(3); k > 0; k-- {
				p.Spec = append(p.Spec, randPattern(rng))
			}
			r.Permissions = append(r.Permissions, p)
		}
		roles[i] = r
	}
	return roles
}

func compileAll(t testing.TB, roles []Role) []*CompiledRole {
	out := make([]*CompiledRole, len(roles))
	for i, r := range roles {
		out[i] = mustCompile(t, r)
	}
	return out
}

func randRequest(rng *rand.Rand) (method, path string) {
	path = randPath(rng)
	switch rng.Intn(30) {
	case 0:
		path += "/"
	case 1:
		path = "/v2//" + path[1:]
	case 2:
		path += "/.."
	}
	m := pick(rng, methods)
	if rng.Intn(40) == 0 {
		m = "HEAD"
	}
	return m, path
}

// naive is the reference: a plain linear scan, in role order, of every
// pattern of every permission, each compiled with gobwas, no index, no
// shortcuts. It is docs/api.md#decision read literally.
type naive struct{ globs map[string]*glob.Pattern }

func (n *naive) match(pattern, path string) bool {
	g, ok := n.globs[pattern]
	if !ok {
		g = glob.MustCompile(pattern, '/')
		n.globs[pattern] = g
	}
	return g.Match(path)
}

func (n *naive) first(r Role, effect, method, path string) *Match {
	for i, p := range r.Permissions {
		if p.Effect != effect || p.Method != method {
			continue
		}
		for j, s := range p.Spec {
			if n.match(s, path) {
				return &Match{Role: r.Href(), RoleName: r.Name, Permission: i, Spec: j, Method: method, Pattern: s, Effect: effect}
			}
		}
	}
	return nil
}

func (n *naive) decide(roles []Role, method, path string) Decision {
	d := Decision{Status: 403, Method: method, Path: path}
	if CheckPath(path) != nil {
		d.Status, d.why = 400, whyBadPath
		return d
	}
	for _, r := range roles {
		d.Considered++
		p := n.first(r, EffectPermit, method, path)
		if p == nil {
			continue
		}
		if dn := n.first(r, EffectDeny, method, path); dn != nil {
			d.Denied = append(d.Denied, *dn)
			continue
		}
		d.Allowed, d.Status, d.why, d.Role, d.RoleName, d.Permission = true, 200, whyGranted, r.Href(), r.Name, p
		return d
	}
	return d
}

func normalised(cs []*CompiledRole) []Role {
	out := make([]Role, len(cs))
	for i, c := range cs {
		out[i] = c.Role()
	}
	return out
}

func describe(roles []Role) string {
	s := ""
	for _, r := range roles {
		s += fmt.Sprintf("\n  %s %+v", r.Name, r.Permissions)
	}
	return s
}

// The index (segment buckets, catch-all list, literal and prefix shortcuts)
// decides exactly like the naive scan, down to the reported permissions.
func TestIndexedEqualsNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	ref := &naive{globs: map[string]*glob.Pattern{}}
	allowed, blocked := 0, 0
	for i := 0; i < propSets(); i++ {
		raw := randRoles(t, rng, 0.3)
		if i%10 == 0 {
			// Big roles: catch-all lists longer than maxMerged.
			raw = randRolesN(t, rng, 0.3, 3, 200)
		}
		compiled := compileAll(t, raw)
		roles := normalised(compiled)
		for j := 0; j < propRequests; j++ {
			m, p := randRequest(rng)
			got, want := Decide(compiled, m, p), ref.decide(roles, m, p)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %s:\n got %+v (%s)\nwant %+v (%s)%s", m, p, got, got.Explain(), want, want.Explain(), describe(roles))
			}
			if got.Allowed {
				allowed++
			}
			if len(got.Denied) > 0 {
				blocked++
			}
		}
	}
	// Guard against a generator that never exercises the interesting cases.
	if n := propSets() * propRequests; allowed < n/20 || blocked < n/200 {
		t.Fatalf("weak generator: %d allowed, %d blocked of %d", allowed, blocked, n)
	}
}

// Permit-only role sets never deny what one of their permits matches, and
// never allow what none matches.
func TestPermitOnlyNeverDenies(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	ref := &naive{globs: map[string]*glob.Pattern{}}
	for i := 0; i < propSets(); i++ {
		compiled := compileAll(t, randRoles(t, rng, 0))
		roles := normalised(compiled)
		for j := 0; j < propRequests; j++ {
			m, p := randRequest(rng)
			if CheckPath(p) != nil {
				continue
			}
			matched := false
			for _, r := range roles {
				matched = matched || ref.first(r, EffectPermit, m, p) != nil
			}
			if d := Decide(compiled, m, p); d.Allowed != matched || len(d.Denied) != 0 {
				t.Fatalf("%s %s: allowed %v, a permit matches: %v%s", m, p, d.Allowed, matched, describe(roles))
			}
		}
	}
}

// Adding a deny to one role never removes a grant made by another role
// (docs/api.md#decision: a deny applies only inside its role).
func TestDenyIsLocalToItsRole(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	checked := 0
	for i := 0; i < propSets(); i++ {
		roles := randRoles(t, rng, 0.2)
		if len(roles) < 2 {
			continue
		}
		compiled := compileAll(t, roles)
		for j := 0; j < propRequests; j++ {
			m, p := randRequest(rng)
			d := Decide(compiled, m, p)
			if !d.Allowed {
				continue
			}
			granter := d.Role
			k := rng.Intn(len(roles))
			if roles[k].Href() == granter {
				k = (k + 1) % len(roles)
			}
			// A deny that certainly matches this request, or a random one.
			spec := []string{p, "/v2/**", "/v2**", randPattern(rng)}[rng.Intn(4)]
			// Only role k changes: the others keep their compiled form.
			changed := roles[k]
			changed.Permissions = append(append([]Permission(nil), roles[k].Permissions...), Permission{Method: m, Spec: []string{spec}, Effect: EffectDeny})
			more := append([]*CompiledRole(nil), compiled...)
			more[k] = mustCompile(t, changed)
			if d2 := Decide(more, m, p); !d2.Allowed {
				t.Fatalf("%s %s: granted by %s, denied after adding deny %s to %s: %s", m, p, granter, spec, changed.Href(), d2.Explain())
			}
			checked++
		}
	}
	if checked < propSets()/2 {
		t.Fatalf("only %d grants checked", checked)
	}
}

// Shuffling roles, permissions and spec entries never changes Allowed.
func TestShuffleKeepsAllowed(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for i := 0; i < propSets()/3; i++ {
		roles := randRoles(t, rng, 0.3)
		compiled := compileAll(t, roles)

		shuffled := make([]Role, len(roles))
		for k, r := range roles {
			ps := make([]Permission, len(r.Permissions))
			for x, p := range r.Permissions {
				p.Spec = append([]string(nil), p.Spec...)
				rng.Shuffle(len(p.Spec), func(a, b int) { p.Spec[a], p.Spec[b] = p.Spec[b], p.Spec[a] })
				ps[x] = p
			}
			rng.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
			r.Permissions = ps
			shuffled[k] = r
		}
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		compiled2 := compileAll(t, shuffled)

		for j := 0; j < propRequests; j++ {
			m, p := randRequest(rng)
			if a, b := Decide(compiled, m, p), Decide(compiled2, m, p); a.Allowed != b.Allowed || a.Status != b.Status {
				t.Fatalf("%s %s: %v before shuffling (%s), %v after (%s)", m, p, a.Allowed, a.Explain(), b.Allowed, b.Explain())
			}
		}
	}
}

// Decide, Explain and Evaluate are safe for concurrent use of shared
// compiled roles (run with -race).
func TestConcurrentUse(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	compiled := compileAll(t, randRoles(t, rng, 0.3))
	ref := &naive{globs: map[string]*glob.Pattern{}}
	type req struct {
		m, p string
		want bool
	}
	var reqs []req
	for i := 0; i < 200; i++ {
		m, p := randRequest(rng)
		reqs = append(reqs, req{m, p, ref.decide(normalised(compiled), m, p).Allowed})
	}
	done := make(chan string, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for _, r := range reqs {
				d := Decide(compiled, r.m, r.p)
				_ = d.Explain()
				if d.Allowed != r.want {
					done <- r.m + " " + r.p
					return
				}
			}
			done <- ""
		}()
	}
	for g := 0; g < 8; g++ {
		if s := <-done; s != "" {
			t.Errorf("concurrent decision differs for %s", s)
		}
	}
}

// The generator must reach the unmerged layout (catch-all lists longer than
// maxMerged), or TestIndexedEqualsNaive would not cover it.
func TestGeneratorReachesUnmergedBuckets(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for i := 0; i < 50; i++ {
		for _, c := range compileAll(t, randRolesN(t, rng, 0.3, 3, 200)) {
			for _, ix := range c.permit {
				for _, b := range ix.buckets {
					if !b.merged {
						return
					}
				}
			}
		}
	}
	t.Fatal("no unmerged bucket generated")
}

// A RoleSet decides exactly like the naive scan, and like Decide on the
// same slice, down to the reported permissions and Considered: on many
// small random sets (indexed although small) and on sets of 1,000 random
// roles, with nil roles and duplicates mixed in.
func TestRoleSetEqualsNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	ref := &naive{globs: map[string]*glob.Pattern{}}
	check := func(compiled []*CompiledRole, requests int) (allowed, blocked int) {
		var roles []Role
		for _, c := range compiled {
			if c != nil {
				roles = append(roles, c.Role())
			}
		}
		set := compose(compiled, true)
		for j := 0; j < requests; j++ {
			m, p := randRequest(rng)
			got, want := set.Decide(m, p), ref.decide(roles, m, p)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%d roles, %s %s:\n got %+v (%s)\nwant %+v (%s)", len(compiled), m, p, got, got.Explain(), want, want.Explain())
			}
			if slice := Decide(compiled, m, p); !reflect.DeepEqual(got, slice) {
				t.Fatalf("%d roles, %s %s: RoleSet %+v, slice %+v", len(compiled), m, p, got, slice)
			}
			if got.Allowed {
				allowed++
			}
			if len(got.Denied) > 0 {
				blocked++
			}
		}
		return allowed, blocked
	}
	for i := 0; i < propSets()/3; i++ {
		compiled := compileAll(t, randRoles(t, rng, 0.3))
		if i%7 == 0 {
			compiled = append(compiled, nil, compiled[0])
		}
		check(compiled, propRequests)
	}
	sets, requests := 4, 300
	if testing.Short() || raceEnabled {
		sets = 1
	}
	allowed, blocked := 0, 0
	for i := 0; i < sets; i++ {
		// Deny-heavy and permit-heavy sets: with a high deny rate most
		// grants come late and many roles are blocked on the way.
		compiled := compileAll(t, randRolesCount(t, rng, []float64{0.6, 0.9, 0.3, 0.05}[i%4], 1000, 13))
		compiled = append(compiled, nil)
		a, b := check(compiled, requests)
		allowed, blocked = allowed+a, blocked+b
	}
	t.Logf("1,000 roles: %d of %d requests allowed, %d with blocked roles", allowed, sets*requests, blocked)
	if allowed < sets*requests/20 || blocked < sets {
		t.Fatalf("weak generator: %d allowed, %d with blocked roles", allowed, blocked)
	}
}
