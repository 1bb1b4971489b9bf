package sam

import (
	"strings"
	"testing"
)

const definitionTemplate = `
Transform: AWS::Serverless-2016-10-31
Resources:
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: api
      OpenApiVersion: "3.0"
      Auth:
        DefaultAuthorizer: Authz
        Authorizers:
          Authz: { FunctionArn: !GetAtt AuthzFunction.Arn, FunctionPayloadType: REQUEST, Identity: { ReauthorizeEvery: 0 } }
      DefinitionBody:
        openapi: "3.0.1"
        info: { title: t, version: "1" }
        paths:
          /v2/things:
            parameters: []
            get: { x-amazon-apigateway-integration: { type: aws_proxy, httpMethod: POST, uri: !Sub "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${ThingsFunction.Arn}/invocations" } }
          "/v2/things/{id}/":
            x-amazon-apigateway-any-method: { x-amazon-apigateway-integration: { type: aws_proxy, httpMethod: POST, uri: !Sub "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${ThingsFunction.Arn}/invocations" } }
  AuthzFunction:
    Type: AWS::Serverless::Function
    Properties: { CodeUri: functions/authz, Handler: bootstrap, Runtime: provided.al2023 }
  ThingsFunction:
    Type: AWS::Serverless::Function
    Properties: { CodeUri: functions/things, Handler: bootstrap, Runtime: provided.al2023 }
  ThingsPermission:
    Type: AWS::Lambda::Permission
    Properties:
      Action: lambda:InvokeFunction
      FunctionName: !Ref ThingsFunction
      Principal: apigateway.amazonaws.com
      SourceArn: !Sub "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${Api}/*"
`

func TestDefinitionBodyRoutes(t *testing.T) {
	tp, err := Parse([]byte(definitionTemplate))
	if err != nil {
		t.Fatal(err)
	}
	got := tp.Routes()
	want := []Route{
		{Method: "GET", Path: "/v2/things", Function: "ThingsFunction", Authorizer: "Authz", Api: "Api"},
		{Method: "ANY", Path: "/v2/things/{id}", Function: "ThingsFunction", Authorizer: "Authz", Api: "Api"},
	}
	eq(t, "routes", got, want)
	eq(t, "OpenApiVersion", tp.Apis["Api"].OpenApiVersion, "3.0")
}

func TestDefinitionBodyRefusesWhatFailsOnAWS(t *testing.T) {
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"no permission", "FunctionName: !Ref ThingsFunction", "FunctionName: !Ref AuthzFunction", "ThingsFunction has no AWS::Lambda::Permission"},
		{"permission for another API", ":${Api}/*", ":OtherApi/*", "ThingsFunction has no AWS::Lambda::Permission"},
		{"unknown function", "functions/${ThingsFunction.Arn}/invocations\" } }\n          \"/v2", "functions/${NoFunction.Arn}/invocations\" } }\n          \"/v2", "invokes \"NoFunction\""},
		{"not a proxy", "get: { x-amazon-apigateway-integration: { type: aws_proxy", "get: { x-amazon-apigateway-integration: { type: http", "want an x-amazon-apigateway-integration of type aws_proxy"},
		{"own security", "get: { x-amazon-apigateway-integration", "get: { security: [], x-amazon-apigateway-integration", "per-operation security"},
		{"sibling parameters", "\"/v2/things/{id}/\"", "\"/v2/things/{thing_id}/x\":\n            get: { x-amazon-apigateway-integration: { type: aws_proxy, httpMethod: POST, uri: !Sub \"arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${ThingsFunction.Arn}/invocations\" } }\n          \"/v2/things/{id}/\"", "sibling"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(definitionTemplate, c.old) {
				t.Fatalf("the case's old text %q is not in the template", c.old)
			}
			_, err := Parse([]byte(strings.Replace(definitionTemplate, c.old, c.new, 1)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
