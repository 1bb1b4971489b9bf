// Package apigw holds the HTTP conventions every function of the API shares:
// the error body (a domain error's code mapped to its status), strict JSON
// decoding, reading the caller the authorizer passes on, pagination, and the adapter that runs a net/http handler as an API
// Gateway proxy Lambda.
package apigw

import (
	"net/http"

	"cads/shared/domain"
)

// The error body: {"status": N, "error": {"type": "...", "message": "..."}}
// (docs/api.md#errors). Every layer reports failures as a *domain.Error;
// this table alone says which status and type each code is.
var statuses = map[string]struct {
	status int
	typ    string
}{
	domain.Invalid:      {http.StatusBadRequest, "bad_request"},
	domain.Unauthorized: {http.StatusUnauthorized, "unauthorized"},
	domain.Forbidden:    {http.StatusForbidden, "forbidden"},
	domain.NotFound:     {http.StatusNotFound, "not_found"},
	domain.Conflict:     {http.StatusConflict, "conflict"},
	domain.Precondition: {http.StatusPreconditionFailed, "precondition_failed"},
	domain.TooLarge:     {http.StatusRequestEntityTooLarge, "payload_too_large"},
	domain.Unsupported:  {http.StatusUnsupportedMediaType, "unsupported_media_type"},
	domain.Throttled:    {http.StatusTooManyRequests, "too_many_requests"},
	domain.Internal:     {http.StatusInternalServerError, "internal"},
}

// throttledRetryAfter is the Retry-After (seconds) of a throttled answer.
const throttledRetryAfter = 1

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

// internalMessage is the only message a 5xx carries: never details of the
// failure, which go to the log.
const internalMessage = "internal error; the request id identifies it in the service logs"

// Status is the HTTP status err is answered with.
func Status(err error) int {
	b, _ := body(err)
	return b.Status
}

// body is err's error body, and whether its cause belongs in the log (an
// error without a client-facing code is answered as internal).
func body(err error) (Body, bool) {
	e, ok := domain.AsError(err)
	if !ok {
		return internalBody, true
	}
	st, known := statuses[e.Code]
	if !known || e.Code == domain.Internal {
		return internalBody, true
	}
	return Body{Status: st.status, Error: BodyError{Type: st.typ, Message: e.Message}}, false
}
