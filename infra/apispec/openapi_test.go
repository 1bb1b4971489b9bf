package apispec_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"cads/infra/apispec"
	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/openapi"
)

func loadDocument(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData([]byte(openapi.JSON()))
	if err != nil {
		t.Fatalf("load shared/openapi/openapi.json: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("the document is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("shared/openapi/openapi.json is not a valid OpenAPI document: %v", err)
	}
	return doc
}

// operations lists the document's operations as "METHOD path".
func operations(doc *openapi3.T) map[string]*openapi3.Operation {
	out := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			out[key(strings.ToUpper(method), path)] = op
		}
	}
	return out
}

// The document, the inventory and the template's routes are the same set
// of operations: a route missing from the document fails, and so does an
// operation of the document that nothing serves.
func TestOpenAPIDocumentCoversEveryRoute(t *testing.T) {
	ops := operations(loadDocument(t))
	inventory := map[string]bool{}
	for _, e := range apispec.Endpoints {
		inventory[key(e.Method, e.Path)] = true
		if op := ops[key(e.Method, e.Path)]; op != nil && op.OperationID != e.ID {
			t.Errorf("%s %s: operationId %s in the document, %s in the inventory", e.Method, e.Path, op.OperationID, e.ID)
		}
	}
	routes := map[string]bool{}
	for _, r := range testenv.Template(t).Routes() {
		routes[key(r.Method, r.Path)] = true
	}
	for _, set := range []struct {
		name string
		keys map[string]bool
	}{{"infra/apispec.Endpoints", inventory}, {"template.yaml", routes}} {
		for k := range set.keys {
			if ops[k] == nil {
				t.Errorf("%s has %s; the OpenAPI document does not", set.name, k)
			}
		}
		for k := range ops {
			if !set.keys[k] {
				t.Errorf("the OpenAPI document has %s; %s does not", k, set.name)
			}
		}
	}
}

// Every operation says what it answers: an id, a success, the errors every
// route can give, the error body on each of them, and its path parameters.
func TestOpenAPIOperationsAreComplete(t *testing.T) {
	doc := loadDocument(t)
	ids := map[string]string{}
	for k, op := range operations(doc) {
		method, path, _ := strings.Cut(k, " ")
		if op.OperationID == "" {
			t.Errorf("%s: no operationId", k)
		} else if prev, dup := ids[op.OperationID]; dup {
			t.Errorf("%s and %s share operationId %s", k, prev, op.OperationID)
		}
		ids[op.OperationID] = k
		if op.Responses.Status(http.StatusOK) == nil {
			t.Errorf("%s: no 200", k)
		}
		// The gateway and the authorizer can give these on any route.
		for _, code := range []int{400, 401, 403, 404, 429, 500, 502, 504} {
			r := op.Responses.Status(code)
			if r == nil || r.Value == nil {
				t.Errorf("%s: no %d", k, code)
				continue
			}
			mt := r.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/Error" {
				t.Errorf("%s: %d is not the error body", k, code)
			}
		}
		if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
			for _, code := range []int{413, 415} {
				if op.Responses.Status(code) == nil {
					t.Errorf("%s takes a body but declares no %d", k, code)
				}
			}
		}
		var declared []string
		for _, p := range op.Parameters {
			if p.Value != nil && p.Value.In == openapi3.ParameterInPath {
				declared = append(declared, p.Value.Name)
			}
		}
		var inPath []string
		for seg := range strings.SplitSeq(path, "/") {
			if name, ok := strings.CutPrefix(seg, "{"); ok {
				inPath = append(inPath, strings.TrimSuffix(name, "}"))
			}
		}
		slices.Sort(declared)
		slices.Sort(inPath)
		if !slices.Equal(declared, inPath) {
			t.Errorf("%s: path parameters %v, want %v", k, declared, inPath)
		}
	}
}

// The document names how callers authenticate (docs/api.md#credentials):
// one requirement, the bearer header, on every operation, so that a
// generated client sends that credential and no other (a client given two
// ORed schemes may send both, which the server refuses). The query
// credential the server also takes is described as a scheme of its own,
// outside the requirements.
func TestOpenAPISecurity(t *testing.T) {
	doc := loadDocument(t)
	bearer := doc.Components.SecuritySchemes["bearerKey"]
	query := doc.Components.SecuritySchemes["queryKey"]
	if bearer == nil || bearer.Value.Type != "http" || bearer.Value.Scheme != "bearer" {
		t.Errorf("bearerKey: %+v", bearer)
	}
	if query == nil || query.Value.Type != "apiKey" || query.Value.In != "query" || query.Value.Name != "authorization" {
		t.Errorf("queryKey: %+v", query)
	}
	if len(doc.Security) != 1 || len(doc.Security[0]) != 1 || doc.Security[0]["bearerKey"] == nil {
		t.Errorf("top-level security %v, want the bearer scheme alone", doc.Security)
	}
	for k, op := range operations(doc) {
		if op.Security != nil {
			t.Errorf("%s overrides the security requirement; every route goes through the authorizer", k)
		}
	}
}

// The entitlement resources the contract lets a client send are the kinds
// the server takes (domain.ResourceKinds: the metered ones and every
// quota), so a new quota cannot be refused by a validating client.
func TestEntitlementResourcesAreTheServers(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
				Else struct {
					Properties map[string]struct {
						Enum []string `json:"enum"`
					} `json:"properties"`
				} `json:"else"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(openapi.JSON()), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Components.Schemas["EntitlementCreate"]
	want := domain.ResourceKinds()
	for where, got := range map[string][]string{"properties": s.Properties["resource"].Enum, "else": s.Else.Properties["resource"].Enum} {
		if !slices.Equal(got, want) {
			t.Errorf("EntitlementCreate %s.resource enum %v, the server takes %v", where, got, want)
		}
	}
}
