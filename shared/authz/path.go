package authz

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxPathLen bounds request paths (and patterns, see MaxPatternLen). API
// paths here are short (ids are at most 64 characters); the bound keeps the
// cost of one decision bounded whatever a client sends.
const MaxPathLen = 1024

// PathError says why a request path is not in canonical form. It maps to a
// 400 response: no spelling of a path other than the canonical one is decided
// (docs/api.md#canonical-paths, "decided as received").
type PathError struct {
	Path   string // the path as received
	Index  int    // byte offset of the problem in Path, -1 when not about one place
	Reason string
}

func (e *PathError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("request path %s: %s (at offset %d)", quoteShort(e.Path), e.Reason, e.Index)
	}
	return fmt.Sprintf("request path %s: %s", quoteShort(e.Path), e.Reason)
}

// quoteShort quotes s for a message that goes into responses and logs:
// quoting neutralises control characters, truncation bounds the size.
func quoteShort(s string) string {
	const max = 120
	if len(s) > max {
		return strconv.QuoteToASCII(s[:max]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

// pathChar reports whether c may appear in a request path segment: the
// RFC 3986 pchar set without percent-encoding (no path parameter of this API
// needs it: ids are [a-z0-9-], so refusing '%' also rules out %2F, %2e and
// double encoding), without ';' (matrix parameters, path-parameter confusion
// in some proxies) and without '*' (the wildcard of patterns; no id has it).
// Everything else - controls, space, non-ASCII look-alikes, '\\', '?', '#',
// quotes, brackets - is refused.
func pathChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '+', ',', '=', ':', '@':
		return true
	}
	return false
}

// charProblem names what is wrong with a byte refused by pathChar, so both
// CheckPath and NormalizePattern give readable reasons.
func charProblem(c byte) string {
	switch {
	case c >= 0x80:
		return "non-ASCII character"
	case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
		return "whitespace"
	case c < 0x20 || c == 0x7f:
		return "control character"
	case c == '%':
		return "percent-encoding is not accepted (no path parameter needs it)"
	case c == '\\':
		return "backslash"
	case c == '{' || c == '}':
		return "braces are not allowed"
	case c == '[' || c == ']':
		return "brackets are not allowed"
	case c == '?':
		return "'?' is not allowed"
	}
	return fmt.Sprintf("character %q is not allowed", c)
}

// CheckPath rejects any request path that is not in canonical form, before
// matching: it must start with "/", have no empty segments ("//"), no "." or
// ".." segments, no trailing slash ("/" alone is not an API path either), no
// percent-encoding, only the characters of pathChar, and at most MaxPathLen
// bytes. The error is a *PathError.
func CheckPath(path string) error {
	if i, reason := pathProblem(path); reason != "" {
		return &PathError{Path: path, Index: i, Reason: reason}
	}
	return nil
}

// canonical is CheckPath as a boolean: Decide and SelfService use it on
// their hot path, where building an error would allocate.
func canonical(path string) bool {
	_, reason := pathProblem(path)
	return reason == ""
}

// pathProblem returns the offset and reason of the first problem of path,
// or "" when it is canonical. Reasons are constants or built only on failure,
// so the success path does not allocate.
func pathProblem(path string) (int, string) {
	switch {
	case path == "":
		return -1, "empty path"
	case len(path) > MaxPathLen:
		return -1, "longer than " + strconv.Itoa(MaxPathLen) + " bytes"
	case path[0] != '/':
		return 0, "must start with /"
	case path == "/":
		return 0, "/ alone is not an API path"
	}
	segStart := 1
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			if !pathChar(path[i]) {
				return i, charProblem(path[i])
			}
			continue
		}
		// path[segStart:i] is a complete segment.
		switch seg := path[segStart:i]; {
		case seg == "" && i == len(path):
			return i - 1, "trailing slash"
		case seg == "":
			return i, "empty path segment (//)"
		case seg == "." || seg == "..":
			return segStart, "dot segment (" + seg + ")"
		}
		segStart = i + 1
	}
	return -1, ""
}

// firstSegment returns the first segment after "/v2/" of a canonical path,
// or "" when the path is not below /v2/. It is the key of the per-role index.
func firstSegment(path string) string {
	if !strings.HasPrefix(path, "/v2/") {
		return ""
	}
	rest := path[len("/v2/"):]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[:i]
	}
	return rest
}
