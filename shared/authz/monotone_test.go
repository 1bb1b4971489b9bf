package authz

import (
	"math/rand"
	"testing"
)

// The authorizer reads a caller's roles only as far as a decision needs
// (docs/rbac.md, "What the authorizer reads"), which is sound because more
// roles never take a grant away (a deny is local to its role) and a
// refusal made before any role is looked at cannot be changed by roles:
// for random roles and requests, whatever a subset of the held roles
// allows, the whole set allows, and a refusal that RefusedByRoles does not
// report is the same refusal with every role.
func TestMoreRolesOnlyGrant(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	for i := 0; i < propSets()/3; i++ {
		roles := randRoles(t, rng, 0.3)
		for k := range roles {
			roles[k].EntitlementAdministrator = rng.Intn(4) == 0
			roles[k].Inheritable = rng.Intn(5) == 0
		}
		all := compileAll(t, roles)
		sub := all[:rng.Intn(len(all)+1)]
		for j := 0; j < propRequests; j++ {
			m, p := randRequest(rng)
			in := Input{Method: m, Path: p, PrincipalID: "u1", KeyAccount: "a1", Target: "a1", Root: "a1"}
			if id, fromPath := Target(m, p, ""); fromPath {
				in.Target = id
			}
			in.Held = sub
			part := Evaluate(in)
			in.Held = all
			whole := Evaluate(in)
			switch {
			case part.Allowed && part.RefusedByRoles():
				t.Fatalf("%s %s: allowed and RefusedByRoles", m, p)
			case part.Allowed && !whole.Allowed:
				t.Fatalf("%s %s: allowed by %d of the roles (%s), refused by all %d (%s)", m, p, len(sub), part.Reason, len(all), whole.Reason)
			case !part.Allowed && !part.RefusedByRoles() && (whole.Allowed || whole.Reason != part.Reason):
				t.Fatalf("%s %s: refused before roles with %d (%s), %v with all %d (%s)", m, p, len(sub), part.Reason, whole.Allowed, len(all), whole.Reason)
			}
		}
	}
}
