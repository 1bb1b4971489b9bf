// Package gateway is a local stand-in for the API's API Gateway REST API: it
// serves HTTP (net/http), routes requests like the REST API, runs the Lambda
// REQUEST authorizer and the proxy-integration functions in-process with the
// real aws-lambda-go event types (each passed through JSON both ways, as on
// AWS) and renders the configured gateway responses.
//
// The gateway serves the API's paths without the stage prefix (/v2/...); to
// serve them under /{stage}, mount it with http.StripPrefix.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Route is one method on one resource of the REST API.
type Route struct {
	Method     string // GET, POST, ..., or ANY
	Path       string // template path, e.g. /v2/users/{id}/access-keys/{key_id}; {name+} is greedy
	Function   string // key into Config.Functions; "" with Mock
	Authorized bool   // the REQUEST authorizer runs before the function
	// Mock, when set, is a mock integration: the gateway answers itself,
	// whatever the request (SAM's CORS preflights).
	Mock *Mock
}

// Mock is a mock integration's fixed response.
type Mock struct {
	Status  int // 0: 200
	Headers map[string]string
	Body    string
}

// Response is a gateway response (the template's GatewayResponses entry).
// Template may use $context.authorizer.<key>, $context.error.message,
// $context.error.messageString, $context.requestId and the other $context
// request variables.
type Response struct {
	Status   int // 0: the response type's default status
	Headers  map[string]string
	Template string // "" : the built-in API error body
}

// ProxyHandler is a Lambda proxy-integration function.
type ProxyHandler func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// AuthorizerHandler is a Lambda REQUEST authorizer.
type AuthorizerHandler func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error)

// Config describes the API. The caller converts the SAM template into it.
type Config struct {
	Routes     []Route
	Functions  map[string]ProxyHandler // by Route.Function
	Authorizer AuthorizerHandler
	// BinaryMediaTypes are the API's binaryMediaTypes: "multipart/form-data",
	// "application/*", "*/*". The SAM spelling "multipart~1form-data" is
	// accepted too.
	BinaryMediaTypes []string
	// Responses are the gateway responses by type (UNAUTHORIZED,
	// ACCESS_DENIED, AUTHORIZER_FAILURE, MISSING_AUTHENTICATION_TOKEN,
	// REQUEST_TOO_LARGE, DEFAULT_4XX, DEFAULT_5XX, ...). A type without an
	// entry falls back to DEFAULT_4XX/DEFAULT_5XX, then to the built-in body
	// {"status":N,"error":{"type":...,"message":...}}.
	Responses map[string]Response
	// Stage, APIID, AccountID and Region go into method ARNs and request
	// contexts. Defaults: "local", "localapi", "000000000000", "us-east-1".
	Stage, APIID, AccountID, Region string
	// MaxBodyBytes bounds request bodies (REQUEST_TOO_LARGE); default
	// 10 MiB, API Gateway's limit.
	MaxBodyBytes int
	// FunctionTimeouts are the functions' Lambda Timeouts by
	// Route.Function: the invocation's context deadline, and a function
	// still running then has failed (502, through DEFAULT_5XX), as a Lambda
	// timeout is a function error. Absent or 0: no deadline.
	FunctionTimeouts map[string]time.Duration
	// IntegrationTimeout is how long the gateway waits for a function
	// before it answers INTEGRATION_TIMEOUT (504) while the function goes
	// on running; default (and API Gateway's maximum) 29 s. Tests shorten it.
	IntegrationTimeout time.Duration
	Logger             *slog.Logger // default slog.Default()
}

// DefaultIntegrationTimeout is API Gateway's integration timeout for REST
// APIs, the most a Lambda proxy integration may take.
const DefaultIntegrationTimeout = 29 * time.Second

// DefaultMaxBodyBytes is API Gateway's REST API payload limit.
const DefaultMaxBodyBytes = 10 << 20

