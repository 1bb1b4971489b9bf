package logs

import (
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The filter language of the reference document:
//
//	filter    = or
//	or        = and { "or" and }
//	and       = unary { "and" unary }
//	unary     = "(" filter ")" | predicate
//	predicate = attribute rel-op value
//	          | attribute ["not"] "in" ( "(" value { "," value } ")" | value )
//	          | attribute "is" ["not"] "null"
//	rel-op    = "=" | "!=" | "~" | "!~" | "<" | ">" | "<=" | ">=" | "contains" | "not" "contains"
//	value     = quoted string | word
//
// "and" binds tighter than "or" (the grammar leaves precedence open; this
// is the usual reading). Keywords are case-insensitive. Strings are quoted
// with ' or "; \', \" and \\ stand for the character, any other backslash
// is kept as it is (regular expressions need theirs).

// Limits that keep one filter's parse and evaluation cheap
// (docs/hardening.md, Budgets).
const (
	MaxFilterLen   = 4096
	maxFilterDepth = 32
	maxListValues  = 100
	// MaxFilterTerms bounds the predicates of one filter, each value of an
	// in list counting as one: every record evaluates them all at worst.
	MaxFilterTerms = 200
	// MaxRegexpProgram bounds one regular expression's compiled program
	// (instructions, after simplification). RE2 matching is linear in the
	// text but proportional to the program too: (.{100}){10}x is 1,023
	// instructions and costs a thousand steps per byte of every message.
	MaxRegexpProgram = 250
	// MaxFilterProgram bounds the instructions of all of a filter's
	// regular expressions together.
	MaxFilterProgram = 1000
)

// SyntaxError is a filter the parser refused: Pos is the 1-based
// character position of the offending token.
type SyntaxError struct {
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("filter: at position %d: %s", e.Pos, e.Msg) }

// Expr is a parsed filter.
type Expr interface {
	Match(r Record) bool
	// eval is Match that adds the work it did to m (nil: not counted).
	eval(r Record, m *Meter) bool
}

// Meter counts the work of evaluating filters, in units of one byte read
// by a predicate times the predicate's cost per byte: the program size of
// a regular expression, 1 for every other test (which also costs at
// least 1 unit).
type Meter struct{ Units int64 }

func (m *Meter) add(n int64) {
	if m != nil {
		m.Units += n
	}
}

// MatchMetered is e.Match, counting its work in m.
func MatchMetered(e Expr, r Record, m *Meter) bool { return e.eval(r, m) }

type tokKind int

const (
	tEOF tokKind = iota
	tWord
	tString
	tOp // = != ~ !~ < > <= >=
	tLParen
	tRParen
	tComma
)

type token struct {
	kind tokKind
	text string // the word, the unquoted string, or the operator
	pos  int    // 1-based character position
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of filter"
	case tString:
		return strconv.Quote(t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

func isWordRune(r rune) bool {
	switch r {
	case '(', ')', ',', '=', '!', '<', '>', '~', '\'', '"':
		return false
	}
	return r > ' ' && r != 0x7f
}

func lex(src string) ([]token, error) {
	var toks []token
	pos := 1 // character position of src[i]
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRuneInString(src[i:])
		if r == utf8.RuneError && size == 1 {
			return nil, &SyntaxError{pos, "invalid UTF-8"}
		}
		start := pos
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			i, pos = i+size, pos+1
		case r == '(':
			toks = append(toks, token{tLParen, "(", start})
			i, pos = i+1, pos+1
		case r == ')':
			toks = append(toks, token{tRParen, ")", start})
			i, pos = i+1, pos+1
		case r == ',':
			toks = append(toks, token{tComma, ",", start})
			i, pos = i+1, pos+1
		case r == '=' || r == '~':
			toks = append(toks, token{tOp, string(r), start})
			i, pos = i+1, pos+1
		case r == '!' || r == '<' || r == '>':
			op := string(r)
			if i+1 < len(src) && (src[i+1] == '=' || (r == '!' && src[i+1] == '~')) {
				op += string(src[i+1])
			}
			if op == "!" {
				return nil, &SyntaxError{start, `expected "!=" or "!~"`}
			}
			toks = append(toks, token{tOp, op, start})
			i, pos = i+len(op), pos+len(op)
		case r == '\'' || r == '"':
			var b strings.Builder
			i, pos = i+1, pos+1
			closed := false
			for i < len(src) {
				c, n := utf8.DecodeRuneInString(src[i:])
				if c == utf8.RuneError && n == 1 {
					return nil, &SyntaxError{pos, "invalid UTF-8"}
				}
				if c == '\\' {
					if i+1 >= len(src) {
						break
					}
					e, m := utf8.DecodeRuneInString(src[i+1:])
					if e != '\\' && e != '\'' && e != '"' {
						// Not an escape of ours: kept, so regular
						// expressions keep theirs (\. \d).
						b.WriteByte('\\')
						i, pos = i+1, pos+1
						continue
					}
					b.WriteRune(e)
					i, pos = i+1+m, pos+2
					continue
				}
				i, pos = i+n, pos+1
				if c == r {
					closed = true
					break
				}
				b.WriteRune(c)
			}
			if !closed {
				return nil, &SyntaxError{start, "unterminated string"}
			}
			toks = append(toks, token{tString, b.String(), start})
		case isWordRune(r):
			j := i
			for j < len(src) {
				c, n := utf8.DecodeRuneInString(src[j:])
				if !isWordRune(c) || (c == utf8.RuneError && n == 1) {
					break
				}
				j, pos = j+n, pos+1
			}
			toks = append(toks, token{tWord, src[i:j], start})
			i = j
		default:
			return nil, &SyntaxError{start, fmt.Sprintf("unexpected character %q", r)}
		}
	}
	return append(toks, token{tEOF, "", pos}), nil
}

type parser struct {
	toks   []token
	i      int
	schema *Schema
	depth  int
	terms  int // predicates so far (each in-list value one)
	insts  int // regular expression instructions so far
}

// ParseFilter parses a filter over the attributes of schema.
func ParseFilter(src string, schema *Schema) (Expr, error) {
	if utf8.RuneCountInString(src) > MaxFilterLen {
		return nil, &SyntaxError{MaxFilterLen + 1, fmt.Sprintf("a filter has at most %d characters", MaxFilterLen)}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, schema: schema}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.expected(t, `"and", "or" or the end of the filter`)
	}
	return e, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) expected(t token, what string) error {
	return &SyntaxError{t.pos, fmt.Sprintf("expected %s, found %s", what, t.describe())}
}

