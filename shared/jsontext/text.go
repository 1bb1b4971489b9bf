package jsontext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"cads/shared/domain"
)

// The text rule (docs/hardening.md): every string the API takes is valid
// UTF-8 without control characters (Unicode category Cc: U+0000–U+001F and
// U+007F–U+009F). Bad text is refused with a 400 naming the field and the
// code point, never repaired: encoding/json would turn invalid UTF-8 and
// lone surrogate escapes into U+FFFD without a word, so the rule is checked
// on the raw body, before decoding.

// TextOption widens the text rule for named fields of a body.
type TextOption struct {
	lineBreaks []string
}

// AllowTabNewline lets the string fields at paths hold tab (U+0009) and
// line feed (U+000A), and nothing else of the rule. A path is written as
// the error messages write them ("message", "records[0].message") with
// "[*]" for any array index ("[*].message"). It exists for values whose
// format is lines: a log record's message, PEM blocks (certificates,
// keys); names, descriptions and every other field stay on one line.
func AllowTabNewline(paths ...string) TextOption {
	return TextOption{lineBreaks: paths}
}

func (o TextOption) allowsLineBreaks(pattern string) bool {
	return slices.Contains(o.lineBreaks, pattern)
}

func mergeOptions(opts []TextOption) TextOption {
	var o TextOption
	for _, x := range opts {
		o.lineBreaks = append(o.lineBreaks, x.lineBreaks...)
	}
	return o
}

// IsControl reports whether r is a control character the text rule
// refuses (category Cc).
func IsControl(r rune) bool { return unicode.Is(unicode.Cc, r) }

// CheckText applies the text rule to one string that did not come in a
// JSON body (a form field, a query parameter); what names it in the 400
// ("form field \"desc\"").
func CheckText(what, s string) error {
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		if r == utf8.RuneError && size == 1 {
			return domain.Errorf(domain.Invalid, "%s is not valid UTF-8 (byte 0x%02X at offset %d)", what, s[i], i)
		}
		if IsControl(r) {
			return domain.Errorf(domain.Invalid, "%s holds the control character %s; text may not contain control characters", what, codePoint(r))
		}
	}
	return nil
}

// CheckQuery applies the text rule to every query parameter name and value.
func CheckQuery(q url.Values) error {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same request always names the same parameter
	for _, k := range keys {
		if err := CheckText("a query parameter name", k); err != nil {
			return err
		}
		for _, v := range q[k] {
			if err := CheckText(fmt.Sprintf("query parameter %q", k), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckJSONText applies the text rule to every string (values and field
// names) of the JSON value body starts with. A body that is not JSON is
// left to the decoder, which says where it breaks; only text inside
// strings is judged here.
func CheckJSONText(body []byte, opts ...TextOption) error {
	if !needsTextScan(body) {
		return nil
	}
	o := mergeOptions(opts)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []frame
	prev := dec.InputOffset()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the decoder reports syntax errors
		}
		end := dec.InputOffset()
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, frame{array: t == '[', wantKey: t == '{'})
				prev = end
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			raw := body[prev:end]
			raw = raw[bytes.IndexByte(raw, '"'):]
			if top != nil && !top.array && top.wantKey {
				if err := checkLiteral(raw, false); err != nil {
					return domain.Errorf(domain.Invalid, "invalid JSON body: a field name in %s %s", describePath(stack, false), err.msg)
				}
				top.key, top.wantKey = t, false
				prev = end
				continue
			}
			if err := checkLiteral(raw, o.allowsLineBreaks(renderPath(stack, true))); err != nil {
				return domain.Errorf(domain.Invalid, "invalid JSON body: field %s %s", describePath(stack, false), err.msg)
			}
		}
		prev = end
		if len(stack) == 0 {
			return nil // the first value is complete; the decoder judges the rest
		}
		top = &stack[len(stack)-1]
		if top.array {
			top.index++
		} else {
			top.wantKey = true
		}
	}
}

// needsTextScan is false for bodies that cannot break the rule: raw control
// characters below U+0020 are already syntax errors in JSON, so only an
// escape, DEL or a byte of a multi-byte sequence can.
func needsTextScan(body []byte) bool {
	for _, b := range body {
		if b == '\\' || b >= 0x7f {
			return true
		}
	}
	return false
}

// frame is one open object or array while scanning.
type frame struct {
	array   bool
	index   int    // array: the current element
	key     string // object: the current field
	wantKey bool   // object: the next string is a field name
}

// renderPath writes the path to the current value: `entries[2].address`,
// `[0].message`, `labels["a b"]`; wildcard writes indices as [*].
func renderPath(stack []frame, wildcard bool) string {
	var b strings.Builder
	for _, f := range stack {
		switch {
		case f.array && wildcard:
			b.WriteString("[*]")
		case f.array:
			fmt.Fprintf(&b, "[%d]", f.index)
		case f.wantKey:
			// An object whose next field name is being read: the path ends here.
		case isIdentifier(f.key):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		default:
			b.WriteString("[" + strconv.Quote(f.key) + "]")
		}
	}
	return b.String()
}

func describePath(stack []frame, wildcard bool) string {
	p := renderPath(stack, wildcard)
	if p == "" {
		return "(body)"
	}
	return strconv.Quote(p)
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

type textError struct{ msg string }

// checkLiteral judges a JSON string literal as written (quotes included),
// decoding its escapes itself so that nothing encoding/json would replace
// goes unseen. The literal is one the decoder's scanner accepted.
func checkLiteral(lit []byte, lineBreaks bool) *textError {
	s := lit[1 : len(lit)-1]
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				return &textError{fmt.Sprintf("is not valid UTF-8 (byte 0x%02X)", s[i])}
			}
			if err := checkRune(r, lineBreaks); err != nil {
				return err
			}
			i += size
			continue
		}
		if i+1 >= len(s) {
			return nil // not a literal the scanner accepts
		}
		switch s[i+1] {
		case 'u':
			r, ok := hex4(s[i+2:])
			if !ok {
				return nil
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r < 0xdc00 && i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if lo, ok := hex4(s[i+2:]); ok && utf16.DecodeRune(r, lo) != utf8.RuneError {
						i += 6
						continue
					}
				}
				return &textError{fmt.Sprintf(`holds the escape \u%04x, a lone UTF-16 surrogate (%s) that encodes no character`, r, codePoint(r))}
			}
			if err := checkRune(r, lineBreaks); err != nil {
				return err
			}
		case 'b', 'f', 'n', 'r', 't':
			if err := checkRune(shortEscape(s[i+1]), lineBreaks); err != nil {
				return err
			}
			i += 2
		default: // \" \\ \/
			i += 2
		}
	}
	return nil
}

func checkRune(r rune, lineBreaks bool) *textError {
	if !IsControl(r) || lineBreaks && (r == '\t' || r == '\n') {
		return nil
	}
	if lineBreaks {
		return &textError{fmt.Sprintf("holds the control character %s; this field may contain tab and newline, no other control characters", codePoint(r))}
	}
	return &textError{fmt.Sprintf("holds the control character %s; text may not contain control characters", codePoint(r))}
}

// shortEscape is the character of a one-letter JSON escape (b f n r t).
func shortEscape(c byte) rune {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	}
	return '\t'
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(n), true
}

func codePoint(r rune) string { return fmt.Sprintf("U+%04X", r) }