// Lambda's synchronous invocation payload limits: a bigger event is refused
// by Lambda, which API Gateway answers with a 413 (docs/hardening.md,
// Budgets: rendered here as the REQUEST_TOO_LARGE gateway response); a
// bigger response fails the integration (502).
const (
	LambdaMaxRequestBytes  = 6 << 20
	LambdaMaxResponseBytes = 6<<20 + 100
)

// Gateway is an http.Handler standing in for the REST API.
type Gateway struct {
	cfg    Config
	root   *node
	binary []string
	log    *slog.Logger
}

// New checks cfg and builds the gateway. It refuses what API Gateway would
// refuse: sibling path parameters with different names, a greedy parameter
// that is not last, duplicate method+path, unknown methods, routes whose
// function has no handler, authorized routes without an authorizer.
func New(cfg Config) (*Gateway, error) {
	if cfg.Stage == "" {
		cfg.Stage = "local"
	}
	if cfg.APIID == "" {
		cfg.APIID = "localapi"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "000000000000"
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.IntegrationTimeout <= 0 {
		cfg.IntegrationTimeout = DefaultIntegrationTimeout
	}
	cfg.FunctionTimeouts = maps.Clone(cfg.FunctionTimeouts)
	// Own copies: the caller may reuse its maps.
	cfg.Functions = maps.Clone(cfg.Functions)
	cfg.Responses = maps.Clone(cfg.Responses)
	g := &Gateway{cfg: cfg, root: newNode("/"), log: cfg.Logger}
	if g.log == nil {
		g.log = slog.Default()
	}
	var errs []error
	for _, r := range cfg.Routes {
		m := strings.ToUpper(strings.TrimSpace(r.Method))
		if !validMethods[m] {
			errs = append(errs, fmt.Errorf("route %s %s: unsupported method %q", r.Method, r.Path, r.Method))
			continue
		}
		h := cfg.Functions[r.Function]
		if h == nil && r.Mock == nil {
			errs = append(errs, fmt.Errorf("route %s %s: function %q has no handler", m, r.Path, r.Function))
			continue
		}
		if r.Authorized && cfg.Authorizer == nil {
			errs = append(errs, fmt.Errorf("route %s %s: authorized, but no authorizer is configured", m, r.Path))
			continue
		}
		rt := &route{method: m, resource: r.Path, function: r.Function, authorized: r.Authorized, handler: h, mock: r.Mock}
		if err := g.root.add(rt); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range cfg.BinaryMediaTypes {
		t = strings.ToLower(strings.TrimSpace(strings.ReplaceAll(t, "~1", "/")))
		if t == "" {
			continue
		}
		if _, err := path.Match(t, "a/b"); err != nil {
			errs = append(errs, fmt.Errorf("binary media type %q: %w", t, err))
			continue
		}
		g.binary = append(g.binary, t)
	}
	for k, r := range cfg.Responses {
		if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
			errs = append(errs, fmt.Errorf("gateway response %s: invalid status %d", k, r.Status))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g, nil
}

// isBinary reports whether a Content-Type (or Accept) value matches the
// API's binary media types.
func (g *Gateway) isBinary(contentType string) bool {
	mt := contentType
	if parsed, _, err := mime.ParseMediaType(contentType); err == nil {
		mt = parsed
	} else if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt == "" {
		return false
	}
	for _, p := range g.binary {
		if ok, _ := path.Match(p, mt); ok {
			return true
		}
	}
	return false
}

// exchange is the state of one request, for the response and the log line.
type exchange struct {
	start      time.Time
	requestID  string
	rawPath    string
	route      *route
	auth       string // none | allow | deny | unauthorized | error
	principal  string
	status     int
	errText    string // logged only
	notes      []string
	tc         templateContext
	authorizer map[string]any // for $context.authorizer in gateway responses
}

// ServeHTTP handles one request as the REST API would.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	x := &exchange{start: now, requestID: newUUID(), auth: "none"}
	x.rawPath = r.URL.EscapedPath()
	if x.rawPath == "" {
		x.rawPath = "/"
	}
	x.tc = templateContext{
		requestID:         x.requestID,
		extendedRequestID: newExtendedID(),
		stage:             g.cfg.Stage,
		apiID:             g.cfg.APIID,
		accountID:         g.cfg.AccountID,
		httpMethod:        r.Method,
		path:              "/" + g.cfg.Stage + x.rawPath,
		domainName:        r.Host,
		protocol:          r.Proto,
		requestTime:       now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
		requestTimeEpoch:  now.UnixMilli(),
		sourceIP:          clientIP(r),
		userAgent:         r.UserAgent(),
	}
	w.Header().Set("x-amzn-RequestId", x.requestID)
	defer g.logExchange(r, x)
	// The function runs to completion even if the client goes away, as a
	// Lambda invocation does.
	ctx := context.WithoutCancel(r.Context())

	// 1. Body size and route.
	if r.ContentLength > int64(g.cfg.MaxBodyBytes) {
		g.fail(w, x, gwError{kind: RespRequestTooLarge, message: "Request Too Long"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(g.cfg.MaxBodyBytes)+1))
	if err != nil {
		x.errText = "reading request body: " + err.Error()
		g.fail(w, x, gwError{kind: RespBadRequestBody, message: "Invalid request body"})
		return
	}
	if len(body) > g.cfg.MaxBodyBytes {
		g.fail(w, x, gwError{kind: RespRequestTooLarge, message: "Request Too Long"})
		return
	}
	rt, params := g.root.match(r.Method, x.rawPath)
	if rt == nil {
		g.fail(w, x, gwError{kind: RespMissingAuthToken, message: "Missing Authentication Token"})
		return
	}
	x.route = rt
	x.tc.resourcePath = rt.resource

	in := g.requestParts(r, x, params)

	// 2. Authorizer.
	var authz *authorization
	if rt.authorized {
		var gerr *gwError
		authz, gerr = g.authorize(ctx, r, x, rt, in)
		if gerr != nil {
			g.fail(w, x, *gerr)
			return
		}
	}

	// 3. Integration.
	if rt.mock != nil {
		g.answerMock(w, x, rt.mock)
		return
	}
	g.invoke(ctx, w, r, x, rt, in, body, authz)
}

// answerMock writes a mock integration's response.
func (g *Gateway) answerMock(w http.ResponseWriter, x *exchange, m *Mock) {
	status := m.Status
	if status == 0 {
		status = http.StatusOK
	}
	h := w.Header()
	for k, v := range m.Headers {
		h.Set(k, v)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(m.Body)))
	x.status = status
	w.WriteHeader(status)
	_, _ = io.WriteString(w, m.Body)
}

// requestParts are the parts shared by the authorizer and proxy events.
type requestParts struct {
	headers     map[string]string
	mvHeaders   map[string][]string
	query       map[string]string
	mvQuery     map[string][]string
	pathParams  map[string]string
	methodArn   string
	rcPath      string
	sourceIP    string
	userAgent   string
	requestTime string
	epoch       int64
}

func (g *Gateway) requestParts(r *http.Request, x *exchange, params map[string]string) requestParts {
	p := requestParts{pathParams: params, sourceIP: x.tc.sourceIP, userAgent: r.UserAgent(),
		requestTime: x.tc.requestTime, epoch: x.tc.requestTimeEpoch, rcPath: x.tc.path}
	p.mvHeaders = map[string][]string{}
	for k, vs := range r.Header {
		p.mvHeaders[k] = append([]string(nil), vs...)
	}
	if r.Host != "" {
		p.mvHeaders["Host"] = []string{r.Host}
	}
	xff := x.tc.sourceIP
	if prev := r.Header.Values("X-Forwarded-For"); len(prev) > 0 {
		xff = strings.Join(prev, ", ") + ", " + xff
	}
	p.mvHeaders["X-Forwarded-For"] = []string{xff}
	proto, port := "http", "80"
	if r.TLS != nil {
		proto, port = "https", "443"
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, pt, err := net.SplitHostPort(la.String()); err == nil {
			port = pt
		}
	}
	p.mvHeaders["X-Forwarded-Proto"] = []string{proto}
	p.mvHeaders["X-Forwarded-Port"] = []string{port}
	p.headers = map[string]string{}
	for k, vs := range p.mvHeaders {
		p.headers[k] = vs[len(vs)-1]
	}
	p.query, p.mvQuery = parseQuery(r.URL.RawQuery)
	// METHOD and the request's path as received, e.g. .../api/GET/v2/users/u1
	p.methodArn = fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/%s/%s%s",
		g.cfg.Region, g.cfg.AccountID, g.cfg.APIID, g.cfg.Stage, r.Method, x.rawPath)
	return p
}

// parseQuery splits a raw query like API Gateway: values URL-decoded with
// '+' as space; the single-value map keeps the last value. Both maps are nil
// when there is no parameter (JSON null, as on AWS).
func parseQuery(raw string) (map[string]string, map[string][]string) {
	var single map[string]string
	var multi map[string][]string
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		k, v = unescapeQuery(k), unescapeQuery(v)
		if multi == nil {
			single, multi = map[string]string{}, map[string][]string{}
		}
		multi[k] = append(multi[k], v)
		single[k] = v
	}
	return single, multi
}

