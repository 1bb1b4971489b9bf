// Package apigw holds the HTTP conventions every function of the API shares:
// the error body, strict JSON decoding, the principal the authorizer passes
// on, pagination, and the adapter that runs a net/http handler as an API
// Gateway proxy Lambda.
package apigw

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is an API error: it renders as
// {"status": N, "error": {"type": "...", "message": "..."}} (docs/api.md#errors).
type Error struct {
	Status  int
	Type    string
	Message string
	// RetryAfter, in seconds, is sent as a Retry-After header when set.
	RetryAfter int
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message) }

// Body is the wire shape of an error response.
type Body struct {
	Status int       `json:"status"`
	Error  BodyError `json:"error"`
}

// BodyError is the inner object of Body.
type BodyError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func newErr(status int, typ, format string, args ...any) *Error {
	return &Error{Status: status, Type: typ, Message: fmt.Sprintf(format, args...)}
}

func BadRequest(format string, args ...any) *Error {
	return newErr(http.StatusBadRequest, "bad_request", format, args...)
}
func Unauthorized(format string, args ...any) *Error {
	return newErr(http.StatusUnauthorized, "unauthorized", format, args...)
}
func Forbidden(format string, args ...any) *Error {
	return newErr(http.StatusForbidden, "forbidden", format, args...)
}
func NotFound(format string, args ...any) *Error {
	return newErr(http.StatusNotFound, "not_found", format, args...)
}
func MethodNotAllowed(format string, args ...any) *Error {
	return newErr(http.StatusMethodNotAllowed, "method_not_allowed", format, args...)
}
func Conflict(format string, args ...any) *Error {
	return newErr(http.StatusConflict, "conflict", format, args...)
}
func PayloadTooLarge(format string, args ...any) *Error {
	return newErr(http.StatusRequestEntityTooLarge, "payload_too_large", format, args...)
}
func UnsupportedMediaType(format string, args ...any) *Error {
	return newErr(http.StatusUnsupportedMediaType, "unsupported_media_type", format, args...)
}

// TooManyRequests is what a throttled store becomes: the client should retry.
func TooManyRequests(retryAfter int, format string, args ...any) *Error {
	e := newErr(http.StatusTooManyRequests, "too_many_requests", format, args...)
	e.RetryAfter = retryAfter
	return e
}

// internal is the only 5xx body; it never carries details of the failure.
var internal = &Error{Status: http.StatusInternalServerError, Type: "internal", Message: "internal error; the request id identifies it in the service logs"}

// As extracts an *Error from err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	var c converts
	if errors.As(err, &c) {
		return c.APIError(), true
	}
	return nil, false
}

// converts is an error of another layer that knows the API error it is
// (the store's conflicts), so that no function maps it by hand.
type converts interface{ APIError() *Error }