func (p *parser) keyword(t token, kw string) bool {
	return t.kind == tWord && strings.EqualFold(t.text, kw)
}

func (p *parser) or() (Expr, error) {
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.keyword(p.peek(), "or") {
		p.next()
		right, err := p.and()
		if err != nil {
			return nil, err
		}
		left = orExpr{left, right}
	}
	return left, nil
}

func (p *parser) and() (Expr, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.keyword(p.peek(), "and") {
		p.next()
		right, err := p.unary()
		if err != nil {
			return nil, err
		}
		left = andExpr{left, right}
	}
	return left, nil
}

func (p *parser) unary() (Expr, error) {
	t := p.peek()
	if t.kind == tLParen {
		if p.depth >= maxFilterDepth {
			return nil, &SyntaxError{t.pos, fmt.Sprintf("parentheses nest at most %d deep", maxFilterDepth)}
		}
		p.depth++
		p.next()
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tRParen {
			return nil, p.expected(c, `")", "and" or "or"`)
		}
		p.depth--
		return e, nil
	}
	return p.predicate()
}

func (p *parser) predicate() (Expr, error) {
	at := p.next()
	if at.kind != tWord {
		return nil, p.expected(at, `an attribute name or "("`)
	}
	f, ok := p.schema.Field(at.text)
	if !ok {
		return nil, &SyntaxError{at.pos, fmt.Sprintf("unknown attribute %q for %s logs", at.text, p.schema.Type)}
	}
	op := p.next()
	switch {
	case op.kind == tOp:
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		return p.newCompare(f, op.text, v)
	case p.keyword(op, "contains"):
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if err := p.term(v); err != nil {
			return nil, err
		}
		return containsExpr{f.Name, v.text}, nil
	case p.keyword(op, "in"):
		return p.inList(f, false)
	case p.keyword(op, "not"):
		t := p.next()
		switch {
		case p.keyword(t, "in"):
			return p.inList(f, true)
		case p.keyword(t, "contains"):
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			if err := p.term(v); err != nil {
				return nil, err
			}
			return notExpr{containsExpr{f.Name, v.text}}, nil
		}
		return nil, p.expected(t, `"in" or "contains" after "not"`)
	case p.keyword(op, "is"):
		t := p.next()
		negate := false
		if p.keyword(t, "not") {
			negate, t = true, p.next()
		}
		if !p.keyword(t, "null") {
			return nil, p.expected(t, `"null"`)
		}
		if err := p.term(t); err != nil {
			return nil, err
		}
		var e Expr = nullExpr{f.Name}
		if negate {
			e = notExpr{e}
		}
		return e, nil
	}
	return nil, p.expected(op, `an operator (= != ~ !~ < > <= >= contains, not contains, in, not in, is null, is not null)`)
}

