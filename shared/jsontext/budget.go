package jsontext

import (
	"encoding/base64"
	"unicode/utf8"
)

// ResponseBudget bounds what one response may put into the Lambda
// response payload: its body as it travels there (EnvelopeLen), well
// under Lambda's 6 MB synchronous limit, so that headers and the proxy
// envelope always fit. Handlers whose responses grow with the data page
// by these bytes as well as by count (docs/hardening.md, Budgets).
const ResponseBudget = 4 << 20

// EnvelopeLen is the number of bytes body takes inside the Lambda proxy
// response: valid UTF-8 goes as a JSON string (encoding/json escapes:
// quote and backslash 2 bytes, control characters 2 or 6, <, >, & and
// U+2028/U+2029 6), anything else as base64 (4/3).
func EnvelopeLen(body []byte) int {
	if !utf8.Valid(body) {
		return base64.StdEncoding.EncodedLen(len(body))
	}
	return jsonStringLen(body)
}

// jsonStringLen is the length of b encoded as a JSON string's contents by
// encoding/json (HTML escaping on, as json.Marshal does), b valid UTF-8.
func jsonStringLen(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}
