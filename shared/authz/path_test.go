package authz

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckPath(t *testing.T) {
	for _, p := range []string{
		"/v2", "/v2/accounts", "/v2/accounts/a1", "/v2/accounts/a1/roles/r1",
		"/v2/applications/a1/logs", "/v2/tests/load-test-1", "/v2/users/self/access-keys",
		"/v2/a...b", "/v2/...", "/v2/a.b", "/v2/A_b~c", "/v3/x", "/x",
		"/v2/" + strings.Repeat("a", MaxPathLen-4),
	} {
		if err := CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q): %v", p, err)
		}
	}
	bad := []struct {
		path   string
		index  int
		reason string
	}{
		{"", -1, "empty path"},
		{"/", 0, "not an API path"},
		{"v2/accounts", 0, "must start with /"},
		{"/v2//accounts", 4, "empty path segment"},
		{"//v2/accounts", 1, "empty path segment"},
		{"/v2/accounts/", 12, "trailing slash"},
		{"/v2/./accounts", 4, "dot segment"},
		{"/v2/accounts/..", 13, "dot segment"},
		{"/v2/accounts/a1/../a2", 16, "dot segment"},
		{"/.", 1, "dot segment"},
		{"/v2/accounts/a1%2Froles", 15, "percent"},
		{"/v2/accounts/%2e%2e", 13, "percent"},
		{"/v2/accounts/a1%252F", 15, "percent"},
		{"/v2/accounts/a\\b", 14, "backslash"},
		{"/v2/accounts/a1;x=1", 15, "';'"},
		{"/v2/accounts/a1?x", 15, "'?'"},
		{"/v2/accounts/a1#x", 15, "'#'"},
		{"/v2/accounts/a 1", 14, "whitespace"},
		{"/v2/accounts/a\x001", 14, "control"},
		{"/v2/accounts/a\x7f", 14, "control"},
		{"/v2/аccounts", 4, "non-ASCII"}, // Cyrillic а
		{"/v2/accounts/a*", 14, "'*'"},
		{"/v2/accounts/{id}", 13, "braces"},
		{"/v2/" + strings.Repeat("a", MaxPathLen-3), -1, "longer than"},
	}
	for _, c := range bad {
		err := CheckPath(c.path)
		var pe *PathError
		if !errors.As(err, &pe) || pe.Index != c.index || !strings.Contains(pe.Reason, c.reason) || pe.Path != c.path {
			t.Errorf("CheckPath(%q) = %#v; want index %d, reason containing %q", c.path, err, c.index, c.reason)
		}
	}
	// The message quotes the path, so control characters cannot reach a log line raw.
	if msg := CheckPath("/v2/a\nINJECTED").Error(); strings.Contains(msg, "\n") {
		t.Errorf("unquoted message %q", msg)
	}
}

func TestPathCharTable(t *testing.T) {
	ref := func(c byte) bool {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			return true
		}
		return strings.IndexByte("-._~!$&'()+,=:@", c) >= 0
	}
	for c := 0; c < 256; c++ {
		if pathChar(byte(c)) != ref(byte(c)) {
			t.Errorf("pathChar(%q) = %v", byte(c), pathChar(byte(c)))
		}
	}
}
