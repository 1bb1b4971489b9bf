// Package routegen derives the route tables from the API's contract,
// shared/openapi/openapi.json: the route block of template.yaml's Api
// DefinitionBody and shared/routes/routes_gen.go (every operation, and one
// table per function). infra/cmd/routegen writes them (`go generate
// ./...`); TestGeneratedFilesAreCurrent fails when a committed copy
// differs from what the contract gives.
//
// The contract names the function of each operation with the extension
// x-cads-function, a folder of functions/ (docs/architecture.md, "Add a
// route"); template.yaml maps that folder (CodeUri) to the function's
// logical id, whose Arn the integration invokes.
package routegen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"cads/infra/sam"
)

// Files of the generated outputs, relative to the module root.
const (
	DocumentFile = "shared/openapi/openapi.json"
	TemplateFile = "template.yaml"
	GoFile       = "shared/routes/routes_gen.go"
)

// FunctionExtension names an operation's function in the contract.
const FunctionExtension = "x-cads-function"

// Operation is one operation of the contract, in the document's order.
type Operation struct {
	ID, Method, Path, Function string
	List                       bool
}

// Files returns the generated files under root as they must read: by
// path relative to root, the whole content.
func Files(root string) (map[string][]byte, error) {
	doc, err := os.ReadFile(filepath.Join(root, DocumentFile))
	if err != nil {
		return nil, err
	}
	ops, err := Operations(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DocumentFile, err)
	}
	tplBytes, err := os.ReadFile(filepath.Join(root, TemplateFile))
	if err != nil {
		return nil, err
	}
	tpl, err := sam.Parse(tplBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TemplateFile, err)
	}
	logical := map[string]string{} // folder -> logical id
	for id, f := range tpl.Functions {
		logical[strings.TrimPrefix(f.CodeURI, "functions/")] = id
	}
	block, err := templateBlock(ops, logical)
	if err != nil {
		return nil, err
	}
	newTpl, err := replaceBlock(tplBytes, block)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TemplateFile, err)
	}
	src, err := goTables(ops)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{TemplateFile: newTpl, GoFile: src}, nil
}

var methods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true}

