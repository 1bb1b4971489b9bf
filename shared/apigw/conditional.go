package apigw

import (
	"net/http"
	"strconv"
	"strings"

	"cads/shared/domain"
	"cads/shared/etag"
)

// Conditional requests (docs/api.md#conditional-requests): every resource
// body carries a strong ETag made from the resource's version, which every
// change of the resource increments. A write with If-Match compares it
// with the version it read and writes on condition that the version is
// still that one, so the comparison costs no round trip of its own.

// Tagged is a resource body with its entity tag: Handle sends the tag as
// the ETag header, answers a GET whose If-None-Match names it with 304 and
// a GET whose If-Match does not name it with 412.
type Tagged struct {
	Body any
	ETag string
}

// WithETag is body tagged with etag (see ETag).
func WithETag(body any, etag string) *Tagged { return &Tagged{Body: body, ETag: etag} }

// Precondition is the If-Match of a request: the state of the resource
// the request was based on.
type Precondition struct {
	set  bool
	any  bool     // "*": any current state, as long as the resource exists
	tags []string // the entity tags named, weak ones included
}

// IfMatch is r's If-Match. Handle has refused a malformed one already.
func IfMatch(r *http.Request) Precondition {
	tags, anyTag, ok, _ := parseTags(r.Header.Values("If-Match"))
	return Precondition{set: ok, any: anyTag, tags: tags}
}

// Set reports whether the request has a precondition: a write that has
// one must not re-apply itself on a newer state (store.ReapplyIf).
func (p Precondition) Set() bool { return p.set }

// Check is nil when the resource whose current tag is etag meets the
// precondition (or there is none), else the 412 answer. If-Match compares
// strongly: a weak tag never matches.
func (p Precondition) Check(etag string) error {
	if !p.set || p.any {
		return nil
	}
	for _, t := range p.tags {
		if t == etag {
			return nil
		}
	}
	return domain.Errorf(domain.Precondition, "the resource changed since the version If-Match names (its ETag is now %s): read it again and retry on the current version", etag)
}

// Versions are the versions of kind/id the precondition names, for a
// write that conditions on the version without reading the item first
// (a delete). anyTag is If-Match "*". No version and not anyTag means no
// tag names this resource at all: the precondition fails whatever its
// state.
func (p Precondition) Versions(kind, id string) (versions []int, anyTag bool) {
	if p.any {
		return nil, true
	}
	prefix := etag.Prefix(kind, id)
	for _, t := range p.tags {
		rest, ok := strings.CutPrefix(strings.Trim(t, `"`), prefix)
		if !ok || strings.HasPrefix(t, "W/") {
			continue
		}
		if v, err := strconv.Atoi(rest); err == nil && v >= 0 {
			versions = append(versions, v)
		}
	}
	return versions, false
}

// WriteVersions are the versions a write without a read of its own (a
// delete) conditions on: none when there is no precondition or it is "*"
// (the write's usual existence check is then all), else the versions of
// the resource the If-Match names, under any of the ids its tags may be
// made from; naming none of them is the 412 at once.
func (p Precondition) WriteVersions(kind string, ids ...string) ([]int, error) {
	if !p.set || p.any {
		return nil, nil
	}
	var all []int
	for _, id := range ids {
		v, _ := p.Versions(kind, id)
		all = append(all, v...)
	}
	if len(all) == 0 {
		return nil, domain.Errorf(domain.Precondition, "If-Match names no version of this resource: send the ETag of its last GET")
	}
	return all, nil
}

// NotModified reports whether r is a GET whose If-None-Match names etag:
// the answer will be a 304 without a body, so a handler may skip reading
// one that costs a round trip of its own.
func NotModified(r *http.Request, etag string) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && matchesWeak(r.Header.Values("If-None-Match"), etag)
}

// matchesWeak is If-None-Match's comparison: weak, "*" matching any.
func matchesWeak(values []string, etag string) bool {
	tags, anyTag, ok, _ := parseTags(values)
	if !ok {
		return false
	}
	if anyTag {
		return true
	}
	for _, t := range tags {
		if strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// parseTags reads an If-Match or If-None-Match (RFC 9110 13.1.1): "*" or
// a comma-separated list of entity tags. ok is false when the header is
// absent.
func parseTags(values []string) (tags []string, anyTag, ok bool, err error) {
	if len(values) == 0 {
		return nil, false, false, nil
	}
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			switch {
			case f == "":
				continue
			case f == "*":
				anyTag = true
				continue
			}
			opaque := strings.TrimPrefix(f, "W/")
			if len(opaque) < 2 || opaque[0] != '"' || opaque[len(opaque)-1] != '"' || strings.ContainsAny(opaque[1:len(opaque)-1], "\" \t") {
				return nil, false, true, domain.Errorf(domain.Invalid, "%q is not an entity tag: send the ETag of a response as it came, quotes included", f)
			}
			tags = append(tags, f)
		}
	}
	if !anyTag && len(tags) == 0 {
		return nil, false, true, domain.Errorf(domain.Invalid, "an empty If-Match or If-None-Match names no entity tag")
	}
	return tags, anyTag, true, nil
}

// checkConditionHeaders refuses a malformed If-Match or If-None-Match
// rather than treating it as absent: a client that meant to guard a write
// must learn that the guard did not hold.
func checkConditionHeaders(r *http.Request) error {
	for _, h := range []string{"If-Match", "If-None-Match"} {
		if _, _, _, err := parseTags(r.Header.Values(h)); err != nil {
			return err
		}
	}
	return nil
}

// writeTagged sends t's ETag and reports whether the GET's conditions
// answered it already (304, or 412 for a stale If-Match).
// A 412 comes back as err for the caller to render.
func writeTagged(w http.ResponseWriter, r *http.Request, t *Tagged) (answered bool, err error) {
	if t.ETag == "" {
		return false, nil
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		if err := IfMatch(r).Check(t.ETag); err != nil {
			return true, err
		}
	}
	w.Header().Set("ETag", t.ETag)
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && matchesWeak(r.Header.Values("If-None-Match"), t.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return true, nil
	}
	return false, nil
}
