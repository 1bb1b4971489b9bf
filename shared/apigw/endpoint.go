package apigw

import (
	"log/slog"
	"mime"
	"net/http"
)

// Endpoint is how every function's handlers are written: given the request
// and the principal the authorizer authenticated, return a status and a
// body (rendered as JSON, or a *Binary as is), or an error that WriteError
// renders in the API's error body.
type Endpoint func(r *http.Request, p Principal) (int, any, error)

// Binary is a response body that is not JSON, such as an archive.
type Binary struct {
	ContentType string
	Filename    string // sent as an attachment name when set
	Data        []byte
	Headers     map[string]string // further response headers
}

// Handle adapts e to net/http: it reads the principal from the authorizer
// context and renders e's result.
func Handle(log *slog.Logger, e Endpoint) http.HandlerFunc {
	return handle(log, e, false)
}

// HandleInAccount is Handle for endpoints that act in the caller's account:
// a key authenticated into no account is refused (the authorizer refuses
// such keys first; this keeps a handler from ever acting on "no account").
func HandleInAccount(log *slog.Logger, e Endpoint) http.HandlerFunc {
	return handle(log, e, true)
}

func handle(log *slog.Logger, e Endpoint, inAccount bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := PrincipalFrom(r.Context())
		if err != nil {
			// Only a route deployed without the authorizer gets here.
			WriteError(r.Context(), log, w, Unauthorized("no authenticated principal"))
			return
		}
		if inAccount && p.AccountID == "" {
			WriteError(r.Context(), log, w, Forbidden("this key is authenticated into no account; switch with POST /v2/users/self/authorization"))
			return
		}
		status, body, err := e(r, p)
		if err != nil {
			WriteError(r.Context(), log, w, err)
			return
		}
		if b, ok := body.(*Binary); ok {
			w.Header().Set("Content-Type", b.ContentType)
			for k, v := range b.Headers {
				w.Header().Set(k, v)
			}
			if b.Filename != "" {
				w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": b.Filename}))
			}
			w.WriteHeader(status)
			_, _ = w.Write(b.Data)
			return
		}
		WriteJSON(w, status, body)
	}
}
