package authz

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/gobwas/glob"
)

func TestNormalizePattern(t *testing.T) {
	ok := []struct{ in, want string }{
		{"/v2/applications/*", "/v2/applications/*"},
		{"/applications/*", "/v2/applications/*"}, // missing /v2 prefix added (docs/api.md#permission-patterns)
		{"/accounts/a1", "/v2/accounts/a1"},
		{"/v2/applications**", "/v2/applications**"}, // glued ** (docs/api.md#permission-patterns)
		{"/applications**", "/v2/applications**"},
		{"/v2/applications/**", "/v2/applications/**"},
		{"/v2/**", "/v2/**"},
		{"/**", "/v2/**"},
		{"/v2**", "/v2**"},
		{"/v2", "/v2"},
		{"/*", "/v2/*"},
		{"/v2/applications/*/actions/*", "/v2/applications/*/actions/*"},
		{"/v2/*/*/**", "/v2/*/*/**"},
		{"/v2x", "/v2/v2x"}, // "/v2x" is not the /v2 prefix
		{"/V2/a", "/v2/V2/a"},
		{"/v2/address-sets/a_b.c~d", "/v2/address-sets/a_b.c~d"},
		{"/v2/accounts/a1/roles/r1", "/v2/accounts/a1/roles/r1"},
		{"/v2/a...", "/v2/a..."}, // only whole "." and ".." segments are dot segments
	}
	for _, c := range ok {
		got, err := NormalizePattern(c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizePattern(%q) = %q, %v; want %q", c.in, got, err, c.want)
			continue
		}
		if again, err := NormalizePattern(got); err != nil || again != got {
			t.Errorf("NormalizePattern(%q) not idempotent: %q, %v", got, again, err)
		}
	}
	bad := []struct {
		in     string
		index  int
		reason string
	}{
		{"", -1, "empty"},
		{"applications/*", 0, "must start with /"},
		{"**", 0, "must start with /"},
		{"/v2/applications/{id}", 17, "braces"},
		{"/v2/applications/?", 17, "'?'"},
		{"/v2/applications/[ab]", 17, "brackets"},
		{"/v2/applications\\x", 16, "backslash"},
		{"/v2/../accounts", 4, "dot segments"},
		{"/v2/./accounts", 4, "dot segments"},
		{"/v2/applications/..", 17, "dot segments"},
		{"/v2//accounts", 4, "empty path segment"},
		{"/v2/applications/", 16, "trailing slash"},
		{"/", 0, "trailing slash"},
		{"/v2/app lications", 7, "whitespace"},
		{" /v2/applications", 0, "whitespace"},
		{"/v2/applications\t", 16, "whitespace"},
		{"/v2/applicatiøns", 13, "non-ASCII"},
		{"/v2/a\x00", 5, "control"},
		{"/v2/a%2Fb", 5, "percent"},
		{"/v2/a;b", 5, "';'"},
		{"/v2/a#b", 5, "'#'"},
		{"/v2/applications/***", 17, "***"},
		{"/v2/applications***", 16, "***"},
		{"/applications***", 13, "***"}, // offset in the pattern as given
		{"/v2/app*", 7, "whole path segment"},
		{"/v2/*x", 4, "whole path segment"},
		{"/v2/a*b/c", 5, "whole path segment"},
		{"/v2/**/logs", 4, "must end the pattern"},
		{"/v2/a**b", 5, "must end the pattern"},
		{"/v2/**x", 4, "must end the pattern"},
		{"/v2*", 3, "whole path segment"},
		{"/" + strings.Repeat("a", MaxPatternLen), -1, "longer than"},
	}
	for _, c := range bad {
		got, err := NormalizePattern(c.in)
		var pe *PatternError
		if !errors.As(err, &pe) {
			t.Errorf("NormalizePattern(%q) = %q, %v; want a *PatternError", c.in, got, err)
			continue
		}
		if pe.Index != c.index || !strings.Contains(pe.Reason, c.reason) || pe.Pattern != c.in || pe.Field != "" {
			t.Errorf("NormalizePattern(%q): %+v; want index %d, reason containing %q", c.in, pe, c.index, c.reason)
		}
	}
}

// The reference document writes patterns as
// ^(?:/v2)?(?:/(?:(?:[a-z0-9]|[a-z][-_][a-z])+|\*\*?)){1,}$; clients written
// for it must keep working, except that "**" is "the rest" here (docs/api.md#permission-patterns)
// and so must end the pattern.
func TestReferenceDocumentPatternsAccepted(t *testing.T) {
	for _, p := range []string{"/applications/*", "/v2/address-sets/**", "/accounts/xyz", "/v2/clusters/cabc", "/v2/load-tests/*/run", "/a_b/c-d", "/**", "/*"} {
		if _, err := NormalizePattern(p); err != nil {
			t.Errorf("NormalizePattern(%q): %v", p, err)
		}
	}
}

