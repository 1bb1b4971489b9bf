package apigw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"cads/shared/caller"
	"cads/shared/domain"

	"github.com/aws/aws-lambda-go/events"
)

// Handle renders results through the real proxy adapter: JSON, binary
// bodies, errors in the API body, and refuses a key with no account where
// the endpoint needs one.
func TestHandle(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := NewMux()
	mux.HandleFunc("GET /v2/json", Handle(log, func(r *http.Request, p caller.Principal) (int, any, error) {
		return 200, map[string]string{"who": p.ID}, nil
	}))
	mux.HandleFunc("GET /v2/bin", HandleInAccount(log, func(r *http.Request, p caller.Principal) (int, any, error) {
		return 200, &Binary{ContentType: "application/zip", Filename: "a.zip", Data: []byte{0xff, 0xfe, 0}}, nil
	}))
	mux.HandleFunc("GET /v2/err", Handle(log, func(r *http.Request, p caller.Principal) (int, any, error) {
		return 0, nil, domain.Errorf(domain.Conflict, "taken")
	}))
	h := Lambda(log, mux)
	call := func(path string, p *caller.Principal) events.APIGatewayProxyResponse {
		req := events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: path}
		if p != nil {
			req.RequestContext.Authorizer = p.Context()
		}
		resp, err := h(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	in := &caller.Principal{ID: "u1", AccountID: "a1", KeyID: "k1"}
	nowhere := &caller.Principal{ID: "u1", KeyID: "k1"}
	if r := call("/v2/json", in); r.StatusCode != 200 || r.Body != `{"who":"u1"}` {
		t.Fatalf("json: %+v", r)
	}
	// Bytes that are not UTF-8 travel base64-encoded, as API Gateway needs.
	if r := call("/v2/bin", in); r.StatusCode != 200 || !r.IsBase64Encoded || r.Body != "//4A" || r.MultiValueHeaders["Content-Disposition"][0] != "attachment; filename=a.zip" {
		t.Fatalf("binary: %+v", r)
	}
	if r := call("/v2/bin", nowhere); r.StatusCode != 403 {
		t.Fatalf("no account: %+v", r)
	}
	if r := call("/v2/err", in); r.StatusCode != 409 || r.Body != `{"status":409,"error":{"type":"conflict","message":"taken"}}` {
		t.Fatalf("error: %+v", r)
	}
	if r := call("/v2/json", nil); r.StatusCode != 401 {
		t.Fatalf("no principal: %+v", r)
	}
	if r := call("/v2/json/", in); r.StatusCode != 400 {
		t.Fatalf("non-canonical path: %+v", r)
	}
	// A GET with a body: refused, not ignored as if it had been applied.
	for _, body := range []string{"null", "{}", " "} {
		req := events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/v2/json", Body: body, RequestContext: events.APIGatewayProxyRequestContext{Authorizer: in.Context()}}
		r, err := h(context.Background(), req)
		if err != nil || r.StatusCode != 400 || !strings.Contains(r.Body, "takes no body") {
			t.Fatalf("GET with body %q: %+v %v", body, r, err)
		}
	}
}

// WriteError renders a domain error by its code, even wrapped, with the
// status and type of the error table; the message of an internal error and
// any error without a code stays in the log.
func TestWriteErrorMapsKnownErrors(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		err    error
		status int
		body   string
	}{
		{fmt.Errorf("create: %w", domain.Errorf(domain.Conflict, "name taken")), 409, `{"status":409,"error":{"type":"conflict","message":"name taken"}}`},
		{fmt.Errorf("get: %w", domain.IfNotFound(domain.ErrNotFound, "no such thing")), 404, `{"status":404,"error":{"type":"not_found","message":"no such thing"}}`},
		{domain.Errorf(domain.Invalid, "bad name"), 400, `{"status":400,"error":{"type":"bad_request","message":"bad name"}}`},
		{domain.Errorf(domain.Unauthorized, "no key"), 401, `{"status":401,"error":{"type":"unauthorized","message":"no key"}}`},
		{domain.Errorf(domain.Forbidden, "not yours"), 403, `{"status":403,"error":{"type":"forbidden","message":"not yours"}}`},
		{domain.Errorf(domain.TooLarge, "too big"), 413, `{"status":413,"error":{"type":"payload_too_large","message":"too big"}}`},
		{domain.Errorf(domain.Unsupported, "not xml"), 415, `{"status":415,"error":{"type":"unsupported_media_type","message":"not xml"}}`},
		{domain.Throttle(errors.New("slow down")), 429, `{"status":429,"error":{"type":"too_many_requests","message":"the service is busy; retry after a second"}}`},
		{&domain.Error{Code: domain.Internal, Message: "secret internals"}, 500, `{"status":500,"error":{"type":"internal","message":"internal error; the request id identifies it in the service logs"}}`},
		{domain.Errorf("no_such_code", "secret internals"), 500, `{"status":500,"error":{"type":"internal","message":"internal error; the request id identifies it in the service logs"}}`},
		{errors.New("secret internals"), 500, `{"status":500,"error":{"type":"internal","message":"internal error; the request id identifies it in the service logs"}}`},
	} {
		w := httptest.NewRecorder()
		WriteError(context.Background(), log, w, c.err)
		if w.Code != c.status || w.Body.String() != c.body {
			t.Errorf("%v: %d %s, want %d %s", c.err, w.Code, w.Body.String(), c.status, c.body)
		}
		if got := Status(c.err); got != c.status {
			t.Errorf("Status(%v) = %d, want %d", c.err, got, c.status)
		}
		if retry := w.Header().Get("Retry-After"); (retry == "1") != (c.status == 429) {
			t.Errorf("%v: Retry-After %q", c.err, retry)
		}
	}
}
