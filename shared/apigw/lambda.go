package apigw

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"cads/shared/authz"
	"cads/shared/domain"
	"cads/shared/jsontext"
)

// lambdaResponseLimit is Lambda's synchronous response payload limit: a
// larger proxy response is a gateway error, never seen by the client as
// the function wrote it.
const lambdaResponseLimit = 6<<20 + 100

// ProxyHandler is the signature of an API Gateway proxy Lambda; it is what
// lambda.Start, the local gateway and the tests call.
type ProxyHandler func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// HandlerDeadline bounds the context of every API request. API Gateway
// answers 504 after its 29 s integration limit whatever the function is
// still doing, so the handler's context ends earlier, leaving time to
// answer with the API's own error body. Lambda's own deadline (the
// function's Timeout, at most 29 s for an API function) applies when it
// is earlier.
const HandlerDeadline = 28 * time.Second

// Lambda runs h as an API Gateway proxy function. Before h sees anything it
// re-checks that the path is canonical (the authorizer already refused such
// paths; this keeps a misconfigured route from reaching a handler with one),
// and it turns a panic into the API's 500 body so no request ever gets a
// gateway-made 502 or a stack trace. Every response it returns, errors
// included, gets the CORS headers of WithCORS.
func Lambda(log *slog.Logger, h http.Handler, opts ...LambdaOption) ProxyHandler {
	var cfg lambdaConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.audit != nil {
		h = auditing(h, log, cfg.audit, cfg.auditRetention, cfg.auditDiff)
	}
	adapter := httpadapter.New(h)
	return func(ctx context.Context, req events.APIGatewayProxyRequest) (resp events.APIGatewayProxyResponse, err error) {
		ctx, cancel := context.WithTimeout(ctx, HandlerDeadline)
		defer cancel()
		// Registered first, so it runs last: on the panic's 500 too.
		defer func() {
			if err == nil {
				addCORS(cfg.corsOrigin, req, &resp)
			}
		}()
		if perr := authz.CheckPath(req.Path); perr != nil {
			b, _ := body(domain.Errorf(domain.Invalid, "%s", perr.Error()))
			return errorResponse(b), nil
		}
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(ctx, "handler panic", "panic", r, "path", req.Path, "request_id", req.RequestContext.RequestID, "stack", string(debug.Stack()))
				resp, err = errorResponse(internalBody), nil
			}
		}()
		resp, err = adapter.ProxyWithContext(ctx, req)
		if err != nil {
			log.ErrorContext(ctx, "proxy adapter failed", "error", err.Error(), "path", req.Path, "request_id", req.RequestContext.RequestID)
			return errorResponse(internalBody), nil
		}
		if n := jsontext.EnvelopeLen([]byte(resp.Body)); n > lambdaResponseLimit-64<<10 {
			// A handler that does not page by bytes: Lambda would refuse
			// the payload and the client see the gateway's 502. The API's
			// own 500 says what happened in the log.
			log.ErrorContext(ctx, "response over Lambda's payload limit", "bytes", n, "path", req.Path, "request_id", req.RequestContext.RequestID)
			return errorResponse(internalBody), nil
		}
		return resp, nil
	}
}

func errorResponse(b Body) events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{
		StatusCode: b.Status,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(mustBody(b)),
	}
}

// NewMux returns a ServeMux whose unmatched requests get the API's 404 body
// instead of net/http's plain-text one.
func NewMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusNotFound, Body{Status: http.StatusNotFound, Error: BodyError{Type: "not_found", Message: "no such route: " + r.Method + " " + r.URL.Path}})
	})
	return mux
}
