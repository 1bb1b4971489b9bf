// Package domain holds what the API is about, free of how it is stored or
// served: the entities every family shares (accounts, roles, principals,
// keys, applications, tasks, ...), the rules about them whose refusals
// users read (names, quotas), and the one error type every layer speaks.
//
// It depends on no storage or transport: shared/store keeps these types in
// DynamoDB (the dynamodbav tags name their attributes there) and
// shared/apigw turns an Error's Code into an HTTP status. A test
// (TestDomainDeps, shared/wire/deps_test.go) keeps it that way.
package domain

import (
	"errors"
	"fmt"
	"strings"
)

// Error codes: what went wrong, in terms a client can act on. apigw maps
// each to one HTTP status and error type (shared/apigw/errors.go).
const (
	Invalid      = "invalid"      // the request is malformed or breaks a rule
	Unauthorized = "unauthorized" // no valid credential
	Forbidden    = "forbidden"    // the credential may not do this
	NotFound     = "not_found"    // the resource does not exist
	Conflict     = "conflict"     // the resource's state or a name's owner refuses it
	Precondition = "precondition" // the resource is not in the state the request names (If-Match)
	TooLarge     = "too_large"    // the request or a resource would exceed a size limit
	Unsupported  = "unsupported"  // the body's media type is not one the operation takes
	Throttled    = "throttled"    // a dependency is busy; retry shortly
	Internal     = "internal"     // a failure the client cannot fix
)

// Error is an error whose Message is fit for the client. Err, when set, is
// the cause: it goes to logs, never to the client.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode is the code of the first Error in err's chain: "" for nil,
// Internal for an error that carries none.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := AsError(err); ok {
		return e.Code
	}
	return Internal
}

// ErrorMessage is the client-facing message of the first Error in err's
// chain, or err's own text when there is none (for logs and task results,
// which are not answers to a request).
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := AsError(err); ok {
		return e.Message
	}
	return err.Error()
}

// AsError extracts the first *Error from err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// ErrNotFound is what a read of a missing item returns; callers that know
// which resource was asked for name it with IfNotFound.
var ErrNotFound = &Error{Code: NotFound, Message: "not found"}

// IfNotFound turns ErrNotFound into a not_found Error with the given
// message; other errors pass unchanged.
func IfNotFound(err error, format string, args ...any) error {
	if errors.Is(err, ErrNotFound) {
		return Errorf(NotFound, format, args...)
	}
	return err
}

// Throttle marks err as a busy dependency's refusal: the client is told to
// retry, and err stays the cause for the logs.
func Throttle(err error) *Error {
	return &Error{Code: Throttled, Message: "the service is busy; retry after a second", Err: err}
}

// Clip bounds a caller's value quoted in a message (or a remote error kept
// on a task) to n bytes, cut on a character boundary, with an ellipsis
// when it was longer.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
