package accounts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"cads/shared/jsontext"
)

// optional is a PATCH field that can be absent (Set false), null (Set,
// Value nil: clear it) or a value.
type optional[T any] struct {
	Set   bool
	Value *T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

// present is a body field that must not be sent; its presence alone is
// reported with a message saying why.
type present bool

func (p *present) UnmarshalJSON([]byte) error { *p = true; return nil }

// Money is an amount in US cents. On the wire it is a JSON number with at
// most two decimals (the reference document's Currency: minimum 0,
// multipleOf 0.01), written with exactly two.
type Money int64

// maxMoney bounds amounts (one million dollars), so that quantity x unit
// price summed over an invoice cannot overflow.
const maxMoney Money = 100_000_000

// MarshalJSON writes m as a number with two decimals; amounts are never
// negative.
func (m Money) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%d.%02d", int64(m)/100, int64(m)%100), nil
}

func (m *Money) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if s == "" || s[0] == '"' || s[0] == '{' || s[0] == '[' || s == "true" || s == "false" || s == "null" {
		return &json.UnmarshalTypeError{Value: jsonKindOf(s), Type: reflect.TypeFor[float64]()}
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	if hasFrac && len(frac) < 2 {
		frac += "0"
	}
	if !hasFrac {
		frac = "00"
	}
	if whole == "" || len(frac) != 2 || !digits(whole) || !digits(frac) || len(whole) > 9 {
		return fmt.Errorf("a currency amount is a non-negative number of US dollars with at most 2 decimals, up to %s, not %s", mustJSON(maxMoney), s)
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	v := Money(w*100 + f)
	if v > maxMoney {
		return fmt.Errorf("a currency amount is at most %s, not %s", mustJSON(maxMoney), s)
	}
	*m = v
	return nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func jsonKindOf(s string) string {
	switch {
	case s == "":
		return "nothing"
	case s[0] == '"':
		return "string"
	case s[0] == '{':
		return "object"
	case s[0] == '[':
		return "array"
	case s == "null":
		return "null"
	}
	return "bool"
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// text validates a short human text: valid UTF-8, no control characters,
// trimmed, at most max runes.
func text(field, s string, max int) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > max {
		return "", fmt.Errorf("%s must be valid UTF-8 of at most %d characters", field, max)
	}
	for _, c := range s {
		if jsontext.IsControl(c) {
			return "", fmt.Errorf("%s must not contain control characters", field)
		}
	}
	return s, nil
}