func (p *parser) value() (token, error) {
	t := p.next()
	if t.kind != tWord && t.kind != tString {
		return t, p.expected(t, "a value")
	}
	return t, nil
}

func (p *parser) inList(f Field, negate bool) (Expr, error) {
	var vals []token
	if p.peek().kind == tLParen {
		p.next()
		for {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			if len(vals) == maxListValues {
				return nil, &SyntaxError{v.pos, fmt.Sprintf("a list has at most %d values", maxListValues)}
			}
			vals = append(vals, v)
			t := p.next()
			if t.kind == tRParen {
				break
			}
			if t.kind != tComma {
				return nil, p.expected(t, `"," or ")"`)
			}
		}
	} else {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	var e Expr
	for _, v := range vals {
		c, err := p.newCompare(f, "=", v)
		if err != nil {
			return nil, err
		}
		if e == nil {
			e = c
		} else {
			e = orExpr{e, c}
		}
	}
	if negate {
		e = notExpr{e}
	}
	return e, nil
}

// compareExpr is one relational predicate with its value converted to the
// field's kind at parse time.
type compareExpr struct {
	field string
	kind  Kind
	op    string
	s     string
	n     float64
	t     time.Time
	re    *regexp.Regexp
	cost  int64 // work units per byte of a regular expression's text
}

// term counts one predicate against MaxFilterTerms.
func (p *parser) term(at token) error {
	p.terms++
	if p.terms > MaxFilterTerms {
		return &SyntaxError{at.pos, fmt.Sprintf("a filter has at most %d predicates (MaxFilterTerms; each value of an in list counts)", MaxFilterTerms)}
	}
	return nil
}

// compileRegexp compiles a filter's regular expression with its program
// size bounded: parsed and simplified as regexp.Compile does, the program
// measured, and only then compiled for use.
func compileRegexp(src string) (*regexp.Regexp, int, error) {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid regular expression: %w", err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, 0, fmt.Errorf("invalid regular expression: %w", err)
	}
	if n := len(prog.Inst); n > MaxRegexpProgram {
		return nil, 0, fmt.Errorf("regular expression compiles to %d instructions; at most %d are allowed (MaxRegexpProgram): simplify it, e.g. fewer or smaller repetitions", n, MaxRegexpProgram)
	}
	c, err := regexp.Compile(src)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid regular expression: %w", err)
	}
	return c, len(prog.Inst), nil
}

