package apigw

import (
	"strings"
	"time"

	"cads/shared/audit"

	"github.com/aws/aws-lambda-go/events"
)

// LambdaOption configures Lambda.
type LambdaOption func(*lambdaConfig)

type lambdaConfig struct {
	corsOrigin     string
	audit          audit.Store
	auditRetention time.Duration
	auditDiff      Differ
}

// WithCORS makes every response of the function carry the CORS headers
// for origin, the deployment's CorsAllowOrigin (CORS_ALLOW_ORIGIN): "" for
// none, "*" for any, else the one origin browsers may call from. API
// Gateway answers the preflights and its own errors with the same
// setting (template.yaml); this covers what the functions answer.
func WithCORS(origin string) LambdaOption {
	return func(c *lambdaConfig) { c.corsOrigin = origin }
}

// corsExposed are the response headers a browser application may read
// besides the CORS-safelisted ones: paging, retries, downloads and the
// resource version.
const corsExposed = "ETag, Retry-After, X-Result-Cut, X-Next-Start, Content-Disposition"

// addCORS sets the CORS headers of a response to req. A configured origin
// is sent only to that origin (Vary: Origin, so that no cache serves one
// origin's answer to another); any other origin gets none, and its
// browser refuses to hand the response over.
func addCORS(origin string, req events.APIGatewayProxyRequest, resp *events.APIGatewayProxyResponse) {
	if origin == "" {
		return
	}
	set := func(k, v string) {
		if resp.Headers == nil {
			resp.Headers = map[string]string{}
		}
		for mk := range resp.MultiValueHeaders {
			// API Gateway takes a key of multiValueHeaders over headers.
			if strings.EqualFold(mk, k) {
				delete(resp.MultiValueHeaders, mk)
			}
		}
		resp.Headers[k] = v
	}
	if origin == "*" {
		set("Access-Control-Allow-Origin", "*")
		set("Access-Control-Expose-Headers", corsExposed)
		return
	}
	set("Vary", varyWithOrigin(resp))
	if requestOrigin(req) != origin {
		return
	}
	set("Access-Control-Allow-Origin", origin)
	set("Access-Control-Expose-Headers", corsExposed)
}

// requestOrigin is the request's Origin header; API Gateway keeps the
// client's spelling of header names (HTTP/2 clients send them in lower
// case).
func requestOrigin(req events.APIGatewayProxyRequest) string {
	for k, vs := range req.MultiValueHeaders {
		if strings.EqualFold(k, "Origin") && len(vs) > 0 {
			return vs[len(vs)-1]
		}
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, "Origin") {
			return v
		}
	}
	return ""
}

// varyWithOrigin is the response's Vary with Origin added.
func varyWithOrigin(resp *events.APIGatewayProxyResponse) string {
	var vary []string
	for k, v := range resp.Headers {
		if strings.EqualFold(k, "Vary") && v != "" {
			vary = append(vary, v)
		}
	}
	for k, vs := range resp.MultiValueHeaders {
		if strings.EqualFold(k, "Vary") {
			vary = append(vary, vs...)
		}
	}
	for _, v := range vary {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), "Origin") {
				return strings.Join(vary, ", ")
			}
		}
	}
	return strings.Join(append(vary, "Origin"), ", ")
}
