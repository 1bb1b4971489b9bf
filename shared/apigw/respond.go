package apigw

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
)

// WriteJSON writes v as the JSON body with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unmarshalable type) gets here.
		status, b = http.StatusInternalServerError, mustBody(internal)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func mustBody(e *Error) []byte {
	b, _ := json.Marshal(Body{Status: e.Status, Error: BodyError{Type: e.Type, Message: e.Message}})
	return b
}

// WriteError renders err: an *Error as itself, a throttling error as 429,
// anything else as a bare 500 whose cause goes to the log only.
func WriteError(ctx context.Context, log *slog.Logger, w http.ResponseWriter, err error) {
	e, ok := As(err)
	if !ok {
		var t *ThrottledError
		if errors.As(err, &t) {
			e = TooManyRequests(1, "the service is busy; retry after a second")
		} else {
			log.ErrorContext(ctx, "request failed", "error", err.Error(), "request_id", RequestID(ctx))
			e = internal
		}
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(mustBody(e))
}
