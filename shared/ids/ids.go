// Package ids makes the identifiers and secrets of the API.
//
// Generated ids match ^[a-z0-9]+$ (docs/api.md#hrefs-and-ids): lowercase
// base32 without padding uses only a-z and 2-7, so no id needs escaping in a
// path, a DynamoDB key or an access-key secret.
package ids

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

var enc = base32.StdEncoding.WithPadding(base32.NoPadding)

// New returns a random 16-character id (80 bits): collisions are not a
// practical concern, and creates still use conditional writes.
func New() string { return random(10) }

// Secret returns 160 random bits as 32 characters, above the 128 bits
// access-key secrets need (docs/api.md#secrets).
func Secret() string { return random(20) }

func random(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read never returns an error on supported platforms (Go 1.24+).
	_, _ = rand.Read(b)
	return strings.ToLower(enc.EncodeToString(b))
}

// Valid reports whether s looks like an id this service generates or
// accepts in a path: non-empty, at most 64 characters of [a-z0-9].
func Valid(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
