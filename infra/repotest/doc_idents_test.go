package repotest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"cads/infra/testenv"
)

// decls is what the repository's Go code declares, by package name (the
// last element of the package's directory; directories that share it are
// merged, as a reader of the docs cannot tell them apart either).
type decls struct {
	// top holds each package's top-level names: functions, types,
	// variables, constants.
	top map[string]map[string]bool
	// members holds, per package and type, its methods, struct fields and
	// interface methods.
	members map[string]map[string]map[string]bool
	// methods holds each package's method names, of any type: the docs
	// write `store.CreateTask` for the store's method.
	methods map[string]map[string]bool
	// external holds the names under which the code imports packages from
	// outside the repository: `types.` in a doc may be the SDK's.
	external map[string]bool
	// embeds holds, per package and type, the types it embeds, as
	// "pkg.Type" (the package the embedding names, or its own).
	embeds map[string]map[string][]string
}

func (d *decls) add(pkg, name string) {
	if d.top[pkg] == nil {
		d.top[pkg] = map[string]bool{}
	}
	d.top[pkg][name] = true
}

func (d *decls) addMember(pkg, typ, name string) {
	if d.members[pkg] == nil {
		d.members[pkg] = map[string]map[string]bool{}
	}
	if d.members[pkg][typ] == nil {
		d.members[pkg][typ] = map[string]bool{}
	}
	d.members[pkg][typ][name] = true
}

// hasMember reports whether typ (of pkg) has member name, itself or
// through the types it embeds.
func (d *decls) hasMember(pkg, typ, name string, depth int) bool {
	if d.members[pkg][typ][name] {
		return true
	}
	if depth > 5 {
		return false
	}
	for _, e := range d.embeds[pkg][typ] {
		p, t, _ := strings.Cut(e, ".")
		if d.top[p] == nil {
			return true // a package the docs do not name was not read
		}
		if t == name || d.hasMember(p, t, name, depth+1) {
			return true
		}
	}
	return false
}

// typeName returns the name (and package qualifier, if any) of a receiver
// or embedded type expression: T, *T, T[K], pkg.T.
func typeName(e ast.Expr) (qual, name string) {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return "", x.Name
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok {
				return id.Name, x.Sel.Name
			}
			return "", ""
		default:
			return "", ""
		}
	}
}

func (d *decls) file(pkg string, f *ast.File) {
	for _, decl := range f.Decls {
		switch x := decl.(type) {
		case *ast.FuncDecl:
			if x.Recv == nil || len(x.Recv.List) == 0 {
				d.add(pkg, x.Name.Name)
				continue
			}
			if _, typ := typeName(x.Recv.List[0].Type); typ != "" {
				d.addMember(pkg, typ, x.Name.Name)
			}
			if d.methods[pkg] == nil {
				d.methods[pkg] = map[string]bool{}
			}
			d.methods[pkg][x.Name.Name] = true
		case *ast.GenDecl:
			for _, spec := range x.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						d.add(pkg, n.Name)
					}
				case *ast.TypeSpec:
					d.add(pkg, s.Name.Name)
					d.typeMembers(pkg, s.Name.Name, s.Type)
				}
			}
		}
	}
}

func (d *decls) typeMembers(pkg, typ string, t ast.Expr) {
	var fields *ast.FieldList
	switch x := t.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			d.addMember(pkg, typ, n.Name)
		}
		if len(f.Names) > 0 {
			continue
		}
		qual, name := typeName(f.Type)
		if name == "" {
			continue
		}
		// An embedded field is named after its type.
		d.addMember(pkg, typ, name)
		if qual == "" {
			qual = pkg
		}
		if d.embeds[pkg] == nil {
			d.embeds[pkg] = map[string][]string{}
		}
		d.embeds[pkg][typ] = append(d.embeds[pkg][typ], qual+"."+name)
	}
}

// repoDecls returns the names of the Go packages under root (the nested
// modules included) and parses the files of those named in want (test
// files too: a doc may name a test helper); parsing only what the docs
// name keeps the test fast under the race detector. Of the others only the
// imports are read.
func repoDecls(t *testing.T, root string, want map[string]bool) (pkgs map[string]bool, d *decls) {
	t.Helper()
	var files []string
	pkgs = map[string]bool{}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			pkgs[filepath.Base(filepath.Dir(path))] = true
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d = &decls{top: map[string]map[string]bool{}, members: map[string]map[string]map[string]bool{}, methods: map[string]map[string]bool{}, external: map[string]bool{}, embeds: map[string]map[string][]string{}}
	// Parsing is most of the test's time: files in parallel, merged under a
	// lock (the maps are cheap next to the parse).
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	errs := make(chan error, len(files))
	for _, path := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			pkg := filepath.Base(filepath.Dir(path))
			mode := parser.SkipObjectResolution | parser.ImportsOnly
			if want[pkg] {
				mode = parser.SkipObjectResolution
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, mode)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, "cads/") || strings.HasPrefix(p, "github.com/truora/minidyn/") {
					continue
				}
				name := filepath.Base(p)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				d.external[name] = true
			}
			if want[pkg] {
				d.file(pkg, f)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return pkgs, d
}

