package repotest

import (
	"encoding/json"
	"errors"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// maxMethods is the most methods a type of the project's own packages may
// have, promoted ones included (docs/architecture.md, "The store"): past
// it a type is several things, as the store was when one *Store held every
// family's reads and writes.
const maxMethods = 60

// TestNoTypeHasTooManyMethods reads the type information of every package
// under shared/ (go list's export data, the compiler's own view) and
// counts the method set of each named type, through a pointer.
func TestNoTypeHasTooManyMethods(t *testing.T) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", "./shared/...")
	cmd.Dir = "../.."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	var own []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, "cads/shared/") {
			own = append(own, p.ImportPath)
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(f)
	})
	counts := map[string]int{}
	for _, path := range own {
		pkg, err := imp.(types.ImporterFrom).ImportFrom(path, "", 0)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, name := range pkg.Scope().Names() {
			tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
			if !ok || tn.IsAlias() {
				continue
			}
			var n int
			if it, ok := tn.Type().Underlying().(*types.Interface); ok {
				n = it.NumMethods()
			} else {
				n = types.NewMethodSet(types.NewPointer(tn.Type())).Len()
			}
			counts[path+"."+name] = n
		}
	}
	if len(counts) < 100 {
		t.Fatalf("read only %d types: the export data was not read", len(counts))
	}
	var names []string
	for k := range counts {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return counts[names[i]] > counts[names[j]] })
	for _, k := range names {
		if counts[k] > maxMethods {
			t.Errorf("%s has %d methods, more than %d: split it", k, counts[k], maxMethods)
		}
	}
	for _, k := range names[:5] {
		t.Logf("%s: %d methods", k, counts[k])
	}
}
