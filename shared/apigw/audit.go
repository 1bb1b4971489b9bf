package apigw

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"cads/shared/audit"
	"cads/shared/caller"
	"cads/shared/ids"
)

// DefaultAuditRetention is how long an audit event is kept when the
// deployment does not say (template.yaml's AuditRetentionDays).
const DefaultAuditRetention = 400 * 24 * time.Hour

// Differ is the JSON Patch from one JSON document to another
// (auditdiff.Patch): passed in, so that only the functions that record
// changes link a diff library.
type Differ func(from, to []byte) (json.RawMessage, error)

// WithAudit records every write request (POST, PUT, PATCH, DELETE) the
// function serves in st's audit trail, each event kept for retention
// (DefaultAuditRetention when 0; no trail when st is nil), a PATCH's or
// PUT's change as diff computes it, and logs the refusals (401, 403) it
// answers instead (docs/api.md, Audit events).
func WithAudit(st audit.Store, retention time.Duration, diff Differ) LambdaOption {
	if retention <= 0 {
		retention = DefaultAuditRetention
	}
	return func(c *lambdaConfig) {
		if st != nil {
			c.audit, c.auditRetention, c.auditDiff = st, retention, diff
		}
	}
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// secretFields are the members never recorded, at any depth: key secrets
// and action secret keys (uploaded archives are request bodies, which no
// event holds).
var secretFields = map[string]bool{"secret_key": true}

// auditing wraps h so that a write request carries its audit record to
// the store, which commits the event with the request's first change;
// once h answered, the event gets the status, the target and the change.
func auditing(h http.Handler, log *slog.Logger, st audit.Store, retention time.Duration, diff Differ) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isWrite(r.Method) {
			h.ServeHTTP(w, r)
			return
		}
		p, err := PrincipalFrom(r.Context())
		if err != nil {
			// The handler refuses the request itself.
			h.ServeHTTP(w, r)
			return
		}
		rec := newRecord(r, p, st.Now(), retention)
		var before []byte
		if r.Method == http.MethodPatch || r.Method == http.MethodPut {
			before = representation(h, r)
		}
		out := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(out, r.WithContext(audit.With(r.Context(), rec)))
		status := out.status
		ctx := context.WithoutCancel(r.Context())
		if status == http.StatusUnauthorized || status == http.StatusForbidden {
			ev := rec.Event
			ev.Status = &status
			audit.LogRefusal(ctx, log, ev)
		}
		if !rec.Changed() {
			return
		}
		if status >= 400 && status < 500 {
			if err := st.DropAudit(ctx, rec); err != nil {
				log.ErrorContext(ctx, "audit event of a refused request not removed", "error", err.Error(), "request_id", rec.Event.RequestID)
			}
			return
		}
		rec.Event.Status = &status
		complete(&rec.Event, r.Method, before, out.body.Bytes(), diff)
		if err := st.FinishAudit(ctx, rec); err != nil {
			// The event is committed with the change; only its answer
			// and change are missing.
			log.ErrorContext(ctx, "audit event not completed", "error", err.Error(), "request_id", rec.Event.RequestID)
		}
	})
}

func newRecord(r *http.Request, p caller.Principal, now time.Time, retention time.Duration) *audit.Record {
	rc, _ := core.GetAPIGatewayContextFromContext(r.Context())
	ev := audit.Event{ID: ids.New(), Time: now.UTC().Truncate(time.Millisecond), Actor: ActorOf(p),
		Method: r.Method, Path: r.URL.Path, Target: r.URL.Path,
		RequestID: rc.RequestID, SourceAddress: rc.Identity.SourceIP, UserAgent: rc.Identity.UserAgent}
	return &audit.Record{Event: ev, AccountID: p.Target, Ancestors: p.TargetAncestors, Expires: ev.Time.Add(retention)}
}

// ActorOf is who acted, as an audit event names them.
func ActorOf(p caller.Principal) audit.Actor {
	a := audit.Actor{Principal: "/v2/users/" + p.ID, Kind: p.Kind}
	if p.Kind == "service_user" {
		a.Principal = "/v2/accounts/" + p.AccountID + "/service-users/" + p.ID
	}
	a.Key = a.Principal + "/access-keys/" + p.KeyID
	if p.OriginKey != "" {
		a.OriginKey = "/v2/users/" + p.OriginPrincipal + "/access-keys/" + p.OriginKey
	}
	return a
}

// representation is the resource a PATCH or PUT is about to change, as a
// GET of its path answers it now (nil when there is none).
func representation(h http.Handler, r *http.Request) []byte {
	g := r.Clone(r.Context())
	g.Method, g.Body, g.ContentLength, g.Header = http.MethodGet, http.NoBody, 0, http.Header{}
	g.URL.RawQuery = ""
	out := &teeWriter{ResponseWriter: discard{}, status: http.StatusOK}
	h.ServeHTTP(out, g)
	if out.status != http.StatusOK {
		return nil
	}
	return out.body.Bytes()
}

// complete fills in what a change did: its target (the resource's href)
// and, without its secrets, the JSON Patch from before to after (PATCH,
// PUT of an existing resource) or the resource (POST, DELETE, PUT that
// created it).
func complete(ev *audit.Event, method string, before, after []byte, diff Differ) {
	res := scrub(after)
	if res == nil {
		return
	}
	var obj struct {
		Href string `json:"href"`
	}
	if json.Unmarshal(res, &obj) == nil && obj.Href != "" {
		ev.Target = obj.Href
	}
	if old := scrub(before); old != nil && diff != nil && (method == http.MethodPatch || method == http.MethodPut) {
		if p, err := diff(old, res); err == nil {
			ev.Patch = p
			return
		}
	}
	ev.Resource = res
}

// scrub is a JSON document without its secret members; nil for a body
// that is not JSON.
func scrub(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	out, err := json.Marshal(drop(v))
	if err != nil {
		return nil
	}
	return out
}

func drop(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if secretFields[k] {
				delete(t, k)
				continue
			}
			t[k] = drop(x)
		}
	case []any:
		for i, x := range t {
			t[i] = drop(x)
		}
	}
	return v
}

// teeWriter passes a response through and keeps its status and body.
type teeWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	body   bytes.Buffer
}

func (t *teeWriter) WriteHeader(code int) {
	if !t.wrote {
		t.status, t.wrote = code, true
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *teeWriter) Write(b []byte) (int, error) {
	t.wrote = true
	if t.body.Len() < 1<<20 {
		t.body.Write(b)
	}
	return t.ResponseWriter.Write(b)
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
