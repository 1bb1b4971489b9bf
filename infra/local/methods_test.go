package local_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"cads/infra/apispec"
)

// routeMissing is the body of a request no route takes
// (MISSING_AUTHENTICATION_TOKEN in template.yaml).
const routeMissing = "no such route: check the method and the path"

// TestMethodAPathLacksIsTheGatewaysNotFound: a method a known path does
// not have is answered by the gateway before any authorizer, as a path
// with no route at all is: 404 not_found (docs/api.md#errors). No function
// sees the request, so none answers 405.
func TestMethodAPathLacksIsTheGatewaysNotFound(t *testing.T) {
	p, c := start(t)
	methods := map[string][]string{} // path -> its methods
	for _, e := range apispec.Endpoints {
		methods[e.Path] = append(methods[e.Path], e.Method)
	}
	checked := 0
	for path, has := range methods {
		concrete := concretePath(path)
		// The path is known: one of its own methods reaches the
		// authorizer, which refuses the missing credential.
		if r := c.do(has[0], concrete, "", nil); r.Status != http.StatusUnauthorized {
			t.Errorf("%s %s without a credential: %d %s, want the authorizer's 401", has[0], concrete, r.Status, r.Raw)
		}
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if slices.Contains(has, m) || routedElsewhere(m, concrete) {
				continue
			}
			for _, secret := range []string{"", p.Bootstrap.Secret} {
				r := c.do(m, concrete, secret, nil)
				e, _ := r.Body["error"].(map[string]any)
				if r.Status != http.StatusNotFound || r.errorType(t) != "not_found" || e["message"] != routeMissing {
					t.Errorf("%s %s (credential %t): %d %s, want 404 not_found %q", m, concrete, secret != "", r.Status, r.Raw, routeMissing)
				}
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d method and path pairs", checked)
	}
}

// concretePath fills a template path's parameters with an id no literal
// segment of the API spells.
func concretePath(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			segs[i] = "zz9"
		}
	}
	return strings.Join(segs, "/")
}

// routedElsewhere reports whether another route of method takes concrete
// (the gateway falls back from a literal to a parameter: GET
// /v2/users/self reaches GET /v2/users/{id}).
func routedElsewhere(method, concrete string) bool {
	for _, e := range apispec.Endpoints {
		if e.Method == method && concretePath(e.Path) != concrete && matches(e.Path, concrete) {
			return true
		}
	}
	return false
}

func matches(template, concrete string) bool {
	ts, cs := strings.Split(template, "/"), strings.Split(concrete, "/")
	if len(ts) != len(cs) {
		return false
	}
	for i := range ts {
		if ts[i] != cs[i] && !strings.HasPrefix(ts[i], "{") {
			return false
		}
	}
	return true
}
