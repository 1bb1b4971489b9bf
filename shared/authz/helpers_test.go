package authz

import (
	"math/rand"
	"strings"
	"testing"
)

func perm(method, effect string, spec ...string) Permission {
	return Permission{Method: method, Spec: spec, Effect: effect}
}

func mustCompile(t testing.TB, r Role) *CompiledRole {
	t.Helper()
	c, err := Compile(r)
	if err != nil {
		t.Fatalf("Compile(%+v): %v", r, err)
	}
	return c
}

var (
	vocabFirst = []string{"accounts", "applications", "address-sets", "tests", "tasks", "users", "app", "a1"}
	vocabRest  = []string{"a1", "a2", "x", "roles", "invitations", "logs", "actions", "metrics", "self", "applications"}
	methods    = []string{"GET", "POST", "PATCH", "PUT", "DELETE"}
)

func pick(rng *rand.Rand, xs []string) string { return xs[rng.Intn(len(xs))] }

// randPath returns a canonical path, mostly below /v2, built from a small
// vocabulary so that random patterns often match.
func randPath(rng *rand.Rand) string {
	switch rng.Intn(20) {
	case 0:
		return "/v2"
	case 1:
		return "/v3/" + pick(rng, vocabFirst)
	case 2:
		return "/v2/" + pick(rng, vocabFirst) + pick(rng, []string{"x", "-sets", "s"})
	}
	var b strings.Builder
	b.WriteString("/v2/" + pick(rng, vocabFirst))
	for n := rng.Intn(4); n > 0; n-- {
		b.WriteString("/" + pick(rng, vocabRest))
	}
	return b.String()
}

// randPattern returns a normalised pattern of the accepted grammar.
func randPattern(rng *rand.Rand) string {
	for {
		var b strings.Builder
		b.WriteString("/v2")
		n := rng.Intn(4)
		for i := 0; i < n; i++ {
			switch {
			case rng.Intn(4) == 0:
				b.WriteString("/*")
			case i == 0:
				b.WriteString("/" + pick(rng, vocabFirst))
			default:
				b.WriteString("/" + pick(rng, vocabRest))
			}
		}
		switch rng.Intn(4) {
		case 0:
			b.WriteString("/**")
		case 1:
			if !strings.HasSuffix(b.String(), "*") {
				b.WriteString("**")
			}
		}
		p := b.String()
		if p == "/v2" && rng.Intn(2) == 0 {
			continue
		}
		if n, err := NormalizePattern(p); err == nil && n == p {
			return p
		}
	}
}
