// Package authorizer is the API's Lambda REQUEST authorizer: it takes the
// credential from the request, asks package access to authenticate it and
// decide the request, and answers API Gateway with a policy for exactly
// this method ARN plus the context the functions trust.
package authorizer

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/audit"
	"cads/shared/caller"
)

// errUnauthorized is the exact error API Gateway turns into a 401.
var errUnauthorized = errors.New("Unauthorized")

// Authorizer decides requests.
type Authorizer interface {
	Authorize(ctx context.Context, secret, method, path string) (access.Result, error)
}

// Handler is the authorizer's Lambda handler.
type Handler func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error)

// New returns the Lambda handler.
func New(az Authorizer, log *slog.Logger) Handler {
	return func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
		secret, ok := credential(req)
		if !ok {
			log.InfoContext(ctx, "unauthenticated", "method", req.HTTPMethod, "path", req.Path, "reason", "missing, duplicate or malformed credential")
			refusal(ctx, log, req, nil, 401)
			return events.APIGatewayCustomAuthorizerResponse{}, errUnauthorized
		}
		res, err := az.Authorize(ctx, secret, req.HTTPMethod, req.Path)
		if errors.Is(err, access.ErrUnauthenticated) {
			log.InfoContext(ctx, "unauthenticated", "method", req.HTTPMethod, "path", req.Path, "reason", "unknown, expired or revoked key")
			refusal(ctx, log, req, nil, 401)
			return events.APIGatewayCustomAuthorizerResponse{}, errUnauthorized
		}
		if err != nil {
			// API Gateway answers AUTHORIZER_FAILURE (a 429 to retry, as the
			// template sets it); the cause stays here.
			log.ErrorContext(ctx, "authorizer failed", "method", req.HTTPMethod, "path", req.Path, "error", err.Error())
			return events.APIGatewayCustomAuthorizerResponse{}, errors.New("authorizer failure")
		}
		effect := "Allow"
		if !res.Decision.Allowed {
			effect = "Deny"
			log.InfoContext(ctx, "denied", "method", req.HTTPMethod, "path", req.Path, "principal", res.Principal.ID,
				"account", res.Principal.AccountID, "key", res.Principal.KeyID, "explanation", res.Decision.Reason)
			refusal(ctx, log, req, &res.Principal, 403)
		} else {
			log.DebugContext(ctx, "allowed", "method", req.HTTPMethod, "path", req.Path, "principal", res.Principal.ID, "explanation", res.Decision.Reason)
		}
		rctx := res.Principal.Context()
		rctx[apigw.CtxMessage] = templateSafe(res.Decision.Reason)
		return events.APIGatewayCustomAuthorizerResponse{
			PrincipalID: res.Principal.ID,
			PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
				Version: "2012-10-17",
				Statement: []events.IAMPolicyStatement{{
					Action: []string{"execute-api:Invoke"},
					Effect: effect,
					// Exactly this method ARN: even if caching were turned
					// on, the policy could not serve another route.
					Resource: []string{req.MethodArn},
				}},
			},
			Context: rctx,
		}, nil
	}
}

// credential returns the one secret the request carries: the Bearer
// Authorization header or the authorization query parameter, never both,
// never a repeated one (docs/api.md#credentials).
func credential(req events.APIGatewayCustomAuthorizerRequestTypeRequest) (string, bool) {
	var headers []string
	if len(req.MultiValueHeaders) > 0 {
		for k, vs := range req.MultiValueHeaders {
			if strings.EqualFold(k, "authorization") {
				headers = append(headers, vs...)
			}
		}
	} else {
		for k, v := range req.Headers {
			if strings.EqualFold(k, "authorization") {
				headers = append(headers, v)
			}
		}
	}
	var queries []string
	if len(req.MultiValueQueryStringParameters) > 0 {
		queries = req.MultiValueQueryStringParameters["authorization"]
	} else if v, ok := req.QueryStringParameters["authorization"]; ok {
		queries = []string{v}
	}
	switch {
	case len(headers) == 1 && len(queries) == 0:
		scheme, token, found := strings.Cut(strings.TrimSpace(headers[0]), " ")
		if !found || !strings.EqualFold(scheme, "bearer") {
			return "", false
		}
		token = strings.TrimSpace(token)
		return token, token != ""
	case len(headers) == 0 && len(queries) == 1:
		return queries[0], queries[0] != ""
	}
	return "", false
}

// templateSafe makes a message safe to paste into the JSON of a gateway
// response template: API Gateway inserts $context.authorizer.message
// verbatim, so a quote or backslash would break the 403 body.
func templateSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"':
			return '\''
		case r == '\\', r < 0x20, r == 0x7f:
			return ' '
		}
		return r
	}, s)
}

// refusal logs a refused request with the fields of an audit event
// (docs/api.md#audit-events): refusals are never stored. p is nil when
// no key was authenticated.
func refusal(ctx context.Context, log *slog.Logger, req events.APIGatewayCustomAuthorizerRequestTypeRequest, p *caller.Principal, status int) {
	ev := audit.Event{Time: time.Now().UTC(), Method: req.HTTPMethod, Path: req.Path, Target: req.Path, Status: &status,
		RequestID: req.RequestContext.RequestID, SourceAddress: req.RequestContext.Identity.SourceIP, UserAgent: userAgent(req)}
	if p != nil {
		ev.Actor = apigw.ActorOf(*p)
	}
	audit.LogRefusal(ctx, log, ev)
}

func userAgent(req events.APIGatewayCustomAuthorizerRequestTypeRequest) string {
	for k, v := range req.Headers {
		if strings.EqualFold(k, "user-agent") {
			return v
		}
	}
	return ""
}
