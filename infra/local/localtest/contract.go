package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"cads/shared/openapi"
)

// Contract checks responses against the API's OpenAPI document
// (shared/openapi): the status must be declared for the operation, and the
// body and the declared headers must match it. A request that names no
// operation of the document (an unknown route, a refused spelling of a
// path) must still be answered with the API's error body. A request the
// platform accepted (2xx) must itself be valid against the document: its
// parameters, its body and its credential; one the document calls invalid
// that the code accepted means the two disagree.
type Contract struct {
	doc    *openapi3.T
	router routers.Router
	errors *openapi3.Schema
}

// LoadContract reads and validates the document.
func LoadContract(ctx context.Context) (*Contract, error) {
	doc, err := openapi3.NewLoader().LoadFromData([]byte(openapi.JSON()))
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	// Route by path alone: the local platform listens on a port of its
	// own, not at the document's server URLs.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the OpenAPI document: %w", err)
	}
	registerBinaryDecoders(doc)
	errs := doc.Components.Schemas["Error"]
	if errs == nil || errs.Value == nil {
		return nil, errors.New("the OpenAPI document has no Error schema")
	}
	return &Contract{doc: doc, router: router, errors: errs.Value}, nil
}

// Check returns why a response to req (status, header, body) breaks the
// contract, or nil.
func (c *Contract) Check(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	if status >= 400 {
		// Every error has the API's error body, whatever route it is on.
		if err := c.checkError(status, header, body); err != nil {
			return err
		}
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if status < 400 {
			return fmt.Errorf("answered %d on a route the document does not have: %v", status, err)
		}
		return nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(ctx, in)
}

// CheckRequest returns why req, whose body is body, is not a request the
// document describes, or nil.
func (c *Contract) CheckRequest(ctx context.Context, req *http.Request, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("the document has no operation for the request: %v", err)
	}
	r := req.Clone(ctx)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{MultiError: true, RejectWhenRequestBodyNotSpecified: true, AuthenticationFunc: credential}})
}

// credential checks that the request carries the credential a security
// scheme of the operation names (the authorizer checks its value).
func credential(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r := in.RequestValidationInput.Request
	switch s := in.SecurityScheme; {
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			return errors.New("no Authorization: Bearer header")
		}
	case s.Type == "apiKey" && s.In == "query":
		if !r.URL.Query().Has(s.Name) {
			return fmt.Errorf("no %s query parameter", s.Name)
		}
	default:
		return fmt.Errorf("security scheme %s: not checked here", in.SecuritySchemeName)
	}
	return nil
}

// registerBinaryDecoders lets kin-openapi read the request bodies the
// document declares as binary files (application test archives) as they
// are: it has decoders for JSON, forms and text only. Its decoders are
// a table of the library's own, so this registers them once per process.
func registerBinaryDecoders(doc *openapi3.T) {
	binaryOnce.Do(func() {
		for _, item := range doc.Paths.Map() {
			for _, op := range item.Operations() {
				if op.RequestBody == nil || op.RequestBody.Value == nil {
					continue
				}
				for ct, mt := range op.RequestBody.Value.Content {
					if mt.Schema != nil && mt.Schema.Value != nil && mt.Schema.Value.Format == "binary" && openapi3filter.RegisteredBodyDecoder(ct) == nil {
						openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
					}
				}
			}
		}
	})
}

var binaryOnce sync.Once

func (c *Contract) checkError(status int, header http.Header, body []byte) error {
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("error %d has Content-Type %q, not application/json", status, ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error %d: body is not JSON: %v", status, err)
	}
	if err := c.errors.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("error %d: body does not match the Error schema: %v", status, err)
	}
	if m, _ := v.(map[string]any); m["status"] != float64(status) {
		return fmt.Errorf("error %d: body says status %v", status, m["status"])
	}
	return nil
}

// Middleware checks every response h writes and reports a broken
// contract as a failure of t.
func (c *Contract) Middleware(t testing.TB) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// What the router needs of the request, taken before h reads it,
			// and its body, given back to h as it came.
			probe := &http.Request{Method: r.Method, URL: r.URL, Header: r.Header.Clone(), Host: r.Host, RequestURI: r.RequestURI}
			var reqBody []byte
			if r.Body != nil {
				var err error
				if reqBody, err = io.ReadAll(r.Body); err != nil {
					t.Errorf("OpenAPI contract: %s %s: read the request body: %v", r.Method, r.URL.RequestURI(), err)
				}
				_ = r.Body.Close()
				r.Body = io.NopCloser(bytes.NewReader(reqBody))
			}
			rec := &recorder{ResponseWriter: w}
			h.ServeHTTP(rec, r)
			if rec.status == 0 {
				rec.status = http.StatusOK
			}
			report := func(what string, err error) {
				msg := err.Error()
				if len(msg) > 3000 {
					msg = msg[:3000] + "..."
				}
				t.Errorf("OpenAPI contract (%s): %s %s -> %d: %s", what, r.Method, r.URL.RequestURI(), rec.status, msg)
			}
			if err := c.Check(r.Context(), probe, rec.status, w.Header(), rec.body.Bytes()); err != nil {
				report("response", err)
			}
			if rec.status >= 200 && rec.status < 300 {
				if err := c.CheckRequest(r.Context(), probe, reqBody); err != nil {
					report("accepted request", err)
				}
			}
		})
	}
}

// recorder passes a response through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// ReadFrom keeps io.Copy on the recorder rather than around it.
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{r}, src)
}
