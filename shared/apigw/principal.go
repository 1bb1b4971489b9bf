package apigw

import (
	"context"
	"fmt"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// Principal is who the authorizer authenticated. The authorizer puts it in
// its context and API Gateway hands it to the function; functions trust it
// and never re-authenticate.
type Principal struct {
	ID        string // user or service-user id
	Kind      string // "user" | "service_user"
	Email     string
	AccountID string // the account the key is authenticated into; "" for none
	KeyID     string
}

// Authorizer context keys: one definition for the writer (the authorizer)
// and the readers (every function).
const (
	ctxPrincipal = "principal"
	ctxKind      = "kind"
	ctxEmail     = "email"
	ctxAccount   = "account"
	ctxKey       = "key"
	// CtxMessage carries the decision's explanation; the gateway renders it
	// in 403 bodies through $context.authorizer.message.
	CtxMessage = "message"
)

// Context renders p as an authorizer context (string values only, as API
// Gateway requires).
func (p Principal) Context() map[string]any {
	return map[string]any{ctxPrincipal: p.ID, ctxKind: p.Kind, ctxEmail: p.Email, ctxAccount: p.AccountID, ctxKey: p.KeyID}
}

// PrincipalFromAuthorizer reads a principal back from the authorizer context
// API Gateway passes in requestContext.authorizer.
func PrincipalFromAuthorizer(m map[string]any) (Principal, error) {
	str := func(k string) string { s, _ := m[k].(string); return s }
	p := Principal{ID: str(ctxPrincipal), Kind: str(ctxKind), Email: str(ctxEmail), AccountID: str(ctxAccount), KeyID: str(ctxKey)}
	if p.ID == "" || p.KeyID == "" {
		return Principal{}, fmt.Errorf("authorizer context has no principal")
	}
	return p, nil
}

// PrincipalFrom returns the principal of the request being served.
func PrincipalFrom(ctx context.Context) (Principal, error) {
	rc, ok := core.GetAPIGatewayContextFromContext(ctx)
	if !ok {
		return Principal{}, fmt.Errorf("no API Gateway request context")
	}
	return PrincipalFromAuthorizer(rc.Authorizer)
}

// RequestID is API Gateway's request id, for log correlation.
func RequestID(ctx context.Context) string {
	rc, _ := core.GetAPIGatewayContextFromContext(ctx)
	return rc.RequestID
}