func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// authorize runs the REQUEST authorizer and evaluates its policy. A nil
// *gwError means the request is allowed.
func (g *Gateway) authorize(ctx context.Context, r *http.Request, x *exchange, rt *route, in requestParts) (*authorization, *gwError) {
	req := events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type:                            "REQUEST",
		MethodArn:                       in.methodArn,
		Resource:                        rt.resource,
		Path:                            x.rawPath,
		HTTPMethod:                      r.Method,
		Headers:                         in.headers,
		MultiValueHeaders:               in.mvHeaders,
		QueryStringParameters:           in.query,
		MultiValueQueryStringParameters: in.mvQuery,
		PathParameters:                  in.pathParams,
		StageVariables:                  nil,
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
			Path:         in.rcPath,
			AccountID:    g.cfg.AccountID,
			ResourceID:   rt.resourceID,
			Stage:        g.cfg.Stage,
			RequestID:    x.requestID,
			Identity:     events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: in.sourceIP},
			ResourcePath: rt.resource,
			HTTPMethod:   r.Method,
			APIID:        g.cfg.APIID,
		},
	}
	// API Gateway answers a failed authorizer with {"message":null}.
	failure := &gwError{kind: RespAuthorizerFailure, nullMessage: true}
	var decoded events.APIGatewayCustomAuthorizerRequestTypeRequest
	if err := jsonRoundTrip(req, &decoded); err != nil {
		x.auth, x.errText = "error", "encoding authorizer event: "+err.Error()
		return nil, failure
	}
	lctx := lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       newUUID(),
		InvokedFunctionArn: fmt.Sprintf("arn:aws:lambda:%s:%s:function:authorizer", g.cfg.Region, g.cfg.AccountID),
	})
	out, err := callAuthorizer(lctx, g.cfg.Authorizer, decoded)
	if err != nil {
		if err.Error() == "Unauthorized" {
			x.auth = "unauthorized"
			return nil, &gwError{kind: RespUnauthorized, message: "Unauthorized"}
		}
		x.auth, x.errText = "error", "authorizer: "+err.Error()
		return nil, failure
	}
	raw, err := json.Marshal(out)
	if err != nil {
		x.auth, x.errText = "error", "encoding authorizer response: "+err.Error()
		return nil, failure
	}
	authz, err := parseAuthorizerOutput(raw)
	if err != nil {
		x.auth, x.errText = "error", err.Error()
		return nil, failure
	}
	x.principal = authz.principalID
	x.authorizer = map[string]any{"principalId": authz.principalID}
	for k, v := range authz.context {
		x.authorizer[k] = v
	}
	switch authz.policy.evaluate(in.methodArn) {
	case allow:
		x.auth = "allow"
		return authz, nil
	case explicitDeny:
		x.auth = "deny"
		return nil, &gwError{kind: RespAccessDenied, message: "User is not authorized to access this resource with an explicit deny", authorizer: x.authorizer}
	default:
		x.auth = "deny"
		return nil, &gwError{kind: RespAccessDenied, message: "User is not authorized to access this resource", authorizer: x.authorizer}
	}
}