var (
	// qualified is pkg.Ident or pkg.Type.Member inside a code span: a
	// lower-case package name, then an identifier (unexported ones too:
	// the docs name `store.page`).
	qualified = regexp.MustCompile(`(?:^|[^\w.>])([a-z][a-z0-9]*)\.([A-Za-z_]\w*)(?:\.(\w+))?`)
	// fileExt are the file name endings a span such as `metrics.json`
	// has: a file, not an identifier.
	fileExt = map[string]bool{"md": true, "go": true, "mod": true, "sum": true, "yaml": true, "yml": true, "json": true,
		"txt": true, "zip": true, "sh": true, "csv": true, "html": true, "toml": true, "log": true, "gz": true, "pem": true, "py": true}
)

// codeSpans returns the code of a Markdown text, inline spans and fenced
// blocks alike, with the offset where each starts: a run of backticks
// opens one and the next run of the same length closes it (a span may
// wrap across lines).
func codeSpans(text string) (code []string, at []int) {
	run := func(i int) int {
		n := 0
		for i+n < len(text) && text[i+n] == '`' {
			n++
		}
		return n
	}
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		n := run(i)
		start, closed := i+n, false
		for j := start; j < len(text); {
			if text[j] != '`' {
				j++
				continue
			}
			if m := run(j); m == n {
				code, at = append(code, text[start:j]), append(at, start)
				i, closed = j+m, true
				break
			} else {
				j += m
			}
		}
		if !closed {
			i = start // an unmatched run is literal text
		}
	}
	return code, at
}

// docRefs returns every qualified identifier the code of a Markdown text
// names, with its line number.
func docRefs(text string) (refs []identRef) {
	code, at := codeSpans(text)
	for k, c := range code {
		for _, m := range qualified.FindAllStringSubmatchIndex(c, -1) {
			pkg, name, member := c[m[2]:m[3]], c[m[4]:m[5]], ""
			if m[6] >= 0 {
				member = c[m[6]:m[7]]
			}
			if fileExt[name] {
				continue
			}
			line := 1 + strings.Count(text[:at[k]+m[2]], "\n")
			refs = append(refs, identRef{line: line, pkg: pkg, name: name, member: member})
		}
	}
	return refs
}

type identRef struct {
	line      int
	pkg, name string
	member    string
}

// Every `pkg.Ident` (and `pkg.Type.Member`) a doc names in its code
// exists in the repository's code, when pkg is the name of one of its
// packages: a rename or removal that leaves a doc behind fails here.
// `pkg.Name` may be a top-level name or a method of one of pkg's types
// (`store.CreateTask`, the store's method).
// Names of packages the repository does not have (the SDK's `dynamodb.`,
// the standard library's `http.`) are not checked.
func TestDocIdentifiersExist(t *testing.T) {
	root := testenv.Root(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs found: %v", err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	sort.Strings(docs)
	type docRef struct {
		doc string
		identRef
	}
	var refs []docRef
	want := map[string]bool{"store": true, "apigw": true}
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for _, r := range docRefs(string(b)) {
			refs = append(refs, docRef{rel, r})
			want[r.pkg] = true
		}
	}
	pkgs, d := repoDecls(t, root, want)
	if !d.top["store"]["New"] || !d.top["apigw"]["WriteError"] {
		t.Fatal("store.New or apigw.WriteError not found: the declarations are read wrong")
	}
	checked := 0
	for _, r := range refs {
		if !pkgs[r.pkg] {
			continue // not one of the repository's packages
		}
		rel := r.doc
		checked++
		if !d.top[r.pkg][r.name] && !d.methods[r.pkg][r.name] {
			if d.external[r.pkg] {
				// The code also imports a package of this name from
				// outside (the fork's `types`, the SDK's): the doc may
				// mean that one.
				checked--
				continue
			}
			t.Errorf("%s:%d: `%s.%s`: package %s declares no %s", rel, r.line, r.pkg, r.name, r.pkg, r.name)
			continue
		}
		// pkg.Type.Member: the member must be the type's (or one it
		// embeds). A name without members (a function, a constant)
		// followed by more text is left alone.
		if r.member != "" && d.members[r.pkg][r.name] != nil && !d.hasMember(r.pkg, r.name, r.member, 0) {
			t.Errorf("%s:%d: `%s.%s.%s`: %s.%s has no field or method %s", rel, r.line, r.pkg, r.name, r.member, r.pkg, r.name, r.member)
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d identifiers: the docs are read wrong", checked)
	}
	t.Logf("%d identifiers checked in %d docs", checked, len(docs))
}

// docRefs finds what the docs write: spans that wrap, fenced blocks,
// members, and leaves file names, placeholders and prose alone.
func TestDocRefsReadsMarkdownCode(t *testing.T) {
	text := "prose store.Gone is not code; `store.Reapply` and ``a `store.Page` b``\n" +
		"a span that `wraps store.Store.Reapply\nacross lines`, a file `metrics.json`,\n" +
		"a placeholder `<name>wire.Handler`, an unmatched ` backtick\n" +
		"```go\nx := apigw.WriteError\n```\n"
	var got []string
	for _, r := range docRefs(text) {
		s := fmt.Sprintf("%d:%s.%s", r.line, r.pkg, r.name)
		if r.member != "" {
			s += "." + r.member
		}
		got = append(got, s)
	}
	want := []string{"1:store.Reapply", "1:store.Page", "2:store.Store.Reapply", "6:apigw.WriteError"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("docRefs = %v, want %v", got, want)
	}
}