func TestValidatePermissions(t *testing.T) {
	in := []Permission{
		{Method: "GET", Spec: []string{"/accounts/a1"}, Effect: "permit"},
		{Method: "PATCH", Spec: []string{"/v2/applications/*", "/tests/*"}, Effect: "deny"},
	}
	orig := []string{in[0].Spec[0], in[1].Spec[0], in[1].Spec[1]}
	out, err := ValidatePermissions(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Permission{
		{Method: "GET", Spec: []string{"/v2/accounts/a1"}, Effect: "permit"},
		{Method: "PATCH", Spec: []string{"/v2/applications/*", "/v2/tests/*"}, Effect: "deny"},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("got %+v, want %+v", out, want)
	}
	if got := []string{in[0].Spec[0], in[1].Spec[0], in[1].Spec[1]}; !reflect.DeepEqual(got, orig) {
		t.Errorf("input modified: %v", got)
	}
	if out, err := ValidatePermissions(nil); err != nil || out == nil || len(out) != 0 {
		t.Errorf("ValidatePermissions(nil) = %#v, %v; want empty, nil", out, err)
	}

	good := Permission{Method: "GET", Spec: []string{"/v2/x"}, Effect: "permit"}
	bad := []struct {
		p    Permission
		want string
	}{
		{Permission{Method: "get", Spec: []string{"/v2/x"}, Effect: "permit"}, `permissions[2].method: must be one of GET, POST, PATCH, PUT, DELETE (got "get")`},
		{Permission{Method: "HEAD", Spec: []string{"/v2/x"}, Effect: "permit"}, `permissions[2].method: must be one of`},
		{Permission{Method: "GET", Spec: []string{"/v2/x"}, Effect: "allow"}, `permissions[2].effect: must be "permit" or "deny" (got "allow")`},
		{Permission{Method: "GET", Spec: nil, Effect: "deny"}, `permissions[2].spec: must hold at least one path pattern`},
		{Permission{Method: "GET", Spec: []string{"/v2/ok", "/v2/applications/{id}"}, Effect: "permit"}, `permissions[2].spec[1]: "/v2/applications/{id}": braces are not allowed; write * for one path segment`},
		{Permission{Method: "GET", Spec: []string{""}, Effect: "permit"}, `permissions[2].spec[0]: "": empty pattern`},
	}
	for _, c := range bad {
		_, err := ValidatePermissions([]Permission{good, good, c.p})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ValidatePermissions(%+v) = %v; want prefix %q", c.p, err, c.want)
		}
	}
	_, err = ValidatePermissions([]Permission{{Method: "GET", Spec: []string{"/v2/a/../b"}, Effect: "permit"}})
	var pe *PatternError
	if !errors.As(err, &pe) || pe.Field != "permissions[0].spec[0]" || pe.Index != 6 {
		t.Errorf("got %#v", err)
	}
}

// specMatch is a direct reading of docs/api.md#permission-patterns for normalised
// patterns: "*" is one whole non-empty segment, a final "**" is any rest.
// It is the oracle gobwas is checked against.
func specMatch(pattern, path string) bool {
	head, rest := strings.CutSuffix(pattern, "**")
	for head != "" {
		if head[0] == '*' {
			n := strings.IndexByte(path, '/')
			if n < 0 {
				n = len(path)
			}
			if n == 0 {
				return false
			}
			head, path = head[1:], path[n:]
			continue
		}
		if path == "" || path[0] != head[0] {
			return false
		}
		head, path = head[1:], path[1:]
	}
	return rest || path == ""
}

// TestGobwasAgreesWithSpec checks that gobwas agrees with that rule for the grammar
// NormalizePattern accepts, on canonical paths.
func TestGobwasAgreesWithSpec(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		p := randPattern(rng)
		g, err := glob.Compile(p, '/')
		if err != nil {
			t.Fatalf("glob.Compile(%q): %v", p, err)
		}
		for j := 0; j < 10; j++ {
			path := randPath(rng)
			if g.Match(path) != specMatch(p, path) {
				t.Fatalf("gobwas %q vs %q: %v, rule's reading %v", p, path, g.Match(path), specMatch(p, path))
			}
		}
	}
}
