package apigw

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strings"

	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/jsontext"
)

// MaxJSONBody bounds JSON request bodies; larger ones are 413.
const MaxJSONBody = 1 << 20

// DecodeJSON reads a required JSON body into v strictly: the content type
// must be application/json (415), the body at most MaxJSONBody (413), one
// JSON value with no unknown fields and no trailing data, whose strings
// keep the text rule (400, naming the field or offset; CheckJSONText, opts
// widen it for named fields). It never yields a 5xx for bad input.
func DecodeJSON(r *http.Request, v any, opts ...jsontext.TextOption) error {
	if err := RequireContentType(r, "application/json"); err != nil {
		return err
	}
	body, err := ReadBody(r, MaxJSONBody)
	if err != nil {
		return err
	}
	return jsontext.UnmarshalStrict(body, v, opts...)
}

// ReadJSON reads a required body whose media type is one of accepted
// (415 otherwise), at most MaxJSONBody (413), whose strings keep the text
// rule as sent (400; CheckJSONText, text widens it for named fields): a
// body to parse further, such as a PATCH body (patch.Read). It returns the
// body and its media type.
func ReadJSON(r *http.Request, text jsontext.TextOption, accepted ...string) ([]byte, string, error) {
	if err := RequireContentType(r, accepted...); err != nil {
		return nil, "", err
	}
	raw, err := ReadBody(r, MaxJSONBody)
	if err != nil {
		return nil, "", err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, "", domain.Errorf(domain.Invalid, "a request body is required")
	}
	// Judged as sent: decoding would turn invalid text into U+FFFD.
	if err := jsontext.CheckJSONText(raw, text); err != nil {
		return nil, "", err
	}
	return raw, MediaType(r), nil
}

// UnmarshalPatched decodes a patched document strictly into out
// (UnmarshalStrict), so that the result is validated as a whole however
// the patch was written; what names the resource in the error ("the
// patched role is invalid: ...").
func UnmarshalPatched(patched []byte, out any, what string) error {
	err := jsontext.UnmarshalStrict(patched, out)
	if e, ok := domain.AsError(err); ok {
		e.Message = strings.Replace(e.Message, "invalid JSON body", "the patched "+what+" is invalid", 1)
	}
	return err
}

// MediaType returns the request's media type, lower-cased, without parameters.
func MediaType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(ct))
	}
	return mt
}

// RequireContentType answers 415 unless the request's media type is one of
// allowed.
func RequireContentType(r *http.Request, allowed ...string) error {
	mt := MediaType(r)
	for _, a := range allowed {
		if mt == a {
			return nil
		}
	}
	if mt == "" {
		return domain.Errorf(domain.Unsupported, "missing Content-Type; send %s", strings.Join(allowed, " or "))
	}
	return domain.Errorf(domain.Unsupported, "Content-Type %q is not accepted here; send %s", mt, strings.Join(allowed, " or "))
}

// ReadBody reads the request body, 413 past limit bytes; a missing body is
// empty.
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, domain.Errorf(domain.Invalid, "could not read the request body")
	}
	if int64(len(b)) > limit {
		return nil, domain.Errorf(domain.TooLarge, "request body exceeds %d bytes", limit)
	}
	return b, nil
}

// PathID reads the path parameter name, an id of a `what` ("application").
// An id this service could not have made is a 404 like any missing one,
// before anything is read.
func PathID(r *http.Request, name, what string) (string, error) {
	id := r.PathValue(name)
	if !ids.Valid(id) {
		return "", domain.Errorf(domain.NotFound, "no %s %q", what, id)
	}
	return id, nil
}
