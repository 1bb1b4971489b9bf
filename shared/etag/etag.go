// Package etag makes the strong entity tags of resource versions
// (docs/api.md#conditional-requests). It is pure, so that a service that
// tags what it writes (the address sets, whose tag also counts the
// entries still visible) need not link the HTTP layer; apigw reads the
// tags back from If-Match and If-None-Match.
package etag

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Of is the strong entity tag of version of the resource kind/id. The
// kind and id are hashed in, so that two resources at the same version
// never share a tag; the version ends it, so that every change changes it.
// Items written before their kind had a version are version 0.
func Of(kind, id string, version int) string {
	return `"` + Prefix(kind, id) + strconv.Itoa(version) + `"`
}

// Prefix is what every tag of kind/id starts with (inside the quotes):
// the version follows it.
func Prefix(kind, id string) string {
	h := sha256.Sum256([]byte(kind + "/" + id))
	return hex.EncodeToString(h[:9]) + "-"
}
