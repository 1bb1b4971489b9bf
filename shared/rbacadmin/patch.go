package rbacadmin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"cads/shared/apigw"
)

// Media types of PATCH bodies (spec 4.3): a merge patch (RFC 7386; also
// under its own name) or a JSON Patch (RFC 6902).
const (
	mediaJSON       = "application/json"
	mediaMergePatch = "application/merge-patch+json"
	mediaJSONPatch  = "application/json-patch+json"
)

// applyPatch applies the request's PATCH body to doc (the resource's
// editable fields as JSON) and decodes the result strictly into out, so the
// result is validated as a whole by the caller, whichever way it was
// written. readOnly names fields of the resource that a patch may not set.
func applyPatch(r *http.Request, doc []byte, out any, readOnly ...string) error {
	mt := apigw.MediaType(r)
	if mt != mediaJSON && mt != mediaMergePatch && mt != mediaJSONPatch {
		if mt == "" {
			return apigw.UnsupportedMediaType("missing Content-Type; send %s (merge) or %s (RFC 6902)", mediaJSON, mediaJSONPatch)
		}
		return apigw.UnsupportedMediaType("Content-Type %q is not accepted here; send %s (merge) or %s (RFC 6902)", mt, mediaJSON, mediaJSONPatch)
	}
	body, err := apigw.ReadBody(r, apigw.MaxJSONBody)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return apigw.BadRequest("a request body is required")
	}
	var result []byte
	if mt == mediaJSONPatch {
		result, err = jsonPatch(doc, body)
	} else {
		result, err = mergePatch(doc, body)
	}
	if err != nil {
		return err
	}
	if err := rejectReadOnly(result, readOnly); err != nil {
		return err
	}
	if err := apigw.UnmarshalStrict(result, out); err != nil {
		if e, ok := apigw.As(err); ok {
			e.Message = strings.Replace(e.Message, "invalid JSON body", "the patched resource is invalid", 1)
		}
		return err
	}
	return nil
}

func mergePatch(doc, body []byte) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, apigw.BadRequest("a merge patch (%s) must be a JSON object of the fields to change", mediaJSON)
	}
	out, err := jsonpatch.MergePatch(doc, body)
	if err != nil {
		return nil, apigw.BadRequest("invalid merge patch: %s", err.Error())
	}
	return out, nil
}

// maxPatchOps bounds the operations of one JSON Patch.
const maxPatchOps = 1000

func jsonPatch(doc, body []byte) ([]byte, error) {
	var ops []json.RawMessage
	if err := json.Unmarshal(body, &ops); err != nil {
		return nil, apigw.BadRequest("a JSON Patch (%s) must be an array of operations (RFC 6902)", mediaJSONPatch)
	}
	if len(ops) > maxPatchOps {
		return nil, apigw.BadRequest("a JSON Patch may hold at most %d operations", maxPatchOps)
	}
	patch, err := jsonpatch.DecodePatch(body)
	if err != nil {
		return nil, apigw.BadRequest("invalid JSON Patch: %s", err.Error())
	}
	opts := jsonpatch.NewApplyOptions()
	// RFC 6902 has no negative indices; copies may not inflate the
	// document beyond the body limit.
	opts.SupportNegativeIndices = false
	opts.AccumulatedCopySizeLimit = apigw.MaxJSONBody
	out, err := patch.ApplyWithOptions(doc, opts)
	if err != nil {
		return nil, apigw.BadRequest("JSON Patch does not apply: %s", err.Error())
	}
	return out, nil
}

func rejectReadOnly(result []byte, readOnly []string) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(result, &fields) != nil {
		return nil // not an object: the strict decoder says why
	}
	for f := range fields {
		if slices.Contains(readOnly, f) {
			return apigw.BadRequest("%s is read-only", f)
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