func callAuthorizer(ctx context.Context, h AuthorizerHandler, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (resp events.APIGatewayCustomAuthorizerResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return h(ctx, req)
}

func callFunction(ctx context.Context, h ProxyHandler, req events.APIGatewayProxyRequest) (resp events.APIGatewayProxyResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return h(ctx, req)
}

// invoke calls the route's function and writes its response.
func (g *Gateway) invoke(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, rt *route, in requestParts, body []byte, authz *authorization) {
	req := events.APIGatewayProxyRequest{
		Resource:                        rt.resource,
		Path:                            x.rawPath,
		HTTPMethod:                      r.Method,
		Headers:                         in.headers,
		MultiValueHeaders:               in.mvHeaders,
		QueryStringParameters:           in.query,
		MultiValueQueryStringParameters: in.mvQuery,
		PathParameters:                  in.pathParams,
		StageVariables:                  nil,
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID:         g.cfg.AccountID,
			ResourceID:        rt.resourceID,
			Stage:             g.cfg.Stage,
			DomainName:        r.Host,
			DomainPrefix:      domainPrefix(r.Host),
			RequestID:         x.requestID,
			ExtendedRequestID: x.tc.extendedRequestID,
			Protocol:          r.Proto,
			Identity:          events.APIGatewayRequestIdentity{SourceIP: in.sourceIP, UserAgent: in.userAgent},
			ResourcePath:      rt.resource,
			Path:              in.rcPath,
			HTTPMethod:        r.Method,
			RequestTime:       in.requestTime,
			RequestTimeEpoch:  in.epoch,
			APIID:             g.cfg.APIID,
		},
	}
	if authz != nil {
		a := map[string]any{}
		for k, v := range authz.context {
			a[k] = v
		}
		a["principalId"] = authz.principalID
		a["integrationLatency"] = int(time.Since(x.start).Milliseconds())
		req.RequestContext.Authorizer = a
	}
	if g.isBinary(r.Header.Get("Content-Type")) {
		req.Body = base64.StdEncoding.EncodeToString(body)
		req.IsBase64Encoded = true
	} else {
		// Non-binary bodies go through JSON as text: invalid UTF-8 is
		// mangled exactly as on AWS.
		req.Body = string(body)
	}

	internal := gwError{kind: respNone, status: http.StatusBadGateway, message: "Internal server error"}
	event, err := json.Marshal(req)
	if err != nil {
		x.errText = "encoding proxy event: " + err.Error()
		g.fail(w, x, internal)
		return
	}
	if len(event) > LambdaMaxRequestBytes {
		// The event is the body plus headers and context, the body
		// JSON-escaped or, for binary media types, base64 (4/3).
		x.errText = fmt.Sprintf("proxy event is %d bytes (body %d); Lambda refuses synchronous payloads over %d bytes", len(event), len(body), LambdaMaxRequestBytes)
		g.fail(w, x, gwError{kind: RespRequestTooLarge, message: "Request Too Long"})
		return
	}
	var decoded events.APIGatewayProxyRequest
	if err := json.Unmarshal(event, &decoded); err != nil {
		x.errText = "decoding proxy event: " + err.Error()
		g.fail(w, x, internal)
		return
	}
	resp, err, timedOut := g.call(ctx, x, rt, decoded)
	if timedOut {
		g.fail(w, x, gwError{kind: RespIntegrationTimeout, message: "Endpoint request timed out"})
		return
	}
	if err != nil {
		x.errText = "function " + rt.function + ": " + err.Error()
		g.fail(w, x, internal)
		return
	}
	rawResp, err := json.Marshal(resp)
	if err != nil {
		x.errText = "encoding function response: " + err.Error()
		g.fail(w, x, internal)
		return
	}
	if len(rawResp) > LambdaMaxResponseBytes {
		x.errText = fmt.Sprintf("function response is %d bytes; over Lambda's %d-byte limit", len(rawResp), LambdaMaxResponseBytes)
		g.fail(w, x, internal)
		return
	}
	var out events.APIGatewayProxyResponse
	if err := json.Unmarshal(rawResp, &out); err != nil {
		x.errText = "decoding function response: " + err.Error()
		g.fail(w, x, internal)
		return
	}
	if out.StatusCode < 200 || out.StatusCode > 599 {
		x.errText = fmt.Sprintf("malformed Lambda proxy response: statusCode %d", out.StatusCode)
		g.fail(w, x, internal)
		return
	}
	respBody := []byte(out.Body)
	// API Gateway turns a base64 body back into bytes only when the first
	// media type of the request's Accept header is a binary media type; the
	// response's own Content-Type does not count. Otherwise the client gets
	// the base64 text.
	if accept := firstAccept(r.Header.Get("Accept")); out.IsBase64Encoded && g.isBinary(accept) {
		respBody, err = base64.StdEncoding.DecodeString(out.Body)
		if err != nil {
			// API Gateway counts a failed decoding as a configuration error.
			x.errText = "isBase64Encoded body is not base64: " + err.Error()
			g.fail(w, x, gwError{kind: RespAPIConfigurationError, message: "Internal server error"})
			return
		}
	} else if out.IsBase64Encoded {
		x.notes = append(x.notes, fmt.Sprintf("base64 response sent as text: the request's first Accept type %q matches no binaryMediaType", accept))
	}
	h := w.Header()
	for k, v := range mergeHeaders(out.Headers, out.MultiValueHeaders) {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Connection":
			continue
		}
		h[http.CanonicalHeaderKey(k)] = v
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(respBody)))
	x.status = out.StatusCode
	w.WriteHeader(out.StatusCode)
	_, _ = w.Write(respBody)
}

