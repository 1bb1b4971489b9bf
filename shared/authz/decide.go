package authz

import (
	"strconv"
	"strings"
)

// Match identifies one path pattern of one permission of one role.
// Decisions point at Matches owned by a CompiledRole: treat them as
// read-only.
type Match struct {
	Role       string // href of the role
	RoleName   string
	Permission int    // index in the role's permissions
	Spec       int    // index in that permission's spec
	Method     string // the permission's method
	Pattern    string // the normalised pattern that matched
	Effect     string // "permit" or "deny"
}

// String renders the permission the way Explain cites it:
// `permissions[3] PATCH /v2/applications/*`.
func (m Match) String() string {
	return "permissions[" + strconv.Itoa(m.Permission) + "] " + m.Method + " " + m.Pattern
}

// Decision is the outcome of Decide or Evaluate.
//
// Decide does not allocate when it allows, or when it denies because nothing
// matched: it leaves Reason empty and Explain builds the sentence on demand.
// Only a deny permission that blocks a role costs an allocation (Denied).
// Evaluate always fills Reason.
type Decision struct {
	Allowed bool
	// Status is the HTTP status a refusal maps to: 200 when allowed, 400
	// for a non-canonical request path, 403 otherwise.
	Status int

	Role       string // href of the granting role, when allowed by a role
	RoleName   string
	Permission *Match  // the permit that granted it (read-only)
	Denied     []Match // deny permissions that blocked roles which would otherwise have granted, in role order (only roles looked at before the grant, if any)
	Reason     string  // set by Evaluate; use Explain for a Decide result

	Method, Path string // the request as decided
	Class        Class  // set by Evaluate: which roles could grant it
	Considered   int    // number of roles Decide looked at

	why why // which sentence Explain builds
}

type why uint8

const (
	whyNoMatch     why = iota // no role granted (possibly some were blocked by Denied)
	whyGranted                // a role granted
	whyBadPath                // the path is not canonical
	whySelfService            // allowed by SelfService, no role involved
	whyRefused                // refused before matching; Reason says why
)

// RefusedByRoles reports whether a refusal came from the roles given: no
// applicable role granted. Roles not given could then still grant it (a
// deny is local to its role, so more roles never take a grant away), and
// a caller that has read only some of a principal's roles must read on
// before refusing. False when allowed, and for refusals made before any
// role is looked at (the path, a key in no account, the scope, a global
// route without a root account): no role can change those.
func (d Decision) RefusedByRoles() bool { return !d.Allowed && d.why == whyNoMatch }

// Explain returns one readable sentence for humans and logs, e.g.
//
//	permitted by role "Editor" (/v2/accounts/a1/roles/r2) permissions[3] PATCH /v2/applications/*
//	no permission of the 2 applicable roles matches DELETE /v2/accounts/a1
//	role "X" (/v2/accounts/a1/roles/r1) would permit but its deny permissions[1] DELETE /v2/applications/** matches
//
// It returns Reason when that is set.
func (d Decision) Explain() string {
	if d.Reason != "" {
		return d.Reason
	}
	path := d.Path // canonical whenever Decide or Evaluate got this far; quoted otherwise
	if !canonical(path) {
		path = quoteShort(path)
	}
	req := printableMethod(d.Method) + " " + path
	switch d.why {
	case whyGranted:
		if d.Permission == nil {
			return "permitted " + req
		}
		return "permitted by role " + strconv.Quote(d.RoleName) + " (" + d.Role + ") " + d.Permission.String()
	case whyBadPath:
		if err := CheckPath(d.Path); err != nil {
			return err.Error()
		}
		return "request path is not in canonical form"
	case whySelfService:
		return "self-service: " + req + " is allowed to every authenticated principal on its own identity"
	case whyRefused:
		return "refused " + req
	}
	var b strings.Builder
	for i, m := range d.Denied {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("role " + strconv.Quote(m.RoleName) + " (" + m.Role + ") would permit but its deny " + m.String() + " matches")
	}
	switch {
	case d.Considered == 0:
		if b.Len() > 0 {
			return b.String()
		}
		return "no role applies to this request, so nothing permits " + req
	case len(d.Denied) > 0 && len(d.Denied) < d.Considered:
		b.WriteString("; no permission of the other " + plural(d.Considered-len(d.Denied), "applicable role") + " matches " + req)
	case len(d.Denied) == 0:
		b.WriteString("no permission of the " + plural(d.Considered, "applicable role") + " matches " + req)
	}
	return b.String()
}

// printableMethod returns the method as is when it is a plain token, else
// quoted, so that no request can put control characters into a log line.
func printableMethod(m string) string {
	for i := 0; i < len(m); i++ {
		if c := m[i]; c < 'A' || c > 'Z' {
			return quoteShort(m)
		}
	}
	return m
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Decide applies docs/api.md#decision to roles that already apply (see
// Applicable): a role grants when one of its permit permissions matches the
// method and path and none of ITS deny permissions matches; the request is
// allowed when at least one role grants. A deny is local to its role: a
// permit in another role still grants (5.2.6).
//
// The path must be canonical; Decide denies (Status 400) any path CheckPath
// refuses, so no spelling of a path reaches a pattern its canonical spelling
// would not. Methods are case-sensitive. nil roles are skipped. When several
// roles grant, the first in the given order is reported; Allowed never
// depends on the order.
func Decide(roles []*CompiledRole, method, path string) Decision {
	d := Decision{Status: 403, Method: method, Path: path}
	if !canonical(path) {
		d.Status, d.why = 400, whyBadPath
		return d
	}
	mi := methodNum(method)
	q := request{path: path, seg: firstSegment(path), slashes: int32(strings.Count(path, "/")), end: tail8(path)}
	q.key = segKey(q.seg)
	for _, r := range roles {
		if r == nil {
			continue
		}
		d.Considered++
		if mi < 0 {
			continue
		}
		p := r.permit[mi].first(r.entries, &q)
		if p < 0 {
			continue
		}
		if dn := r.deny[mi].first(r.entries, &q); dn >= 0 {
			d.Denied = append(d.Denied, r.matches[dn])
			continue
		}
		d.Allowed, d.Status, d.why = true, 200, whyGranted
		d.Role, d.RoleName, d.Permission = r.href, r.role.Name, &r.matches[p]
		return d
	}
	return d
}
