package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"cads/shared/domain"
)

// UnmarshalStrict decodes one JSON value into v strictly: no unknown
// fields, no trailing data, strings that keep the text rule
// (CheckJSONText; opts widen it for named fields). apigw.DecodeJSON reads
// a request body with it; services parse stored or patched JSON with it.
func UnmarshalStrict(body []byte, v any, opts ...TextOption) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return domain.Errorf(domain.Invalid, "a JSON request body is required")
	}
	if err := CheckJSONText(body, opts...); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return domain.Errorf(domain.Invalid, "invalid JSON body: %s", describeJSONError(err))
	}
	if dec.More() {
		return domain.Errorf(domain.Invalid, "invalid JSON body: unexpected data after the JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return domain.Errorf(domain.Invalid, "invalid JSON body: unexpected data after the JSON value")
	}
	return nil
}

func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(body)"
		}
		return fmt.Sprintf("field %q must be %s, not %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the body ends before the JSON value does"
	}
	// encoding/json reports unknown fields as `json: unknown field "x"`.
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "a number"
}