// call invokes the route's function as a Lambda proxy integration: with
// the function's Timeout as its context deadline, and waiting at most the
// integration timeout. timedOut means the gateway gave up first (504); a
// function past its own Timeout has failed (err), as on Lambda. A function
// still running when the gateway answers goes on in the background, as it
// would on Lambda, and its end is logged.
func (g *Gateway) call(ctx context.Context, x *exchange, rt *route, req events.APIGatewayProxyRequest) (resp events.APIGatewayProxyResponse, err error, timedOut bool) {
	timeout := g.cfg.FunctionTimeouts[rt.function]
	fctx := lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       newUUID(),
		InvokedFunctionArn: fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", g.cfg.Region, g.cfg.AccountID, rt.function),
	})
	cancel := context.CancelFunc(func() {})
	if timeout > 0 {
		fctx, cancel = context.WithTimeout(fctx, timeout)
	}
	began := time.Now()
	done := make(chan invocation, 1)
	go func() {
		defer cancel()
		resp, err := callFunction(fctx, rt.handler, req)
		if err == nil && errors.Is(fctx.Err(), context.DeadlineExceeded) {
			// Lambda would have stopped it at its Timeout.
			err = fmt.Errorf("Task timed out after %.2f seconds", timeout.Seconds())
		}
		done <- invocation{resp, err}
	}()
	gwTimer := time.NewTimer(g.cfg.IntegrationTimeout)
	defer gwTimer.Stop()
	// With a Timeout at or above the integration timeout the gateway gives
	// up first: 504, never the function's own timeout.
	var fnTimeout <-chan time.Time
	if timeout > 0 && timeout < g.cfg.IntegrationTimeout {
		t := time.NewTimer(timeout)
		defer t.Stop()
		fnTimeout = t.C
	}
	select {
	case r := <-done:
		return r.resp, r.err, false
	case <-fnTimeout:
		g.logLate(x, rt, began, done)
		return resp, fmt.Errorf("Task timed out after %.2f seconds", timeout.Seconds()), false
	case <-gwTimer.C:
		x.errText = fmt.Sprintf("integration timeout: function %s did not answer within %v; it goes on running", rt.function, g.cfg.IntegrationTimeout)
		g.logLate(x, rt, began, done)
		return resp, nil, true
	}
}

