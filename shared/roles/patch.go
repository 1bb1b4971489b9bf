package roles

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/jsontext"
	"cads/shared/patch"
)

// applyPatch applies the request's PATCH body (docs/api.md#patch-bodies: a merge patch,
// also under its own name, or a JSON Patch) to doc (the resource's
// editable fields as JSON) and decodes the result strictly into out, so the
// result is validated as a whole by the caller, whichever way it was
// written. readOnly names fields of the resource that a patch may not set.
func readPatch(r *http.Request) (*patch.Body, error) {
	return patch.Read(apigw.ReadJSON(r, jsontext.TextOption{}, patch.MediaJSON, patch.MediaMergePatch, patch.MediaJSONPatch))
}

// applyPatch applies body to doc; the body is read once (readPatch) and
// may be applied again to a newer doc after a lost race.
func applyPatch(body *patch.Body, doc []byte, out any, readOnly ...string) error {
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
