package apigw

import (
	"context"
	"fmt"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"cads/shared/caller"
)

// CtxMessage is the authorizer context key of the decision's explanation;
// the gateway renders it in 403 bodies through
// $context.authorizer.message.
const CtxMessage = "message"

// PrincipalFrom returns the principal of the request being served.
func PrincipalFrom(ctx context.Context) (caller.Principal, error) {
	rc, ok := core.GetAPIGatewayContextFromContext(ctx)
	if !ok {
		return caller.Principal{}, fmt.Errorf("no API Gateway request context")
	}
	return caller.FromAuthorizer(rc.Authorizer)
}

// RequestID is API Gateway's request id, for log correlation.
func RequestID(ctx context.Context) string {
	rc, _ := core.GetAPIGatewayContextFromContext(ctx)
	return rc.RequestID
}
