package apigw

import (
	"cads/shared/domain"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
)

// WriteJSON writes v as the JSON body with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unmarshalable type) gets here.
		status, b = http.StatusInternalServerError, mustBody(internalBody)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func mustBody(b Body) []byte {
	out, _ := json.Marshal(b)
	return out
}

// internalBody is the body of every 5xx.
var internalBody = Body{Status: http.StatusInternalServerError, Error: BodyError{Type: "internal", Message: internalMessage}}

// WriteError renders err: a *domain.Error by its code (a throttled one with
// Retry-After), anything else as a bare 500 whose cause goes to the log
// only.
func WriteError(ctx context.Context, log *slog.Logger, w http.ResponseWriter, err error) {
	b, logIt := body(err)
	if logIt {
		log.ErrorContext(ctx, "request failed", "error", err.Error(), "request_id", RequestID(ctx))
	}
	if domain.ErrorCode(err) == domain.Throttled {
		// The client is told only to come back; whoever is paged for a
		// rise in 429s needs what ran out (a lost race, the table's
		// throttling, the deadline).
		log.WarnContext(ctx, "request throttled", "error", err.Error(), "request_id", RequestID(ctx))
		w.Header().Set("Retry-After", strconv.Itoa(throttledRetryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(b.Status)
	_, _ = w.Write(mustBody(b))
}
