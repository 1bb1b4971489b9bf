package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// Gateway response types used by the gateway (API Gateway's names).
const (
	RespUnauthorized          = "UNAUTHORIZED"
	RespAccessDenied          = "ACCESS_DENIED"
	RespAuthorizerFailure     = "AUTHORIZER_FAILURE"
	RespMissingAuthToken      = "MISSING_AUTHENTICATION_TOKEN"
	RespRequestTooLarge       = "REQUEST_TOO_LARGE"
	RespBadRequestBody        = "BAD_REQUEST_BODY"
	RespIntegrationTimeout    = "INTEGRATION_TIMEOUT"
	RespAPIConfigurationError = "API_CONFIGURATION_ERROR"
	RespDefault4XX            = "DEFAULT_4XX"
	RespDefault5XX            = "DEFAULT_5XX"
	respNone                  = "" // no specific type: only DEFAULT_4XX/5XX apply
	errorTypeInternalFallback = "internal"
)

// defaultStatus is API Gateway's default status code per response type.
var defaultStatus = map[string]int{
	"ACCESS_DENIED":                  403,
	"API_CONFIGURATION_ERROR":        500,
	"AUTHORIZER_CONFIGURATION_ERROR": 500,
	"AUTHORIZER_FAILURE":             500,
	"BAD_REQUEST_PARAMETERS":         400,
	"BAD_REQUEST_BODY":               400,
	"EXPIRED_TOKEN":                  403,
	"INTEGRATION_FAILURE":            504,
	"INTEGRATION_TIMEOUT":            504,
	"INVALID_API_KEY":                403,
	"INVALID_SIGNATURE":              403,
	"MISSING_AUTHENTICATION_TOKEN":   403,
	"QUOTA_EXCEEDED":                 429,
	"REQUEST_TOO_LARGE":              413,
	"RESOURCE_NOT_FOUND":             404,
	"THROTTLED":                      429,
	"UNAUTHORIZED":                   401,
	"UNSUPPORTED_MEDIA_TYPE":         415,
	"WAF_FILTERED":                   403,
}

// amznErrorType is the x-amzn-ErrorType header API Gateway sends.
var amznErrorType = map[string]string{
	"ACCESS_DENIED":                "AccessDeniedException",
	"AUTHORIZER_FAILURE":           "AuthorizerConfigurationException",
	"MISSING_AUTHENTICATION_TOKEN": "MissingAuthenticationTokenException",
	"REQUEST_TOO_LARGE":            "RequestTooLargeException",
	"UNAUTHORIZED":                 "UnauthorizedException",
	"BAD_REQUEST_BODY":             "BadRequestException",
}

// errorTypes maps a status to the API's snake_case error type
// (docs/api.md#errors) for the built-in body.
func errorType(status int) string {
	switch status {
	case 400:
		return "bad_request"
	case 401:
		return "unauthorized"
	case 403:
		return "forbidden"
	case 404:
		return "not_found"
	case 405:
		return "method_not_allowed"
	case 409:
		return "conflict"
	case 412:
		return "precondition_failed"
	case 413:
		return "payload_too_large"
	case 415:
		return "unsupported_media_type"
	case 429:
		return "too_many_requests"
	}
	if status >= 500 {
		return errorTypeInternalFallback
	}
	return "bad_request"
}

// gwError is an error response made by the gateway itself.
type gwError struct {
	kind    string // gateway response type, or respNone
	status  int    // status when the response type does not set one
	message string // $context.error.message; never internal details
	// nullMessage: API Gateway has no message for this error
	// ($context.error.messageString is null), as for authorizer failures.
	nullMessage bool
	// authorizer holds what $context.authorizer.<key> renders (ACCESS_DENIED).
	authorizer map[string]any
}

