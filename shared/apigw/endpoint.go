package apigw

import (
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strconv"

	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/jsontext"
)

// Endpoint is how every function's handlers are written: given the request
// and the principal the authorizer authenticated, return a status and a
// body (rendered as JSON, or a *Binary as is), or an error that WriteError
// renders in the API's error body.
type Endpoint func(r *http.Request, p caller.Principal) (int, any, error)

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
			WriteError(r.Context(), log, w, domain.Errorf(domain.Unauthorized, "no authenticated principal"))
			return
		}
		if inAccount && p.AccountID == "" {
			WriteError(r.Context(), log, w, domain.Errorf(domain.Forbidden, "this key is authenticated into no account; switch with POST /v2/users/self/authorization"))
			return
		}
		// No GET or DELETE of the API takes a body: one sent would be
		// ignored, as if it had been applied (docs/api.md#unknown-fields).
		if err := noBody(r); err != nil {
			WriteError(r.Context(), log, w, err)
			return
		}
		// Query parameters are text too: some are stored or echoed back.
		if err := jsontext.CheckQuery(r.URL.Query()); err != nil {
			WriteError(r.Context(), log, w, err)
			return
		}
		if err := checkConditionHeaders(r); err != nil {
			WriteError(r.Context(), log, w, err)
			return
		}
		status, body, err := e(r, p)
		if err != nil {
			WriteError(r.Context(), log, w, err)
			return
		}
		if t, ok := body.(*Tagged); ok {
			body = t.Body
			if status < 300 {
				answered, err := writeTagged(w, r, t)
				if err != nil {
					WriteError(r.Context(), log, w, err)
					return
				}
				if answered {
					return
				}
			}
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
		if writeList(w, r, status, body) {
			return
		}
		WriteJSON(w, status, body)
	}
}

// Headers that state a collection page cut by bytes (docs/hardening.md,
// Budgets): the collection is a JSON array, so the cut travels beside it.
const (
	HeaderCut       = "X-Result-Cut"
	HeaderNextStart = "X-Next-Start"
	CutBytes        = "response_bytes"
	// HeaderLink carries the continuation of a Collection (RFC 8288,
	// rel="next").
	HeaderLink = "Link"
)

// writeList writes a collection (a JSON array) page by bytes as well as by
// count: the members that fit in ResponseBudget as they travel in the
// Lambda payload, and when some do not, X-Result-Cut and X-Next-Start
// (the start of the next page; start as ParsePage reads it). It reports
// false for bodies that are not collections.
func writeList(w http.ResponseWriter, r *http.Request, status int, body any) bool {
	coll, _ := body.(*Collection)
	if coll != nil {
		body = coll.Items
	}
	v := reflect.ValueOf(body)
	if v.Kind() != reflect.Slice || v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 {
		return false
	}
	buf := []byte{'['}
	size := 2
	n := 0
	for ; n < v.Len(); n++ {
		b, err := json.Marshal(v.Index(n).Interface())
		if err != nil {
			return false // WriteJSON reports it
		}
		c := jsontext.EnvelopeLen(b) + 1
		if size+c > jsontext.ResponseBudget && n > 0 {
			w.Header().Set(HeaderCut, CutBytes)
			if !r.URL.Query().Has(ParamCursor) {
				start, _ := strconv.Atoi(r.URL.Query().Get("start"))
				w.Header().Set(HeaderNextStart, strconv.Itoa(max(start, 1)+n))
			}
			if coll != nil {
				w.Header().Set(HeaderLink, coll.linkNext(r.URL.Path, n))
			}
			break
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf, size = append(buf, b...), size+c
	}
	buf = append(buf, ']')
	if coll != nil && n == v.Len() && coll.more {
		w.Header().Set(HeaderLink, coll.linkNext(r.URL.Path, n))
		if coll.cut != "" {
			w.Header().Set(HeaderCut, coll.cut)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf)
	return true
}

// noBody refuses a request body on a GET or DELETE.
func noBody(r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodDelete || r.Body == nil {
		return nil
	}
	var one [1]byte
	if n, _ := io.ReadFull(r.Body, one[:]); n > 0 {
		return domain.Errorf(domain.Invalid, "a %s request takes no body: send it without one", r.Method)
	}
	return nil
}
