// Package compare benchmarks cads/shared/authz against OPA (Rego,
// glob.match with ["/"]) and Casbin v2 on the same roles and requests. It is
// a separate module so that neither dependency reaches the main go.mod. Run
// from this directory (make bench runs it too):
//
//	go test -run '^$' -bench . -benchmem -cpu 1
//
// The comparison is only worth something if the engines decide alike: every
// benchmark first checks every engine against authz.Decide on the whole
// request set (requests) and fails on any difference. It uses the same
// gobwas/glob version as the main module (OPA v1.21 moved to gobwas/glob
// v1), so authz runs here exactly as in production.
package compare

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"cads/shared/authz"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/gobwas/glob"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown/cache"
)

const perms = 20

// roles is the role shape of authz's own BenchmarkDecide: per role, the
// automatic account GET, per-role application/test/address-set/role
// permissions, two catch-all patterns and one deny.
func roles(n int) []authz.Role {
	out := make([]authz.Role, n)
	p := func(method, effect string, spec ...string) authz.Permission {
		return authz.Permission{Method: method, Spec: spec, Effect: effect}
	}
	for k := 0; k < n; k++ {
		ps := []authz.Permission{
			p("GET", "permit", "/v2/accounts/a1"),
			p("GET", "permit", fmt.Sprintf("/v2/applications/app%d-0**", k)),
			p("GET", "permit", fmt.Sprintf("/v2/applications/app%d-1/*", k)),
			p("PATCH", "permit", fmt.Sprintf("/v2/applications/app%d-0", k)),
			p("PATCH", "permit", fmt.Sprintf("/v2/applications/app%d-1/actions/*", k)),
			p("POST", "permit", fmt.Sprintf("/v2/applications/app%d-0/actions", k)),
			p("DELETE", "permit", fmt.Sprintf("/v2/applications/app%d-0/**", k)),
			p("DELETE", "deny", fmt.Sprintf("/v2/applications/app%d-0/actions/prod**", k)),
			p("GET", "permit", fmt.Sprintf("/v2/tests/t%d", k), fmt.Sprintf("/v2/tests/t%d-x", k)),
			p("PUT", "permit", fmt.Sprintf("/v2/tests/t%d", k)),
			p("PATCH", "permit", fmt.Sprintf("/v2/tests/t%d", k)),
			p("GET", "permit", fmt.Sprintf("/v2/address-sets/s%d/**", k)),
			p("PATCH", "permit", fmt.Sprintf("/v2/address-sets/s%d", k)),
			p("GET", "permit", fmt.Sprintf("/v2/accounts/a1/roles/r%d", k)),
			p("GET", "permit", fmt.Sprintf("/v2/accounts/a1/invitations/i%d", k)),
			p("POST", "permit", "/v2/tasks"),
			p("GET", "permit", fmt.Sprintf("/v2/*/k%d", k)),
			p("GET", "permit", fmt.Sprintf("/v2/applicationsx%d**", k)),
			p("PUT", "permit", fmt.Sprintf("/v2/applications/app%d-0", k)),
			p("GET", "permit", fmt.Sprintf("/v2/applications/*/metrics%d", k)),
		}
		out[k] = authz.Role{ID: fmt.Sprintf("r%d", k), AccountID: "a1", Name: fmt.Sprintf("role %d", k), Permissions: ps}
	}
	return out
}

type request struct {
	name, method, path string
	allowed            bool
}

// named are the timed requests, as in authz's own BenchmarkDecide.
func named(n int) []request {
	last := n - 1
	return []request{
		{"allowed-first", "GET", "/v2/applications/app0-0/logs", true},
		{"allowed-last", "GET", fmt.Sprintf("/v2/applications/app%d-1/logs", last), true},
		{"denied", "GET", "/v2/applications/other/logs", false},
		{"denied-by-deny", "DELETE", fmt.Sprintf("/v2/applications/app%d-0/actions/prod1", last), false},
	}
}

