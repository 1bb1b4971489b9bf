package authz

import (
	"math/rand"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/gobwas/glob"
)

// Evaluate decides the same with and without a RoleSets cache, on held
// lists of hundreds of roles spread over a root account, its child and an
// unrelated account, inheritable or not, with admin roles among them.
func TestEvaluateWithSetsEqualsWithout(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	sets := NewRoleSets(5000)
	accounts := []string{"root", "a1", "other"}
	for i := 0; i < 6; i++ {
		raw := randRolesCount(t, rng, 0.3, 200+rng.Intn(400), 13)
		for k := range raw {
			raw[k].AccountID = accounts[rng.Intn(len(accounts))]
			raw[k].Inheritable = rng.Intn(3) == 0
			raw[k].EntitlementAdministrator = rng.Intn(10) == 0
		}
		held := compileAll(t, raw)
		held = append(held, held[rng.Intn(len(held))]) // held directly and through a group
		indexed := 0
		for j := 0; j < 300; j++ {
			m, p := randRequest(rng)
			key := accounts[rng.Intn(2)]
			in := Input{Method: m, Path: p, PrincipalID: "u1", KeyAccount: key, Target: "", Held: held, Root: "root"}
			if key == "a1" {
				in.TargetAncestors = []string{"root"}
			}
			want := Evaluate(in)
			in.Sets = sets
			got := Evaluate(in)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %s in %s:\n got %+v\nwant %+v", m, p, key, got, want)
			}
			if got.Considered > smallSet {
				indexed++
			}
		}
		if indexed == 0 {
			t.Fatal("no decision went through a RoleSet")
		}
	}
}

// RoleSets returns the cached set for the same roles in the same order,
// and a new one when the order or a role's version (a recompiled role)
// differs; it stays within its bound.
func TestRoleSetsCache(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	roles := compileAll(t, randRolesCount(t, rng, 0.3, 20, 13))
	c := NewRoleSets(50)
	s := c.For(roles)
	if c.For(append([]*CompiledRole(nil), roles...)) != s {
		t.Fatal("same roles, new set")
	}
	swapped := append([]*CompiledRole(nil), roles...)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if c.For(swapped) == s {
		t.Fatal("reordered roles, same set")
	}
	again := append([]*CompiledRole(nil), roles...)
	again[3] = mustCompile(t, roles[3].Role())
	if c.For(again) == s {
		t.Fatal("recompiled role, same set")
	}
	if c.roles > 50 {
		t.Fatalf("%d roles cached, bound 50", c.roles)
	}
	if c.For(roles) == s {
		t.Fatal("the cache was not emptied when full") // 20+20+20 > 50
	}
	big := compileAll(t, randRolesCount(t, rng, 0.3, 60, 3))
	if c.For(big) == c.For(big) || c.roles > 50 {
		t.Fatalf("a list over the bound was kept (%d roles cached)", c.roles)
	}
}

// A RoleSets cache and the sets it returns are safe for concurrent use
// (run with -race).
func TestRoleSetsConcurrent(t *testing.T) {
	rng := rand.New(rand.NewSource(19))
	roles := compileAll(t, randRolesCount(t, rng, 0.3, 300, 13))
	ref := &naive{globs: map[string]*glob.Pattern{}}
	type req struct {
		m, p string
		want Decision
	}
	var reqs []req
	for i := 0; i < 100; i++ {
		m, p := randRequest(rng)
		reqs = append(reqs, req{m, p, ref.decide(normalised(roles), m, p)})
	}
	c := NewRoleSets(1000)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range reqs {
				if d := c.For(roles).Decide(r.m, r.p); !reflect.DeepEqual(d, r.want) {
					errs <- r.m + " " + r.p
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent decision differs for %s", e)
	}
}

// More matching denies than visit's buffer holds (the one path where a
// RoleSet allocates before building Denied) decide like the slice.
func TestRoleSetManyDenies(t *testing.T) {
	var roles []Role
	for i := 0; i < 40; i++ {
		r := Role{ID: "r" + strconv.Itoa(i), AccountID: "a1", Name: "role" + strconv.Itoa(i), Permissions: []Permission{
			perm("GET", "deny", "/v2/**", "/v2/applications/*"),
			perm("GET", "permit", "/v2/applications/**"),
		}}
		if i == 37 {
			r.Permissions = r.Permissions[1:]
		}
		roles = append(roles, r)
	}
	compiled := compileAll(t, roles)
	got, want := Compose(compiled).Decide("GET", "/v2/applications/x"), Decide(compiled, "GET", "/v2/applications/x")
	if !reflect.DeepEqual(got, want) || !got.Allowed || len(got.Denied) != 37 || got.Considered != 38 {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}
