package authorizer

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestCredentialCarriers(t *testing.T) {
	hdr := func(vs ...string) map[string][]string { return map[string][]string{"Authorization": vs} }
	qry := func(vs ...string) map[string][]string { return map[string][]string{"authorization": vs} }
	cases := []struct {
		name   string
		req    events.APIGatewayCustomAuthorizerRequestTypeRequest
		secret string
		ok     bool
	}{
		{"bearer header", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueHeaders: hdr("Bearer s1")}, "s1", true},
		{"scheme case-insensitive", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueHeaders: hdr("bearer s1")}, "s1", true},
		{"lower-case header name", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueHeaders: map[string][]string{"authorization": {"Bearer s1"}}}, "s1", true},
		{"single-value maps only", events.APIGatewayCustomAuthorizerRequestTypeRequest{Headers: map[string]string{"Authorization": "Bearer s1"}}, "s1", true},
		{"query parameter", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueQueryStringParameters: qry("s2")}, "s2", true},
		{"neither", events.APIGatewayCustomAuthorizerRequestTypeRequest{}, "", false},
		{"both carriers", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueHeaders: hdr("Bearer s1"), MultiValueQueryStringParameters: qry("s2")}, "", false},
		{"two headers", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueHeaders: hdr("Bearer s1", "Bearer s2")}, "", false},
		{"two header spellings", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueHeaders: map[string][]string{"Authorization": {"Bearer s1"}, "authorization": {"Bearer s2"}}}, "", false},
		{"two query values", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueQueryStringParameters: qry("s1", "s2")}, "", false},
		{"basic scheme", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueHeaders: hdr("Basic czE=")}, "", false},
		{"bearer without token", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueHeaders: hdr("Bearer ")}, "", false},
		{"empty query value", events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueQueryStringParameters: qry("")}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ok := credential(c.req)
			if ok != c.ok || s != c.secret {
				t.Fatalf("credential() = %q, %v; want %q, %v", s, ok, c.secret, c.ok)
			}
		})
	}
}

func TestTemplateSafe(t *testing.T) {
	got := templateSafe("role \"Editor\" \\ denies\n")
	if got != "role 'Editor'   denies " {
		t.Fatalf("templateSafe = %q", got)
	}
}
