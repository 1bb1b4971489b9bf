package logs

import (
	"errors"
	"strings"
	"testing"
)

var sample = Record{
	"arrival":        "2026-11-20T10:00:00.5Z",
	"status_code":    404.0,
	"request_path":   "/images/a b.png",
	"request_method": "GET",
	"country":        "DE",
	"labels":         []string{"edge", "beta"},
	"useragent_name": "Firefox",
	"elapsed":        12.5,
}

func TestFilterGrammar(t *testing.T) {
	access, _ := SchemaOf(TypeAccess)
	cases := []struct {
		src  string
		want bool
	}{
		{`status_code = 404`, true},
		{`status_code != 404`, false},
		{`status_code < 500`, true},
		{`status_code > 404`, false},
		{`status_code <= 404`, true},
		{`status_code >= 404.5`, false},
		{`elapsed > 12`, true},
		{`country = DE`, true},
		{`country = 'de'`, false},
		{`request_path = "/images/a b.png"`, true},
		{`request_path ~ '^/images/.*\.png$'`, true},
		{`request_path !~ png`, false},
		{`request_path contains "a b"`, true},
		{`request_path not contains "a b"`, false},
		{`status_code in (200, 404)`, true},
		{`status_code in 404`, true},
		{`status_code not in (200,301)`, true},
		{`country NOT IN ("DE")`, false},
		{`referrer is null`, true},
		{`referrer is not null`, false},
		{`country is not null`, true},
		{`labels = beta`, true},
		{`labels contains edge`, true},
		{`labels ~ '^be'`, true},
		{`labels in (x, y)`, false},
		{`arrival >= 2026-11-20T10:00:00Z`, true},
		{`arrival < "2026-11-20T10:00:00.5Z"`, false},
		{`referrer = x`, false},
		{`referrer != x`, true},
		{`status_code = 200 or country = DE and request_method = GET`, true},
		{`(status_code = 200 or country = DE) and request_method = POST`, false},
		{`status_code = 200 or (country = DE and request_method = POST)`, false},
		{`((status_code = 404))`, true},
		{`request_method = GET AND useragent_name = 'Firefox' Or country = US`, true},
		{`request_path = 'it\'s'`, false},
		{`request_path ~ "\\.png"`, true},
	}
	for _, c := range cases {
		e, err := ParseFilter(c.src, access)
		if err != nil {
			t.Errorf("ParseFilter(%q): %v", c.src, err)
			continue
		}
		if got := e.Match(sample); got != c.want {
			t.Errorf("%q on the sample = %v, want %v", c.src, got, c.want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	access, _ := SchemaOf(TypeAccess)
	cases := []struct {
		src  string
		pos  int
		want string
	}{
		{``, 1, "expected an attribute name or \"(\", found end of filter"},
		{`status_code`, 12, "expected an operator"},
		{`status_code =`, 14, "expected a value, found end of filter"},
		{`nosuch = 1`, 1, `unknown attribute "nosuch" for access logs`},
		{`status_code = abc`, 15, `expected a number for status_code, found "abc"`},
		{`arrival > yesterday`, 11, "expected an RFC 3339 time"},
		{`status_code = 1 and`, 20, "expected an attribute name"},
		{`status_code = 1 xor country = DE`, 17, `expected "and", "or" or the end of the filter, found "xor"`},
		{`(status_code = 1`, 17, `expected ")", "and" or "or", found end of filter`},
		{`status_code = 1)`, 16, `found ")"`},
		{`country = 'DE`, 11, "unterminated string"},
		{`country ! DE`, 9, `expected "!=" or "!~"`},
		{`country in (DE US)`, 16, `expected "," or ")", found "US"`},
		{`country in ()`, 13, "expected a value"},
		{`country not like x`, 13, `expected "in" or "contains" after "not"`},
		{`country is nothing`, 12, `expected "null"`},
		{`request_path ~ '('`, 16, "invalid regular expression"},
		{`labels < x`, 10, "labels is a list"},
		{`ünïcode = 1`, 1, `unknown attribute "ünïcode"`},
		{`country = DE and ä`, 18, `unknown attribute "ä"`},
		{`country = DE and ä =`, 18, `unknown attribute "ä"`},
		{strings.Repeat("(", 40) + "country = DE" + strings.Repeat(")", 40), 33, "nest at most"},
	}
	for _, c := range cases {
		_, err := ParseFilter(c.src, access)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseFilter(%q) = %v, want a SyntaxError", c.src, err)
			continue
		}
		if se.Pos != c.pos || !strings.Contains(se.Msg, c.want) {
			t.Errorf("ParseFilter(%q) = %q at %d, want %q at %d", c.src, se.Msg, se.Pos, c.want, c.pos)
		}
	}
}

func TestFilterCustomSchema(t *testing.T) {
	custom, _ := SchemaOf(TypeCustom)
	e, err := ParseFilter(`stream = app and message contains "boom"`, custom)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Match(Record{"stream": "app", "message": "a boom happened"}) || e.Match(Record{"stream": "app", "message": "quiet"}) {
		t.Fatal("custom filter matched wrongly")
	}
	if _, err := ParseFilter(`status_code = 1`, custom); err == nil {
		t.Fatal("access attribute accepted for custom logs")
	}
}

// FuzzParseFilter: the parser never panics, its errors carry a position
// inside the input (or just past it), and a parsed filter evaluates.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`status_code = 404`, `a = b`, `(country in (DE, "US") or labels contains x) and referrer is not null`,
		`request_path !~ '^/a\'b'`, `status_code not in 200`, `elapsed >= -1.5e3`, `((`, `'`, `country = "x\"y"`,
	} {
		f.Add(s)
	}
	access, _ := SchemaOf(TypeAccess)
	f.Fuzz(func(t *testing.T, src string) {
		e, err := ParseFilter(src, access)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a SyntaxError", src, err)
			}
			if se.Pos < 1 || se.Pos > len([]rune(src))+2 && se.Pos != MaxFilterLen+1 {
				t.Fatalf("%q: position %d outside the input", src, se.Pos)
			}
			return
		}
		e.Match(sample)
		e.Match(Record{})
	})
}

