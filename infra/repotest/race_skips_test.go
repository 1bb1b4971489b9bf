package repotest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSkippedUnderRaceRunWithout keeps make test whole: a test that skips
// or shrinks part of its work under the race detector (it reads
// testenv.RaceEnabled or its package's raceEnabled, or its file is built
// only without it, //go:build !race) runs in full without it only if the Makefile's
// TEST_NO_RACE_RUN matches its name and TEST_NO_RACE_IN names its
// package (or the package is tested only without the race detector,
// TEST_NO_RACE). A test added to the skips but not to the list would run
// nowhere in full.
func TestSkippedUnderRaceRunWithout(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for line := range strings.Lines(strings.ReplaceAll(string(mk), "\\\n", " ")) {
		if name, val, ok := strings.Cut(line, " := "); ok && (strings.HasPrefix(name, "TEST_NO_RACE") || name == "TEST_PURE" || name == "TEST_ALSO_UNRACED") {
			vars[name] = strings.ReplaceAll(strings.TrimSpace(val), "$$", "$")
		}
	}
	run, err := regexp.Compile(vars["TEST_NO_RACE_RUN"])
	if err != nil || vars["TEST_NO_RACE_RUN"] == "" {
		t.Fatalf("the Makefile's TEST_NO_RACE_RUN %q: %v", vars["TEST_NO_RACE_RUN"], err)
	}
	in := strings.Fields(vars["TEST_NO_RACE_IN"])
	// Packages tested only without the race detector run every test in
	// full already.
	var unraced []string
	// (TEST_ALSO_UNRACED: every test of the package, once more without it).
	for _, p := range strings.Fields(vars["TEST_NO_RACE"] + " " + vars["TEST_PURE"] + " " + vars["TEST_ALSO_UNRACED"]) {
		if p != "$(TEST_PURE)" {
			unraced = append(unraced, p)
		}
	}
	if len(unraced) == 0 {
		t.Fatal("the Makefile's TEST_NO_RACE is empty or not found")
	}
	onlyUnraced := func(pkg string) bool {
		for _, p := range unraced {
			if p == pkg || strings.HasSuffix(p, "/...") && strings.HasPrefix(pkg+"/", strings.TrimSuffix(p, "...")) {
				return true
			}
		}
		return false
	}

	var found int
	fset := token.NewFileSet()
	const repo = "../.."
	for _, top := range []string{"shared", "infra", "functions"} {
		err := filepath.WalkDir(filepath.Join(repo, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "minidyn" || d.Name() == "compare") {
				return filepath.SkipDir // nested modules and fixtures
			}
			if d.IsDir() || !strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "race_skips_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
			if err != nil {
				return err
			}
			norace := strings.Contains(string(src), "//go:build !race")
			rel, err := filepath.Rel(repo, filepath.Dir(path))
			if err != nil {
				return err
			}
			pkg := "./" + filepath.ToSlash(rel)
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
					continue
				}
				body := string(src[fset.Position(fn.Body.Pos()).Offset:fset.Position(fn.Body.End()).Offset])
				if !norace && !strings.Contains(body, "RaceEnabled") && !strings.Contains(body, "raceEnabled") {
					continue
				}
				found++
				if onlyUnraced(pkg) {
					continue
				}
				if !run.MatchString(fn.Name.Name) {
					t.Errorf("%s (%s) does not run in full under the race detector, and the Makefile's TEST_NO_RACE_RUN does not match it", fn.Name.Name, path)
				}
				if !slices.Contains(in, pkg) {
					t.Errorf("%s (%s) does not run in full under the race detector, and the Makefile's TEST_NO_RACE_IN lacks %s", fn.Name.Name, path, pkg)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found == 0 {
		t.Fatal("no test skips work under the race detector: if none does any more, remove this test and TEST_NO_RACE_RUN")
	}
}
