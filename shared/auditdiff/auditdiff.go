// Package auditdiff computes the change an audit event records for a
// PATCH or PUT: the JSON Patch from the resource before to the resource
// after. It is apart from apigw so that only the API functions, which
// record changes, link the diff library (not the authorizer or the queue
// workers: shared/wire's dependency test).
package auditdiff

import (
	"encoding/json"

	"github.com/wI2L/jsondiff"
)

// Patch is the JSON Patch (RFC 6902) that turns from into to; "[]" when
// they are equal.
func Patch(from, to []byte) (json.RawMessage, error) {
	p, err := jsondiff.CompareJSON(from, to)
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return json.RawMessage("[]"), nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return b, nil
}