// errorBody is the API's error body (docs/api.md#errors).
type errorBody struct {
	Status int `json:"status"`
	Error  struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func builtinBody(status int, message string) []byte {
	var b errorBody
	b.Status = status
	b.Error.Type = errorType(status)
	b.Error.Message = message
	if status >= 500 {
		b.Error.Message = "internal error"
	}
	out, _ := json.Marshal(b)
	return out
}

// render resolves the gateway response for e the way API Gateway does: the
// type's own response, else DEFAULT_4XX/DEFAULT_5XX by the type's default
// status, else the built-in API error body. The status is the customised
// type's StatusCode; for a type that is not customised, the DEFAULT's
// StatusCode when it sets one (API Gateway documents that setting it
// changes every other response of its class), else the type's own default.
// Errors of no named type (a failed function's 502) are not customisable
// and follow the DEFAULT rule too. It returns status, headers and body, and
// a note when the rendered template is not valid JSON.
func (g *Gateway) render(e gwError, tc *templateContext) (int, http.Header, []byte, string) {
	status := e.status
	if d, ok := defaultStatus[e.kind]; ok && status == 0 {
		status = d
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	var resp *Response
	if r, ok := g.cfg.Responses[e.kind]; ok && e.kind != respNone {
		resp = &r
		if r.Status != 0 {
			status = r.Status
		}
	} else {
		def := RespDefault4XX
		if status >= 500 {
			def = RespDefault5XX
		}
		if r, ok := g.cfg.Responses[def]; ok {
			resp = &r
			if r.Status != 0 {
				status = r.Status
			}
		}
	}
	h := http.Header{}
	if t, ok := amznErrorType[e.kind]; ok {
		h.Set("x-amzn-ErrorType", t)
	}
	var body []byte
	note := ""
	if resp != nil {
		for k, v := range resp.Headers {
			h.Set(k, v)
		}
	}
	if resp != nil && resp.Template != "" {
		body = []byte(renderTemplate(resp.Template, e, tc))
		if !json.Valid(body) {
			note = "rendered gateway response body is not valid JSON (API Gateway would send it as is)"
		}
	} else {
		body = builtinBody(status, e.message)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	return status, h, body, note
}

// templateContext is what $context.* resolves to in a gateway response.
type templateContext struct {
	requestID, extendedRequestID, stage, apiID, accountID string
	httpMethod, resourcePath, path, domainName, protocol  string
	requestTime                                           string
	requestTimeEpoch                                      int64
	sourceIP, userAgent                                   string
}

var templateVarRe = regexp.MustCompile(`\$(!?)(?:\{context((?:\.[A-Za-z0-9_-]+)+)\}|context((?:\.[A-Za-z_][A-Za-z0-9_]*)+))`)

// renderTemplate substitutes $context variables in a gateway response
// template. Like API Gateway it substitutes the raw value (no JSON
// escaping); a missing authorizer/error/identity value renders empty, an
// unknown variable is left as written (VTL) unless written $!context....
func renderTemplate(tmpl string, e gwError, tc *templateContext) string {
	return templateVarRe.ReplaceAllStringFunc(tmpl, func(m string) string {
		sub := templateVarRe.FindStringSubmatch(m)
		quiet := sub[1] == "!"
		name := sub[2]
		if name == "" {
			name = sub[3]
		}
		name = strings.TrimPrefix(name, ".")
		v, ok := lookupContextVar(name, e, tc)
		if !ok {
			if quiet {
				return ""
			}
			return m
		}
		return v
	})
}

func lookupContextVar(name string, e gwError, tc *templateContext) (string, bool) {
	if key, ok := strings.CutPrefix(name, "authorizer."); ok {
		v, present := e.authorizer[key]
		if !present || v == nil {
			return "", true
		}
		return fmt.Sprint(v), true
	}
	switch name {
	case "error.message":
		return e.message, true
	case "error.messageString":
		if e.nullMessage {
			return "null", true
		}
		b, _ := json.Marshal(e.message)
		return string(b), true
	case "error.responseType":
		return e.kind, true
	case "error.validationErrorString":
		return "", true
	}
	if tc == nil {
		return "", false
	}
	switch name {
	case "requestId":
		return tc.requestID, true
	case "extendedRequestId":
		return tc.extendedRequestID, true
	case "stage":
		return tc.stage, true
	case "apiId":
		return tc.apiID, true
	case "accountId":
		return tc.accountID, true
	case "httpMethod":
		return tc.httpMethod, true
	case "resourcePath":
		return tc.resourcePath, true
	case "path":
		return tc.path, true
	case "domainName":
		return tc.domainName, true
	case "protocol":
		return tc.protocol, true
	case "requestTime":
		return tc.requestTime, true
	case "requestTimeEpoch":
		return strconv.FormatInt(tc.requestTimeEpoch, 10), true
	case "identity.sourceIp":
		return tc.sourceIP, true
	case "identity.userAgent":
		return tc.userAgent, true
	}
	if strings.HasPrefix(name, "identity.") || strings.HasPrefix(name, "error.") {
		return "", true
	}
	return "", false
}
