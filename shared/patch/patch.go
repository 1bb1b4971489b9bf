// Package patch applies the API's PATCH bodies: a JSON merge patch (RFC
// 7386) or a JSON Patch (RFC 6902), refusing bad ones with domain errors
// (invalid). It works on a body already read: reading the request (media
// type, size, the text rule) is apigw's, so this package links no HTTP
// layer (TestDomainDeps, shared/wire/deps_test.go). Only the functions
// that take PATCH bodies link it.
package patch

import (
	"encoding/json"

	jsonpatch "github.com/evanphx/json-patch/v5"

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

// MaxCopyBytes bounds what a JSON Patch's copies may add to a document, so
// that a small patch cannot inflate it past what a request body may hold
// (apigw.MaxJSONBody; a test keeps them equal).
const MaxCopyBytes = 1 << 20

// Body is a PATCH body, checked as far as it can be without the resource,
// so that a malformed one is a 400 whether or not the resource exists.
type Body struct {
	raw    []byte
	fields map[string]json.RawMessage // a merge patch's top level
	ops    jsonpatch.Patch            // a JSON Patch
}

// Read parses a PATCH body as apigw.ReadJSON returns it (its media type
// checked, its text judged as sent), so that a handler reads one with
// patch.Read(apigw.ReadJSON(r, text, accepted...)). A MediaJSONPatch body
// is a JSON Patch, any other a merge patch. readErr, when set, is returned
// as it is.
func Read(raw []byte, mediaType string, readErr error) (*Body, error) {
	if readErr != nil {
		return nil, readErr
	}
	if mediaType == MediaJSONPatch {
		var ops []json.RawMessage
		if json.Unmarshal(raw, &ops) != nil {
			return nil, domain.Errorf(domain.Invalid, "a JSON Patch (%s) must be an array of operations (RFC 6902)", MediaJSONPatch)
		}
		if len(ops) > MaxOperations {
			return nil, domain.Errorf(domain.Invalid, "a JSON Patch may hold at most %d operations", MaxOperations)
		}
		p, err := jsonpatch.DecodePatch(raw)
		if err != nil {
			return nil, domain.Errorf(domain.Invalid, "invalid JSON Patch: %s", err.Error())
		}
		return &Body{raw: raw, ops: p}, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil, domain.Errorf(domain.Invalid, "a merge patch (%s) is a JSON object of the fields to change; null removes one", MediaJSON)
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
		opts.AccumulatedCopySizeLimit = MaxCopyBytes
		out, err := b.ops.ApplyWithOptions(doc, opts)
		if err != nil {
			return nil, domain.Errorf(domain.Invalid, "the JSON Patch does not apply: %s", err.Error())
		}
		return out, nil
	}
	return Merge(doc, b.raw)
}

// Merge applies a merge patch to doc.
func Merge(doc, patch []byte) ([]byte, error) {
	out, err := jsonpatch.MergePatch(doc, patch)
	if err != nil {
		return nil, domain.Errorf(domain.Invalid, "the merge patch does not apply: %s", err.Error())
	}
	return out, nil
}