// requests is the whole request set the engines must agree on: the named
// requests, then for the first, a middle and the last role every pattern's
// instances ("*" as a segment, "**" as nothing and as more segments) and
// near misses (an id one character longer, a parent path), each with every
// method and HEAD. It reaches permits, role-local denies, glued and
// segment "**", "*" in the first and in later segments.
func requests(n int) []request {
	out := named(n)
	seen := map[string]bool{}
	for _, k := range []int{0, n / 2, n - 1} {
		for _, p := range roles(n)[k].Permissions {
			for _, s := range p.Spec {
				head, rest := strings.CutSuffix(s, "**")
				inst := strings.ReplaceAll(head, "*", "x")
				paths := []string{inst + "y", strings.TrimSuffix(inst, "/")}
				if rest {
					paths = append(paths, strings.TrimSuffix(inst, "/")+"/y/z")
				}
				if i := strings.LastIndexByte(inst, '/'); i > 0 {
					paths = append(paths, inst[:i])
				}
				for _, path := range paths {
					if seen[path] || authz.CheckPath(path) != nil {
						continue
					}
					seen[path] = true
					for _, m := range append(authz.Methods(), "HEAD") {
						out = append(out, request{name: m + " " + path, method: m, path: path})
					}
				}
			}
		}
	}
	return out
}

type engine interface {
	allowed(method, path string) bool
}

// authz: Decide on the list of compiled roles (what Evaluate does without
// a RoleSets cache), and a RoleSet composed once (with one).

type authzEngine []*authz.CompiledRole

