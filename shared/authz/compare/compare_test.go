// Package compare benchmarks cads/shared/authz against OPA (Rego,
// glob.match with ["/"]) and Casbin v2 (globMatch) on the same roles and
// requests. It is a separate module so that neither dependency reaches
// /work/main/go.mod. Run from this directory:
//
//	go test -run . -bench . -benchmem -cpu 1
//
// Note: OPA v1.11.0 needs gobwas/glob v0.2.x (go.mod replaces v1.1.0 with
// v0.2.3), so here authz matches its few gobwas patterns with v0.2.3 too.
package compare

import (
	"context"
	"fmt"
	"testing"

	"cads/shared/authz"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
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

func requests(n int) []request {
	last := n - 1
	return []request{
		{"allowed-first", "GET", "/v2/applications/app0-0/logs", true},
		{"allowed-last", "GET", fmt.Sprintf("/v2/applications/app%d-1/logs", last), true},
		{"denied", "GET", "/v2/applications/other/logs", false},
		{"denied-by-deny", "DELETE", fmt.Sprintf("/v2/applications/app%d-0/actions/prod1", last), false},
	}
}

type engine interface {
	allowed(method, path string) bool
}

// authz

type authzEngine []*authz.CompiledRole

func newAuthz(tb testing.TB, rs []authz.Role) authzEngine {
	var e authzEngine
	for _, r := range rs {
		c, err := authz.Compile(r)
		if err != nil {
			tb.Fatal(err)
		}
		e = append(e, c)
	}
	return e
}

func (e authzEngine) allowed(method, path string) bool { return authz.Decide(e, method, path).Allowed }

// OPA: the same rule in Rego; a deny only blocks its own role. Tuned the
// way one would tune it: the data is grouped by role, effect and method,
// and the permitted and denied role sets are each computed once.

const policy = `package authz

default allow := false

permitted contains i if {
	some i, role in data.roles
	some s in role.permit[input.method]
	glob.match(s, ["/"], input.path)
}

denied contains i if {
	some i, role in data.roles
	some s in role.deny[input.method]
	glob.match(s, ["/"], input.path)
}

allow if {
	some i in permitted
	not denied[i]
}
`

type opaEngine struct{ q rego.PreparedEvalQuery }

func newOPA(tb testing.TB, rs []authz.Role) *opaEngine {
	var data []any
	for _, r := range rs {
		c, err := authz.Compile(r) // normalised patterns, as stored
		if err != nil {
			tb.Fatal(err)
		}
		permit, deny := map[string]any{}, map[string]any{}
		for _, p := range c.Role().Permissions {
			m := permit
			if p.Effect == authz.EffectDeny {
				m = deny
			}
			specs, _ := m[p.Method].([]any)
			for _, s := range p.Spec {
				specs = append(specs, s)
			}
			m[p.Method] = specs
		}
		data = append(data, map[string]any{"href": r.Href(), "permit": permit, "deny": deny})
	}
	q, err := rego.New(
		rego.Query("data.authz.allow"),
		rego.Module("authz.rego", policy),
		rego.Store(inmem.NewFromObject(map[string]any{"roles": data})),
	).PrepareForEval(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return &opaEngine{q: q}
}

func (e *opaEngine) allowed(method, path string) bool {
	rs, err := e.q.Eval(context.Background(), rego.EvalInput(map[string]any{"method": method, "path": path}))
	if err != nil || len(rs) != 1 {
		panic(fmt.Sprint(err, rs))
	}
	return rs[0].Expressions[0].Value == true
}

// Casbin: one enforcer per role, whose effect is "some permit and no
// deny"; the request is allowed when one role's enforcer says yes. (One
// enforcer for all roles would make a deny reach into other roles, and
// filtering by subject in the matcher would scan every role's policies for
// each role.)

const casbinModel = `
[request_definition]
r = obj, act

[policy_definition]
p = obj, act, eft

[policy_effect]
e = some(where (p.eft == allow)) && !some(where (p.eft == deny))

[matchers]
m = r.act == p.act && globMatch(r.obj, p.obj)
`

type casbinEngine []*casbin.Enforcer

func newCasbin(tb testing.TB, rs []authz.Role) casbinEngine {
	var ce casbinEngine
	for _, r := range rs {
		m, err := model.NewModelFromString(casbinModel)
		if err != nil {
			tb.Fatal(err)
		}
		e, err := casbin.NewEnforcer(m)
		if err != nil {
			tb.Fatal(err)
		}
		c, err := authz.Compile(r)
		if err != nil {
			tb.Fatal(err)
		}
		for _, p := range c.Role().Permissions {
			eft := "allow"
			if p.Effect == authz.EffectDeny {
				eft = "deny"
			}
			for _, s := range p.Spec {
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

func engines(tb testing.TB, n int) []struct {
	name string
	e    engine
} {
	rs := roles(n)
	return []struct {
		name string
		e    engine
	}{
		{"authz", newAuthz(tb, rs)},
		{"opa", newOPA(tb, rs)},
		{"casbin", newCasbin(tb, rs)},
	}
}

// TestSameAnswers checks that authz and OPA agree on the benchmark
// requests, so the benchmark compares like with like. Casbin's globMatch
// does not implement spec 5.3 (notes/matching.md: it treats a glued "**"
// like "*"), so its disagreements are logged, not failed: it refuses
// "allowed-first", granted by /v2/applications/app0-0**.
func TestSameAnswers(t *testing.T) {
	for _, n := range []int{1, 10, 50} {
		for _, eng := range engines(t, n) {
			for _, r := range requests(n) {
				got := eng.e.allowed(r.method, r.path)
				switch {
				case got == r.allowed:
				case eng.name == "casbin":
					t.Logf("known difference: casbin, %d roles, %s %s: allowed %v, spec says %v", n, r.method, r.path, got, r.allowed)
				default:
					t.Errorf("%s, %d roles, %s %s: allowed %v, want %v", eng.name, n, r.method, r.path, got, r.allowed)
				}
			}
		}
	}
}

func BenchmarkEngines(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		for _, eng := range engines(b, n) {
			for _, r := range requests(n) {
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
