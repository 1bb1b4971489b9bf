// Package openapi holds the API's machine-readable description: one
// OpenAPI 3.1 document, openapi.json, the contract clients generate code
// from. The users function serves it at GET /v2/openapi.json
// (docs/api.md#api-description); the tests check it against the route
// inventory and validate every response of the local platform against it
// (openapi_test.go, infra/local/localtest).
package openapi

import _ "embed"

//go:embed openapi.json
var document string

// JSON returns the document as served. A string keeps the embedded bytes
// immutable: no caller can change what the next one gets.
func JSON() string { return document }