// invocation is what a function returned.
type invocation struct {
	resp events.APIGatewayProxyResponse
	err  error
}

// logLate logs the end of a function the gateway stopped waiting for.
func (g *Gateway) logLate(x *exchange, rt *route, began time.Time, done <-chan invocation) {
	go func() {
		r := <-done
		attrs := []any{"function", rt.function, "request_id", x.requestID, "ran", time.Since(began).Round(time.Millisecond)}
		if r.err != nil {
			attrs = append(attrs, "error", r.err.Error())
		}
		g.log.Warn("function finished after the gateway answered", attrs...)
	}()
}

// mergeHeaders combines headers and multiValueHeaders like API Gateway: a
// key present in multiValueHeaders takes those values only.
func mergeHeaders(single map[string]string, multi map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range single {
		out[http.CanonicalHeaderKey(k)] = []string{v}
	}
	seen := map[string]bool{}
	// Deterministic order when two spellings of one key are present.
	keys := make([]string, 0, len(multi))
	for k := range multi {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ck := http.CanonicalHeaderKey(k)
		if !seen[ck] {
			out[ck] = nil
			seen[ck] = true
		}
		out[ck] = append(out[ck], multi[k]...)
	}
	return out
}

func firstAccept(accept string) string {
	first, _, _ := strings.Cut(accept, ",")
	return strings.TrimSpace(first)
}

