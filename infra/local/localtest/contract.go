package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/santhosh-tekuri/jsonschema/v6"

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
	doc     *openapi3.T
	router  routers.Router
	schemas *schemas
	// queryCredential is the query parameter that carries the credential
	// in place of the bearer header.
	queryCredential string
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
	schemas, err := newSchemas(openapi.JSON())
	if err != nil {
		return nil, err
	}
	if _, err := schemas.at(errorSchema); err != nil {
		return nil, fmt.Errorf("the OpenAPI document's Error schema: %w", err)
	}
	return &Contract{doc: doc, router: router, schemas: schemas, queryCredential: queryCredentialName(doc)}, nil
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
	if isPreflight(req, status, header) {
		return nil
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if status < 400 {
			return fmt.Errorf("answered %d on a route the document does not have: %v", status, err)
		}
		return nil
	}
	// kin-openapi checks the status and the headers; a JSON body is
	// checked here against the schema compiled once (kin-openapi compiles
	// a 3.1 document's schema again on every call: about a tenth of the
	// platform tests' CPU). Other bodies (archives, text) it checks itself.
	ptr, isJSON, err := c.bodySchema(route, status, header.Get("Content-Type"))
	if err != nil {
		return err
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: isJSON},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil || !isJSON {
		return err
	}
	if err := c.schemas.validate(ptr, body); err != nil {
		return fmt.Errorf("response body doesn't match the schema at %s: %w", ptr, err)
	}
	return nil
}

// bodySchema is the JSON pointer, in the document, of the schema a
// response to route with status and Content-Type contentType must match,
// and whether that body is JSON. No pointer (and no error) means the
// document declares no schema, or kin-openapi will refuse the response
// itself (an undeclared status or Content-Type).
func (c *Contract) bodySchema(route *routers.Route, status int, contentType string) (string, bool, error) {
	responses := route.Operation.Responses
	ref := responses.Status(status)
	if ref == nil {
		ref = responses.Default()
	}
	if ref == nil || ref.Value == nil {
		return "", false, nil
	}
	mt := ref.Value.Content.Get(contentType)
	if mt == nil || mt.Schema == nil {
		return "", false, nil
	}
	media, _, _ := strings.Cut(contentType, ";")
	media = strings.TrimSpace(strings.ToLower(media))
	if media != "application/json" && !strings.HasSuffix(media, "+json") {
		return "", false, nil
	}
	if mt.Schema.Ref != "" {
		return strings.TrimPrefix(mt.Schema.Ref, "#"), true, nil
	}
	// An inline schema: its place under the response, which is itself
	// either a component or inline under the operation.
	at := strings.TrimPrefix(ref.Ref, "#")
	if ref.Ref == "" {
		// Its key by identity: Status matched it exactly, by class
		// ("4XX") or as the default.
		key := ""
		for k, v := range responses.Map() {
			if v == ref {
				key = k
			}
		}
		at = "/paths/" + pointerToken(route.Path) + "/" + strings.ToLower(route.Method) + "/responses/" + pointerToken(key)
	}
	for k, v := range ref.Value.Content {
		if v == mt {
			return at + "/content/" + pointerToken(k) + "/schema", true, nil
		}
	}
	return "", false, fmt.Errorf("the document's media type for %q is not under its response", contentType)
}

// pointerToken escapes s as one token of a JSON pointer (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// errorSchema is where the document keeps the API's error body.
const errorSchema = "/components/schemas/Error"

// schemas compiles the document's schemas with JSON Schema 2020-12 (an
// OpenAPI 3.1 document's dialect), each once, found by JSON pointer; the
// document's own $refs resolve within it. Formats are asserted.
type schemas struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	byPtr    map[string]*jsonschema.Schema
}

// docURL names the document for the compiler; nothing is fetched.
const docURL = "https://contract.invalid/openapi.json"

func newSchemas(document string) (*schemas, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(document))
	if err != nil {
		return nil, fmt.Errorf("read the OpenAPI document as JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, doc); err != nil {
		return nil, fmt.Errorf("add the OpenAPI document to the schema compiler: %w", err)
	}
	return &schemas{compiler: c, byPtr: map[string]*jsonschema.Schema{}}, nil
}

// at is the compiled schema at ptr.
func (s *schemas) at(ptr string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.byPtr[ptr]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(docURL + "#" + ptr)
	if err != nil {
		return nil, fmt.Errorf("compile the schema at %s: %w", ptr, err)
	}
	s.byPtr[ptr] = sch
	return sch, nil
}

// validate checks the JSON text body against the schema at ptr.
func (s *schemas) validate(ptr string, body []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return s.validateValue(ptr, v)
}

// validateValue checks v, as jsonschema.UnmarshalJSON reads JSON text
// (numbers as json.Number), against the schema at ptr.
func (s *schemas) validateValue(ptr string, v any) error {
	sch, err := s.at(ptr)
	if err != nil {
		return err
	}
	return sch.Validate(v)
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
		Options: &openapi3filter.Options{MultiError: true, RejectWhenRequestBodyNotSpecified: true, AuthenticationFunc: c.credential}})
}

// credential checks that the request carries the credential a security
// scheme of the operation names (the authorizer checks its value). The
// document requires the bearer header alone, so that generated clients
// send it and nothing else; the query credential, which the server takes
// in its place (docs/api.md#credentials), is a scheme the document lists
// outside its requirements, and satisfies the bearer requirement here.
func (c *Contract) credential(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r := in.RequestValidationInput.Request
	switch s := in.SecurityScheme; {
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			return nil
		}
		if c.queryCredential != "" && r.URL.Query().Has(c.queryCredential) {
			return nil
		}
		return errors.New("no Authorization: Bearer header (nor the query credential)")
	case s.Type == "apiKey" && s.In == "query":
		if !r.URL.Query().Has(s.Name) {
			return fmt.Errorf("no %s query parameter", s.Name)
		}
	default:
		return fmt.Errorf("security scheme %s: not checked here", in.SecuritySchemeName)
	}
	return nil
}

// queryCredentialName is the query parameter of the document's apiKey
// scheme in the query, or "" when it has none.
func queryCredentialName(doc *openapi3.T) string {
	if doc.Components == nil {
		return ""
	}
	for _, s := range doc.Components.SecuritySchemes {
		if s.Value != nil && s.Value.Type == "apiKey" && s.Value.In == "query" {
			return s.Value.Name
		}
	}
	return ""
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
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("error %d: body is not JSON: %v", status, err)
	}
	if err := c.schemas.validateValue(errorSchema, v); err != nil {
		return fmt.Errorf("error %d: body does not match the Error schema: %v", status, err)
	}
	if m, _ := v.(map[string]any); m["status"] != json.Number(strconv.Itoa(status)) {
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
			if rec.status >= 200 && rec.status < 300 && !isPreflight(r, rec.status, w.Header()) {
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

// isPreflight tells a CORS preflight's answer: API Gateway's mock
// integration gives it (template.yaml, Cors), and it is no operation of
// the API.
func isPreflight(req *http.Request, status int, header http.Header) bool {
	return req.Method == http.MethodOptions && status < 400 && header.Get("Access-Control-Allow-Methods") != ""
}
