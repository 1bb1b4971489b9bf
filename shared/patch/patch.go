// Package patch reads and applies the API's PATCH bodies: a JSON merge
// patch (RFC 7386) or a JSON Patch (RFC 6902), answering bad ones with the
// API's 400s. Only the functions that take PATCH bodies link it.
package patch

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"cads/shared/apigw"
	"cads/shared/domain"
)

// Media types of PATCH bodies (docs/api.md#patch-bodies). Each family
// accepts those its endpoints list.
const (
	MediaJSON       = "application/json"             // a merge patch (docs/api.md#patch-bodies)
	MediaMergePatch = "application/merge-patch+json" // the same under RFC 7386's name
	MediaJSONPatch  = "application/json-patch+json"  // RFC 6902
)

// MaxOperations bounds the operations of one JSON Patch.
const MaxOperations = 1000

// Body is a PATCH body, checked as far as it can be without the resource,
// so that a malformed one is a 400 whether or not the resource exists.
type Body struct {
	raw    []byte
	fields map[string]json.RawMessage // a merge patch's top level
	ops    jsonpatch.Patch            // a JSON Patch
}

// Read reads r's body, which must have one of the accepted media types;
// MediaJSONPatch bodies are JSON Patches, the others merge patches.
func Read(r *http.Request, accepted ...string) (*Body, error) {
	return ReadWith(r, apigw.TextOption{}, accepted...)
}

// ReadWith is Read for resources with multi-line fields: text names them
// as paths of the body as sent (a merge patch's "certificates", a JSON
// Patch's "[*].value"). A JSON Patch's values have no fixed path, so the
// caller must decode the patched document strictly (patch.Decode,
// apigw.UnmarshalStrict) with its own option to judge them where they land.
func ReadWith(r *http.Request, text apigw.TextOption, accepted ...string) (*Body, error) {
	if err := apigw.RequireContentType(r, accepted...); err != nil {
		return nil, err
	}
	raw, err := apigw.ReadBody(r, apigw.MaxJSONBody)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, apigw.BadRequest("a request body is required")
	}
	// Judged as sent: decoding would turn invalid text into U+FFFD.
	if err := apigw.CheckJSONText(raw, text); err != nil {
		return nil, err
	}
	if apigw.MediaType(r) == MediaJSONPatch {
		var ops []json.RawMessage
		if json.Unmarshal(raw, &ops) != nil {
			return nil, apigw.BadRequest("a JSON Patch (%s) must be an array of operations (RFC 6902)", MediaJSONPatch)
		}
		if len(ops) > MaxOperations {
			return nil, apigw.BadRequest("a JSON Patch may hold at most %d operations", MaxOperations)
		}
		p, err := jsonpatch.DecodePatch(raw)
		if err != nil {
			return nil, apigw.BadRequest("invalid JSON Patch: %s", err.Error())
		}
		return &Body{raw: raw, ops: p}, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil, apigw.BadRequest("a merge patch (%s) is a JSON object of the fields to change; null removes one", MediaJSON)
	}
	return &Body{raw: raw, fields: fields}, nil
}

// Fields returns a merge patch's top-level fields, nil for a JSON Patch.
func (b *Body) Fields() map[string]json.RawMessage { return b.fields }

// Apply applies the patch to doc, the resource's fields as a JSON object.
func (b *Body) Apply(doc []byte) ([]byte, error) {
	if b.ops != nil {
		opts := jsonpatch.NewApplyOptions()
		// RFC 6902 has no negative indices; copies may not inflate the
		// document beyond the body limit.
		opts.SupportNegativeIndices = false
		opts.AccumulatedCopySizeLimit = apigw.MaxJSONBody
		out, err := b.ops.ApplyWithOptions(doc, opts)
		if err != nil {
			return nil, apigw.BadRequest("the JSON Patch does not apply: %s", err.Error())
		}
		return out, nil
	}
	return Merge(doc, b.raw)
}

// Merge applies a merge patch to doc.
func Merge(doc, patch []byte) ([]byte, error) {
	out, err := jsonpatch.MergePatch(doc, patch)
	if err != nil {
		return nil, apigw.BadRequest("the merge patch does not apply: %s", err.Error())
	}
	return out, nil
}

// Decode decodes a patched document strictly into out, so that the result
// is validated as a whole however the patch was written; what names the
// resource in the error ("the patched role is invalid: ...").
func Decode(patched []byte, out any, what string) error {
	err := apigw.UnmarshalStrict(patched, out)
	if e, ok := domain.AsError(err); ok {
		e.Message = strings.Replace(e.Message, "invalid JSON body", "the patched "+what+" is invalid", 1)
	}
	return err
}
