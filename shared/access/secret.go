// Package access authenticates access keys and decides requests: it loads
// what the RBAC engine (package authz) needs from the store and calls it.
// The Lambda authorizer and every function that needs a second decision
// (collection filtering, task permissions, the policy simulator) use it, so
// the rules and the data they see are the same everywhere.
package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"cads/shared/ids"
)

// secretPrefix makes leaked secrets easy to recognise and scan for.
const secretPrefix = "cads"

// NewSecret returns a fresh secret for a key. The principal and key ids
// inside it let the authorizer fetch the key item and the principal's
// grants in parallel, in the first round trip, without a lookup by hash;
// the random part is what authenticates.
func NewSecret(principal, key string) string {
	return secretPrefix + "_" + principal + "_" + key + "_" + ids.Secret()
}

// ParseSecret splits a secret made by NewSecret.
func ParseSecret(s string) (principal, key string, ok bool) {
	parts := strings.Split(s, "_")
	if len(parts) != 4 || parts[0] != secretPrefix || !ids.Valid(parts[1]) || !ids.Valid(parts[2]) || !ids.Valid(parts[3]) {
		return "", "", false
	}
	return parts[1], parts[2], true
}

// HashSecret is what the store keeps instead of the secret. The secret has
// 160 random bits, so a plain SHA-256 (no slow KDF) cannot be brute-forced.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func secretMatches(secret, hash string) bool {
	got := HashSecret(secret)
	return subtle.ConstantTimeCompare([]byte(got), []byte(hash)) == 1
}