// fail writes a gateway-made error response.
func (g *Gateway) fail(w http.ResponseWriter, x *exchange, e gwError) {
	// $context.authorizer.* is there in every gateway response once the
	// authorizer has answered, not only in ACCESS_DENIED.
	if e.authorizer == nil {
		e.authorizer = x.authorizer
	}
	status, h, body, note := g.render(e, &x.tc)
	if note != "" {
		x.notes = append(x.notes, note)
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	x.status = status
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (g *Gateway) logExchange(r *http.Request, x *exchange) {
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", x.rawPath),
		slog.Int("status", x.status),
		slog.Duration("duration", time.Since(x.start)),
		slog.String("route", routeName(x.route)),
		slog.String("auth", x.auth),
	}
	if x.principal != "" {
		attrs = append(attrs, slog.String("principal", x.principal))
	}
	attrs = append(attrs, slog.String("request_id", x.requestID))
	if x.errText != "" {
		attrs = append(attrs, slog.String("error", x.errText))
	}
	if len(x.notes) > 0 {
		attrs = append(attrs, slog.String("note", strings.Join(x.notes, "; ")))
	}
	level := slog.LevelInfo
	if x.status >= 500 {
		level = slog.LevelError
	}
	g.log.LogAttrs(r.Context(), level, "gateway request", attrs...)
}

func routeName(rt *route) string {
	if rt == nil {
		return "-"
	}
	return rt.String()
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func domainPrefix(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	first, _, _ := strings.Cut(host, ".")
	return first
}

func jsonRoundTrip(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func newExtendedID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.TrimRight(base64.StdEncoding.EncodeToString(b[:]), "=")
}