func (p *parser) newCompare(f Field, op string, v token) (Expr, error) {
	if err := p.term(v); err != nil {
		return nil, err
	}
	c := compareExpr{field: f.Name, kind: f.Kind, op: op, s: v.text}
	if op == "~" || op == "!~" {
		re, n, err := compileRegexp(v.text)
		if err != nil {
			return nil, &SyntaxError{v.pos, err.Error()}
		}
		p.insts += n
		if p.insts > MaxFilterProgram {
			return nil, &SyntaxError{v.pos, fmt.Sprintf("the filter's regular expressions compile to %d instructions together; at most %d are allowed (MaxFilterProgram)", p.insts, MaxFilterProgram)}
		}
		c.re, c.cost = re, int64(n)
		if op == "!~" {
			c.op = "~"
			return notExpr{c}, nil
		}
		return c, nil
	}
	switch f.Kind {
	case KindNumber:
		n, err := strconv.ParseFloat(v.text, 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, &SyntaxError{v.pos, fmt.Sprintf("expected a number for %s, found %s", f.Name, v.describe())}
		}
		c.n = n
	case KindTime:
		t, err := time.Parse(time.RFC3339Nano, v.text)
		if err != nil {
			return nil, &SyntaxError{v.pos, fmt.Sprintf("expected an RFC 3339 time for %s, found %s", f.Name, v.describe())}
		}
		c.t = t
	case KindList:
		if op != "=" && op != "!=" {
			return nil, &SyntaxError{v.pos, fmt.Sprintf("%s is a list: use =, !=, ~, !~, contains or in", f.Name)}
		}
	}
	if op == "!=" {
		c.op = "="
		return notExpr{c}, nil
	}
	return c, nil
}

func (c compareExpr) Match(r Record) bool { return c.eval(r, nil) }

func (c compareExpr) eval(r Record, m *Meter) bool {
	m.add(1)
	v, ok := r[c.field]
	if !ok {
		return false
	}
	if c.re != nil {
		switch v := v.(type) {
		case []string:
			for _, s := range v {
				m.add(int64(len(s)) * c.cost)
				if c.re.MatchString(s) {
					return true
				}
			}
			return false
		default:
			s := render(v)
			m.add(int64(len(s)) * c.cost)
			return c.re.MatchString(s)
		}
	}
	var cmp int
	switch c.kind {
	case KindNumber:
		n, ok := v.(float64)
		if !ok {
			return false
		}
		cmp = compareFloat(n, c.n)
	case KindTime:
		s, _ := v.(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return false
		}
		cmp = t.Compare(c.t)
	case KindList:
		l, _ := v.([]string)
		for _, s := range l {
			if s == c.s {
				return true
			}
		}
		return false
	default:
		s, _ := v.(string)
		cmp = strings.Compare(s, c.s)
	}
	switch c.op {
	case "=":
		return cmp == 0
	case "<":
		return cmp < 0
	case ">":
		return cmp > 0
	case "<=":
		return cmp <= 0
	case ">=":
		return cmp >= 0
	}
	return false
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type containsExpr struct{ field, sub string }

func (c containsExpr) Match(r Record) bool { return c.eval(r, nil) }

func (c containsExpr) eval(r Record, m *Meter) bool {
	m.add(1)
	switch v := r[c.field].(type) {
	case []string:
		for _, s := range v {
			m.add(int64(len(s)))
			if s == c.sub {
				return true
			}
		}
		return false
	case nil:
		return false
	default:
		s := render(v)
		m.add(int64(len(s)))
		return strings.Contains(s, c.sub)
	}
}

type nullExpr struct{ field string }

func (n nullExpr) Match(r Record) bool { return n.eval(r, nil) }

func (n nullExpr) eval(r Record, m *Meter) bool {
	m.add(1)
	switch v := r[n.field].(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []string:
		return len(v) == 0
	}
	return false
}

type andExpr struct{ l, r Expr }

func (e andExpr) Match(r Record) bool          { return e.eval(r, nil) }
func (e andExpr) eval(r Record, m *Meter) bool { return e.l.eval(r, m) && e.r.eval(r, m) }

type orExpr struct{ l, r Expr }

func (e orExpr) Match(r Record) bool          { return e.eval(r, nil) }
func (e orExpr) eval(r Record, m *Meter) bool { return e.l.eval(r, m) || e.r.eval(r, m) }

type notExpr struct{ e Expr }

func (e notExpr) Match(r Record) bool          { return e.eval(r, nil) }
func (e notExpr) eval(r Record, m *Meter) bool { return !e.e.eval(r, m) }

// render is a value as text: CSV cells, regular expressions and contains
// on numbers read it.
func render(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []string:
		return strings.Join(v, ",")
	}
	return fmt.Sprint(v)
}