// Operations reads the operations of an OpenAPI document in the order it
// writes them (paths, then methods within a path), which the tables keep:
// the cost tables of docs/performance.md and the isolation test's walk
// follow it.
func Operations(doc []byte) ([]Operation, error) {
	var top struct {
		Paths      json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]parameter `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	paths, err := orderedKeys(top.Paths)
	if err != nil {
		return nil, fmt.Errorf("paths: %w", err)
	}
	var ops []Operation
	seen := map[string]string{}
	for _, p := range paths {
		item, err := orderedKeys(p.value)
		if err != nil {
			return nil, fmt.Errorf("paths %s: %w", p.key, err)
		}
		for _, m := range item {
			if !methods[m.key] {
				continue
			}
			var op struct {
				ID         string      `json:"operationId"`
				Function   string      `json:"x-cads-function"`
				Parameters []parameter `json:"parameters"`
			}
			if err := json.Unmarshal(m.value, &op); err != nil {
				return nil, fmt.Errorf("%s %s: %w", m.key, p.key, err)
			}
			route := strings.ToUpper(m.key) + " " + p.key
			switch {
			case op.ID == "":
				return nil, fmt.Errorf("%s: no operationId", route)
			case op.Function == "":
				return nil, fmt.Errorf("%s: no %s (the folder of functions/ that serves it)", route, FunctionExtension)
			case seen[op.ID] != "":
				return nil, fmt.Errorf("%s and %s share operationId %s", seen[op.ID], route, op.ID)
			}
			seen[op.ID] = route
			list := false
			for _, prm := range op.Parameters {
				if name, ok := strings.CutPrefix(prm.Ref, "#/components/parameters/"); ok {
					prm = top.Components.Parameters[name]
				}
				list = list || (prm.In == "query" && prm.Name == "cursor")
			}
			ops = append(ops, Operation{ID: op.ID, Method: strings.ToUpper(m.key), Path: p.key, Function: op.Function, List: list && m.key == "get"})
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("no operations")
	}
	return ops, nil
}

type parameter struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

type member struct {
	key   string
	value json.RawMessage
}

// orderedKeys lists a JSON object's members in the order written.
func orderedKeys(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key: tok.(string), value: v})
	}
	return out, nil
}

const (
	beginMarker = "# Code generated by go generate (infra/cmd/routegen) from shared/openapi/openapi.json; DO NOT EDIT."
	endMarker   = "# End of generated code."
)

// templateBlock is the Api's paths: each operation's aws_proxy
// integration invoking its function.
func templateBlock(ops []Operation, logical map[string]string) (string, error) {
	var b strings.Builder
	b.WriteString("        paths:\n")
	last := ""
	for _, op := range ops {
		id, ok := logical[op.Function]
		if !ok {
			return "", fmt.Errorf("%s %s: %s %q is no function of %s (no CodeUri functions/%s)", op.Method, op.Path, FunctionExtension, op.Function, TemplateFile, op.Function)
		}
		if op.Path != last {
			fmt.Fprintf(&b, "          %q:\n", op.Path)
			last = op.Path
		}
		fmt.Fprintf(&b, "            %s: { x-amazon-apigateway-integration: { type: aws_proxy, httpMethod: POST, uri: !Sub \"arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${%s.Arn}/invocations\" } }\n", strings.ToLower(op.Method), id)
	}
	return b.String(), nil
}

var (
	beginRE = regexp.MustCompile(`(?m)^[ \t]*` + regexp.QuoteMeta(beginMarker) + `\n`)
	endRE   = regexp.MustCompile(`(?m)^[ \t]*` + regexp.QuoteMeta(endMarker) + `$`)
)

// replaceBlock puts block between the template's markers.
func replaceBlock(tpl []byte, block string) ([]byte, error) {
	b := beginRE.FindAllIndex(tpl, -1)
	e := endRE.FindAllIndex(tpl, -1)
	if len(b) != 1 || len(e) != 1 || e[0][0] < b[0][1] {
		return nil, fmt.Errorf("want one %q line, then one %q line, around the Api's DefinitionBody paths", beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(tpl[:b[0][1]])
	out.WriteString(block)
	out.Write(tpl[e[0][0]:])
	return out.Bytes(), nil
}

// goTables is shared/routes/routes_gen.go.
func goTables(ops []Operation) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by go generate (infra/cmd/routegen) from shared/openapi/openapi.json; DO NOT EDIT.\n\npackage routes\n\n")
	row := func(op Operation) {
		fmt.Fprintf(&b, "\t{ID: %q, Method: %q, Path: %q, Function: %q, List: %t},\n", op.ID, op.Method, op.Path, op.Function, op.List)
	}
	b.WriteString("// All is every operation of the contract, in its order. Only the tests\n// and the tools read it: a function links its own table below.\nvar All = []Operation{\n")
	for _, op := range ops {
		row(op)
	}
	b.WriteString("}\n")
	var functions []string
	byFunction := map[string][]Operation{}
	for _, op := range ops {
		if _, ok := byFunction[op.Function]; !ok {
			functions = append(functions, op.Function)
		}
		byFunction[op.Function] = append(byFunction[op.Function], op)
	}
	for _, f := range functions {
		fmt.Fprintf(&b, "\n// %s is the operations of functions/%s.\nvar %s = []Operation{\n", goName(f), f, goName(f))
		for _, op := range byFunction[f] {
			row(op)
		}
		b.WriteString("}\n")
	}
	b.WriteString("\n// ByFunction is each function's table, by its folder under functions/.\nfunc ByFunction() map[string][]Operation {\n\treturn map[string][]Operation{\n")
	for _, f := range functions {
		fmt.Fprintf(&b, "\t\t%q: %s,\n", f, goName(f))
	}
	b.WriteString("\t}\n}\n")
	return format.Source(b.Bytes())
}

// goName is a function folder as an exported Go name: address-sets is
// AddressSets.
func goName(folder string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(folder, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
