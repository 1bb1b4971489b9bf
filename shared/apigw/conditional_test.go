package apigw

import (
	"net/http"
	"slices"
	"testing"

	"cads/shared/domain"
	"cads/shared/etag"
)

func TestETagChangesWithVersionKindAndID(t *testing.T) {
	a := etag.Of("role", "a1/r1", 1)
	for _, other := range []string{etag.Of("role", "a1/r1", 2), etag.Of("group", "a1/r1", 1), etag.Of("role", "a1/r2", 1)} {
		if other == a {
			t.Errorf("%s shared by two resources or versions", a)
		}
	}
	if a != etag.Of("role", "a1/r1", 1) || a[0] != '"' || a[len(a)-1] != '"' {
		t.Errorf("not a stable quoted tag: %s", a)
	}
}

func TestPreconditions(t *testing.T) {
	cur := etag.Of("role", "a1/r1", 3)
	old := etag.Of("role", "a1/r1", 2)
	req := func(h ...string) *http.Request {
		r, _ := http.NewRequest("PATCH", "/", nil)
		for _, v := range h {
			r.Header.Add("If-Match", v)
		}
		return r
	}
	cases := []struct {
		header []string
		set    bool
		pass   bool
	}{
		{nil, false, true},
		{[]string{cur}, true, true},
		{[]string{old}, true, false},
		{[]string{old + ", " + cur}, true, true},
		{[]string{old, cur}, true, true},
		{[]string{"*"}, true, true},
		{[]string{"W/" + cur}, true, false}, // If-Match compares strongly
	}
	for _, c := range cases {
		p := IfMatch(req(c.header...))
		err := p.Check(cur)
		if p.Set() != c.set || (err == nil) != c.pass {
			t.Errorf("If-Match %q: set %v, check %v", c.header, p.Set(), err)
		}
		if err != nil && domain.ErrorCode(err) != domain.Precondition {
			t.Errorf("If-Match %q: code %s", c.header, domain.ErrorCode(err))
		}
	}
	for _, bad := range []string{"abc", `"a b"`, `"unterminated`, ",", `W/`} {
		if err := checkConditionHeaders(req(bad)); domain.ErrorCode(err) != domain.Invalid {
			t.Errorf("If-Match %q: %v, want a 400", bad, err)
		}
	}
	if !matchesWeak([]string{"W/" + cur}, cur) || !matchesWeak([]string{"*"}, cur) || matchesWeak([]string{old}, cur) {
		t.Error("If-None-Match compares weakly")
	}
}

func TestWriteVersions(t *testing.T) {
	r, _ := http.NewRequest("DELETE", "/", nil)
	if v, err := IfMatch(r).WriteVersions("role", "a1/r1"); v != nil || err != nil {
		t.Errorf("no If-Match: %v %v", v, err)
	}
	r.Header.Set("If-Match", etag.Of("role", "a1/r1", 4)+", "+etag.Of("role", "a1/r2", 7)+", "+etag.Of("role", "a1/r1", 0))
	if v, err := IfMatch(r).WriteVersions("role", "a1/r1"); !slices.Equal(v, []int{4, 0}) || err != nil {
		t.Errorf("versions %v %v, want [4 0]", v, err)
	}
	if _, err := IfMatch(r).WriteVersions("role", "a1/r9"); domain.ErrorCode(err) != domain.Precondition {
		t.Errorf("tags of other resources only: %v, want a 412", err)
	}
}
