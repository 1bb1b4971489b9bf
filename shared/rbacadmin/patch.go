package rbacadmin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/patch"
)

// applyPatch applies the request's PATCH body (docs/api.md#patch-bodies: a merge patch,
// also under its own name, or a JSON Patch) to doc (the resource's
// editable fields as JSON) and decodes the result strictly into out, so the
// result is validated as a whole by the caller, whichever way it was
// written. readOnly names fields of the resource that a patch may not set.
func applyPatch(r *http.Request, doc []byte, out any, readOnly ...string) error {
	body, err := patch.Read(apigw.ReadJSON(r, apigw.TextOption{}, patch.MediaJSON, patch.MediaMergePatch, patch.MediaJSONPatch))
	if err != nil {
		return err
	}
	result, err := body.Apply(doc)
	if err != nil {
		return err
	}
	if err := rejectReadOnly(result, readOnly); err != nil {
		return err
	}
	return apigw.UnmarshalPatched(result, out, "resource")
}

func rejectReadOnly(result []byte, readOnly []string) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(result, &fields) != nil {
		return nil // not an object: the strict decoder says why
	}
	for f := range fields {
		if slices.Contains(readOnly, f) {
			return domain.Errorf(domain.Invalid, "%s is read-only", f)
		}
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the handler's own document types get here; they marshal.
		panic(fmt.Sprintf("marshal patch document: %v", err))
	}
	return b
}
