package local_test

import (
	"net/http"
	"testing"

	"cads/shared/openapi"
)

// The API serves its description to any authenticated principal, even
// one whose key is authenticated into no account and holds no role, byte
// for byte as embedded; without a credential it is a 401 like every
// route (docs/api.md#api-description).
func TestOpenAPIDocumentIsServed(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret

	if r := c.do("GET", "/v2/openapi.json", "", nil); r.Status != http.StatusUnauthorized || r.errorType(t) != "unauthorized" {
		t.Fatalf("no credential: %d %s", r.Status, r.Raw)
	}
	r := c.do("GET", "/v2/openapi.json", op, nil)
	if r.Status != http.StatusOK || r.Raw != openapi.JSON() {
		t.Fatalf("operator: status %d, %d bytes; want 200 and the %d bytes of shared/openapi/openapi.json", r.Status, len(r.Raw), len(openapi.JSON()))
	}

	// A user with no role and a key bound to no account.
	uid, _ := c.do("POST", "/v2/users", op, map[string]any{"email": "reader@example.com", "name": "Reader"}).Body["id"].(string)
	key := c.do("POST", "/v2/users/"+uid+"/access-keys", op, map[string]any{"type": "bearer"})
	secret, _ := key.Body["secret_key"].(string)
	if key.Status != http.StatusOK || secret == "" || key.Body["account"] != nil {
		t.Fatalf("key without an account: %d %s", key.Status, key.Raw)
	}
	if r := c.do("GET", "/v2/accounts/"+p.Bootstrap.RootAccount, secret, nil); r.Status != http.StatusForbidden {
		t.Fatalf("the roleless key reads an account: %d %s", r.Status, r.Raw)
	}
	if r := c.do("GET", "/v2/openapi.json", secret, nil); r.Status != http.StatusOK || r.Raw != openapi.JSON() {
		t.Fatalf("roleless key: status %d: %.200s", r.Status, r.Raw)
	}
	// Reading is all it allows.
	if r := c.do("POST", "/v2/openapi.json", secret, map[string]any{}); r.Status != http.StatusNotFound || r.errorType(t) != "not_found" {
		t.Fatalf("POST: %d %s", r.Status, r.Raw)
	}
}
