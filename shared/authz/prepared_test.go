package authz

import (
	"math/rand"
	"testing"
)

// Prepared.Allowed is Evaluate(...).Allowed, for every request, whatever
// order the requests come in (its per-scope choice of roles is built by
// the first request of each scope and reused).
func TestPreparedEqualsEvaluate(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	accounts := []string{"r0", "a1", "a2", "a3"}
	sets := NewRoleSets(1000)
	for set := 0; set < propSets()/5; set++ {
		roles := randRolesN(t, rng, 0.3, 20, 10) // past smallSet, so some lists are indexed
		for i := range roles {
			roles[i].AccountID = pick(rng, accounts)
			roles[i].Inheritable = rng.Intn(3) == 0
			roles[i].EntitlementAdministrator = rng.Intn(6) == 0
		}
		held := compileAll(t, roles)
		key := pick(rng, accounts)
		target := key
		if rng.Intn(3) == 0 {
			target = pick(rng, accounts)
		}
		in := Input{PrincipalID: "u1", KeyAccount: key, Target: target, TargetAncestors: ancestorsOf[target], Held: held, Root: "r0"}
		if rng.Intn(10) == 0 {
			in.Root = ""
		}
		if rng.Intn(2) == 0 {
			in.Sets = sets
		}
		p := Prepare(in)
		for n := 0; n < propRequests; n++ {
			method, path := randRequest(rng)
			switch rng.Intn(8) {
			case 0:
				path = "/v2/users/" + pick(rng, []string{"u1", "u2", "self"}) + pick(rng, []string{"", "/access-keys", "/roles/x"})
			case 1:
				path = "/v2/accounts/" + target + pick(rng, []string{"", "/entitlements", "/entitlements/e1", "/roles"})
			case 2:
				path = "/v2/accounts"
			}
			e := in
			e.Method, e.Path = method, path
			want := Evaluate(e).Allowed
			if got := p.Allowed(method, path); got != want {
				t.Fatalf("set %d: %s %s key %s target %s: Prepared %v, Evaluate %v (%s)\n%s", set, method, path, key, target, got, want, Evaluate(e).Reason, describe(roles))
			}
		}
	}
}

func BenchmarkFilter(b *testing.B) {
	rng := rand.New(rand.NewSource(3))
	roles := compileAll(b, randRolesN(b, rng, 0.2, 50, 20))
	in := Input{PrincipalID: "u1", KeyAccount: "a1", Target: "a1", TargetAncestors: ancestorsOf["a1"], Held: roles, Root: "r0"}
	paths := make([]string, 1000)
	for i := range paths {
		paths[i] = "/v2/applications/app" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
	}
	b.Run("Evaluate per member", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, path := range paths {
				e := in
				e.Method, e.Path = "GET", path
				_ = Evaluate(e).Allowed
			}
		}
	})
	b.Run("Prepared per member", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := Prepare(in)
			for _, path := range paths {
				_ = p.Allowed("GET", path)
			}
		}
	})
}
