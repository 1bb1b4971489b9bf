package repotest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreWordsNoRefusal: the messages clients read belong to the domain
// (shared/domain, refusals.go and rules.go); the store says which
// condition failed by calling them. A domain.Error whose Message is not
// the domain's own, or a domain.Errorf, in shared/store is a refusal
// worded in the wrong place.
func TestStoreWordsNoRefusal(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "shared", "store", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no store files: %v", err)
	}
	fset := token.NewFileSet()
	for _, fn := range files {
		if strings.HasSuffix(fn, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, fn, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				se, ok := x.Type.(*ast.SelectorExpr)
				if !ok || se.Sel.Name != "Error" {
					return true
				}
				for _, el := range x.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Message" && !fromDomain(kv.Value) {
						t.Errorf("%s: a refusal worded in the store", fset.Position(kv.Pos()))
					}
				}
			case *ast.CallExpr:
				if se, ok := x.Fun.(*ast.SelectorExpr); ok && se.Sel.Name == "Errorf" {
					if pk, ok := se.X.(*ast.Ident); ok && pk.Name == "domain" {
						t.Errorf("%s: domain.Errorf in the store", fset.Position(x.Pos()))
					}
				}
			}
			return true
		})
	}
}

// fromDomain reports whether e is a message the domain worded
// (domain.ErrStale.Message).
func fromDomain(e ast.Expr) bool {
	for {
		se, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		if id, ok := se.X.(*ast.Ident); ok {
			return id.Name == "domain"
		}
		e = se.X
	}
}