func compiled(tb testing.TB, rs []authz.Role) []*authz.CompiledRole {
	var out []*authz.CompiledRole
	for _, r := range rs {
		c, err := authz.Compile(r)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func (e authzEngine) allowed(method, path string) bool { return authz.Decide(e, method, path).Allowed }

type authzSetEngine struct{ s *authz.RoleSet }

func (e authzSetEngine) allowed(method, path string) bool { return e.s.Decide(method, path).Allowed }

// OPA, tuned as its documentation advises: the policy is compiled and the
// query prepared once (rego.PrepareForEval) against an in-memory store;
// data is keyed by method so that a request only iterates the patterns of
// its method; allow is a complete rule, so evaluation stops at the first
// permit of a role that no deny of its own matches (denied is computed
// once per query); and glob.match gets an inter-query value cache large
// enough for every pattern, so no pattern is recompiled per request (the
// built-in default keeps only 100 compiled globs, fewer than 50 roles
// have).

const policy = `package authz

default allow := false

allow if {
	some i, specs in data.permit[input.method]
	some s in specs
	glob.match(s, ["/"], input.path)
	not denied[i]
}

denied contains i if {
	some i, specs in data.deny[input.method]
	some s in specs
	glob.match(s, ["/"], input.path)
}
`

type opaEngine struct {
	q     rego.PreparedEvalQuery
	cache rego.EvalOption
}

func newOPA(tb testing.TB, rs []authz.Role) *opaEngine {
	// data.permit[method][role] = [patterns]; roles are keyed by href.
	permit, deny := map[string]any{}, map[string]any{}
	for _, c := range compiled(tb, rs) { // normalised patterns, as stored
		for _, p := range c.Role().Permissions {
			m := permit
			if p.Effect == authz.EffectDeny {
				m = deny
			}
			byRole, _ := m[p.Method].(map[string]any)
			if byRole == nil {
				byRole = map[string]any{}
				m[p.Method] = byRole
			}
			specs, _ := byRole[c.Href()].([]any)
			for _, s := range p.Spec {
				specs = append(specs, s)
			}
			byRole[c.Href()] = specs
		}
	}
	entries := 0 // unlimited
	vc := cache.NewInterQueryValueCache(context.Background(), &cache.Config{
		InterQueryBuiltinValueCache: cache.InterQueryBuiltinValueCacheConfig{MaxNumEntries: &entries},
	})
	q, err := rego.New(
		rego.Query("data.authz.allow"),
		rego.Module("authz.rego", policy),
		rego.Store(inmem.NewFromObject(map[string]any{"permit": permit, "deny": deny})),
	).PrepareForEval(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return &opaEngine{q: q, cache: rego.EvalInterQueryBuiltinValueCache(vc)}
}

func (e *opaEngine) allowed(method, path string) bool {
	rs, err := e.q.Eval(context.Background(), rego.EvalInput(map[string]any{"method": method, "path": path}), e.cache)
	if err != nil || len(rs) != 1 {
		panic(fmt.Sprint(err, rs))
	}
	return rs[0].Expressions[0].Value == true
}

// Casbin: one enforcer per role, whose effect is "some permit and no
// deny", so a deny only blocks its own role; the request is allowed when
// one role's enforcer says yes. (One enforcer for all roles would make a
// deny reach into other roles; filtering by subject in the matcher would
// scan every role's policies for each role.) Casbin's globMatch does not
// implement these patterns (it treats a glued "**" like "*"), so the
// matcher calls specMatch, which matches with the gobwas patterns authz
// uses, compiled once when the policies are loaded.

const casbinModel = `
[request_definition]
r = obj, act

[policy_definition]
p = obj, act, eft

[policy_effect]
e = some(where (p.eft == allow)) && !some(where (p.eft == deny))

[matchers]
m = r.act == p.act && specMatch(r.obj, p.obj)
`

type casbinEngine []*casbin.Enforcer

func newCasbin(tb testing.TB, rs []authz.Role) casbinEngine {
	globs := map[string]*glob.Pattern{} // read-only once loaded
	specMatch := func(args ...any) (any, error) {
		path, _ := args[0].(string)
		g := globs[args[1].(string)]
		return g != nil && g.Match(path), nil
	}
	var ce casbinEngine
	for _, c := range compiled(tb, rs) {
		m, err := model.NewModelFromString(casbinModel)
		if err != nil {
			tb.Fatal(err)
		}
		e, err := casbin.NewEnforcer(m)
		if err != nil {
			tb.Fatal(err)
		}
		e.AddFunction("specMatch", specMatch)
		for _, p := range c.Role().Permissions {
			eft := "allow"
			if p.Effect == authz.EffectDeny {
				eft = "deny"
			}
			for _, s := range p.Spec {
				if globs[s] == nil {
					globs[s] = glob.MustCompile(s, '/')
				}
				if _, err := e.AddPolicy(s, p.Method, eft); err != nil {
					tb.Fatal(err)
				}
			}
		}
		ce = append(ce, e)
	}
	return ce
}

func (c casbinEngine) allowed(method, path string) bool {
	for _, e := range c {
		ok, err := e.Enforce(path, method)
		if err != nil {
			panic(err)
		}
		if ok {
			return true
		}
	}
	return false
}

type namedEngine struct {
	name string
	e    engine
}

func engines(tb testing.TB, n int) []namedEngine {
	rs := roles(n)
	cs := compiled(tb, rs)
	return []namedEngine{
		{"authz", authzEngine(cs)},
		{"authz-set", authzSetEngine{authz.Compose(cs)}},
		{"opa", newOPA(tb, rs)},
		{"casbin", newCasbin(tb, rs)},
	}
}

// sameAnswers fails tb unless every engine decides every request of the
// set as authz.Decide does, and the named requests as expected.
func sameAnswers(tb testing.TB, n int, engs []namedEngine) {
	tb.Helper()
	ref := compiled(tb, roles(n))
	reqs := requests(n)
	allowed := 0
	for i, r := range reqs {
		want := authz.Decide(ref, r.method, r.path).Allowed
		if i < len(named(n)) && want != r.allowed {
			tb.Fatalf("authz, %d roles, %s %s: allowed %v, the benchmark expects %v", n, r.method, r.path, want, r.allowed)
		}
		if want {
			allowed++
		}
		for _, e := range engs {
			if got := e.e.allowed(r.method, r.path); got != want {
				tb.Fatalf("%s, %d roles, %s %s: allowed %v, authz says %v", e.name, n, r.method, r.path, got, want)
			}
		}
	}
	tb.Logf("%d roles: %d requests, %d allowed, all engines agree", n, len(reqs), allowed)
	// Guard against a request set that only exercises one answer.
	if allowed < len(reqs)/20 || allowed > len(reqs)*19/20 {
		tb.Fatalf("%d roles: %d of %d requests allowed", n, allowed, len(reqs))
	}
}

var sizes = []int{1, 10, 50}

func TestSameAnswers(t *testing.T) {
	for _, n := range sizes {
		sameAnswers(t, n, engines(t, n))
	}
}

func BenchmarkEngines(b *testing.B) {
	for _, n := range sizes {
		engs := engines(b, n)
		sameAnswers(b, n, engs)
		for _, eng := range engs {
			for _, r := range named(n) {
				b.Run(fmt.Sprintf("%s/roles=%d/%s", eng.name, n, r.name), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						eng.e.allowed(r.method, r.path)
					}
				})
			}
		}
	}
}
