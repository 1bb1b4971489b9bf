package authz

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxPatternLen bounds one path pattern; a longer one could not match any
// path CheckPath accepts anyway.
const MaxPatternLen = MaxPathLen

// PatternError says why a path pattern was refused. Its text goes into 400
// responses, e.g.
//
//	permissions[2].spec[0]: "/v2/applications/{id}": braces are not allowed; write * for one path segment (at offset 18)
type PatternError struct {
	Field   string // where the pattern came from, e.g. "permissions[2].spec[0]"; "" from NormalizePattern
	Pattern string // the pattern as given
	Index   int    // byte offset of the problem in Pattern, -1 when not about one place
	Reason  string
}

func (e *PatternError) Error() string {
	var b strings.Builder
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(quoteShort(e.Pattern))
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Index >= 0 {
		b.WriteString(" (at offset ")
		b.WriteString(strconv.Itoa(e.Index))
		b.WriteString(")")
	}
	return b.String()
}

// FieldError is a refused permission field other than a pattern (method,
// effect, an empty spec). Its text goes into 400 responses.
type FieldError struct {
	Field  string // e.g. "permissions[1].method"
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// NormalizePattern returns the canonical form of a permission path pattern,
// or a *PatternError.
//
// A missing "/v2" prefix is added ("/applications/*" -> "/v2/applications/*";
// a pattern counts as prefixed when it is "/v2" or continues with "/" or "*").
// Then:
//   - "*" must be a whole segment and matches exactly one non-empty segment;
//   - "**" matches the rest of the path (nothing, or anything including "/"),
//     so it must end the pattern; it may be its own segment
//     ("/v2/applications/**") or glued ("/v2/applications**");
//   - every other character is literal and must be one a canonical request
//     path can contain (see CheckPath): no braces, '?', brackets, '\\', '%',
//     whitespace, non-ASCII;
//   - no empty segments, no "." or ".." segments, no trailing slash, no "***".
//
// NormalizePattern is idempotent on its results.
func NormalizePattern(p string) (string, error) {
	n, err := normalize(p)
	if err != nil {
		return "", err // not a typed nil: err is checked first
	}
	return n, nil
}

// normalize is NormalizePattern with the concrete error type, so that
// ValidatePermissions can set Field without a type assertion.
func normalize(p string) (string, *PatternError) {
	fail := func(i int, reason string) (string, *PatternError) {
		return "", &PatternError{Pattern: p, Index: i, Reason: reason}
	}
	switch {
	case p == "":
		return fail(-1, "empty pattern")
	case len(p) > MaxPatternLen:
		return fail(-1, "longer than "+strconv.Itoa(MaxPatternLen)+" bytes")
	}
	// Characters first, so that e.g. "{id}" gets the braces reason rather
	// than a structural one.
	for i := 0; i < len(p); i++ {
		if c := p[i]; c != '/' && c != '*' && !pathChar(c) {
			reason := charProblem(c)
			switch c {
			case '{', '}':
				reason += "; write * for one path segment, e.g. /v2/applications/*"
			case '?', '[', ']':
				reason += "; the only wildcards are * (one segment) and ** (the rest)"
			}
			return fail(i, reason)
		}
	}
	if p[0] != '/' {
		return fail(0, "must start with /")
	}
	n, shift := p, 0
	if !(p == "/v2" || strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v2*")) {
		n, shift = "/v2"+p, len("/v2")
	}
	// Offsets below are in n; subtract shift to report them in p.
	if i := strings.Index(n, "***"); i >= 0 {
		return fail(i-shift, "*** is not a wildcard; use * for one segment or ** for the rest")
	}
	segStart := 1
	for i := 1; i <= len(n); i++ {
		if i < len(n) && n[i] != '/' {
			continue
		}
		seg := n[segStart:i]
		last := i == len(n)
		switch {
		case seg == "" && last:
			return fail(i-1-shift, "trailing slash; write /** to include what is below")
		case seg == "":
			return fail(i-shift, "empty path segment (//)")
		case seg == "." || seg == "..":
			return fail(segStart-shift, "dot segments (. and ..) are not allowed")
		}
		if k := strings.IndexByte(seg, '*'); k >= 0 {
			star := segStart + k
			switch {
			case strings.HasPrefix(seg[k:], "**"):
				// A "**" may only be the end of the pattern: "any rest".
				if !last || k+2 != len(seg) {
					return fail(star-shift, "** matches the rest of the path, so it must end the pattern; use * for one segment")
				}
			case seg != "*":
				return fail(star-shift, "* must be a whole path segment (e.g. /v2/applications/*); use a trailing ** for a prefix")
			}
		}
		segStart = i + 1
	}
	return n, nil
}

// ValidatePermissions checks the method and effect of every permission and
// normalises every spec. It returns a normalised deep copy (the input is not
// modified), or the first error, as a *FieldError or a *PatternError whose
// Field names the entry, e.g. "permissions[2].spec[0]". A role may hold no
// permissions at all (docs/api.md#permission-patterns).
func ValidatePermissions(ps []Permission) ([]Permission, error) {
	out := make([]Permission, len(ps))
	for i, p := range ps {
		field := "permissions[" + strconv.Itoa(i) + "]"
		if methodNum(p.Method) < 0 {
			return nil, &FieldError{Field: field + ".method",
				Reason: fmt.Sprintf("must be one of %s (got %s)", strings.Join(Methods(), ", "), quoteShort(p.Method))}
		}
		if p.Effect != EffectPermit && p.Effect != EffectDeny {
			return nil, &FieldError{Field: field + ".effect",
				Reason: fmt.Sprintf("must be %q or %q (got %s)", EffectPermit, EffectDeny, quoteShort(p.Effect))}
		}
		if len(p.Spec) == 0 {
			return nil, &FieldError{Field: field + ".spec", Reason: "must hold at least one path pattern"}
		}
		spec := make([]string, len(p.Spec))
		for j, s := range p.Spec {
			n, err := normalize(s)
			if err != nil {
				err.Field = field + ".spec[" + strconv.Itoa(j) + "]"
				return nil, err
			}
			spec[j] = n
		}
		out[i] = Permission{Method: p.Method, Spec: spec, Effect: p.Effect}
	}
	return out, nil
}