// TestFilterBudgets: constructs whose evaluation cost explodes are refused
// at parse time with the limit named, and evaluation is metered.
func TestFilterBudgets(t *testing.T) {
	access, _ := SchemaOf(TypeAccess)
	long := "status_code = 1" + strings.Repeat(" or status_code = 1", MaxFilterTerms)
	many := "request_path ~ '" + strings.Repeat("a{200}", 1) + "'" + strings.Repeat(" or request_path ~ 'b{200}'", 5)
	for src, limit := range map[string]string{
		`request_path ~ '(.{100}){10}x'`: "MaxRegexpProgram",
		`request_path ~ 'x{1000}'`:       "MaxRegexpProgram",
		`referrer ~ '((a{10}){10}){10}'`: "MaxRegexpProgram",
		long:                             "MaxFilterTerms",
		many:                             "MaxFilterProgram",
		`status_code not in (` + strings.Repeat("1,", 99) + `1) or status_code in (` + strings.Repeat("1,", 99) + `1) or status_code = 2`: "MaxFilterTerms",
	} {
		_, err := ParseFilter(src, access)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, limit) {
			t.Errorf("%.60q: %v, want a refusal naming %s", src, err, limit)
		}
	}
	// Just under the limits parses.
	if _, err := ParseFilter(`request_path ~ '^/api/v[0-9]+/users/[a-z]+$' and referrer ~ '.{200}'`, access); err != nil {
		t.Errorf("ordinary expressions: %v", err)
	}
	// A regular expression costs its program size per byte it reads.
	e, err := ParseFilter(`request_path ~ 'error' and status_code = 404`, access)
	if err != nil {
		t.Fatal(err)
	}
	var m Meter
	MatchMetered(e, sample, &m)
	if path := int64(len(sample["request_path"].(string))); m.Units < path*7 || m.Units > path*7+4 {
		t.Errorf("metered %d units for a 7-instruction program over %d bytes", m.Units, path)
	}
}
