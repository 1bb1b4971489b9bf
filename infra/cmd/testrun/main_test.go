package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeModule lays out a module with two packages of one name (a/x,
// b/x), one whose tests pass and one whose second test fails, and a
// package without tests.
func writeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":             "module example.com/m\n\ngo 1.22\n",
		"a/x/x.go":           "package x\n\nfunc Two() int { return 2 }\n",
		"a/x/x_test.go":      "package x\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n\t\tt.Fatal(\"two\")\n\t}\n\tif _, err := os.Stat(\"x.go\"); err != nil {\n\t\tt.Fatal(\"not run in its package's directory:\", err)\n\t}\n}\n",
		"b/x/x.go":           "package x\n",
		"b/x/x_test.go":      "package x\n\nimport \"testing\"\n\nfunc TestFine(t *testing.T) {}\n\nfunc TestBroken(t *testing.T) { t.Fatal(\"broken on purpose\") }\n",
		"c/notests/c.go":     "package notests\n",
		"d/slow/d_test.go":   "package slow\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlow(t *testing.T) { time.Sleep(time.Minute) }\n",
		"d/slow/doc.go":      "package slow\n",
		"e/panics/e.go":      "package panics\n",
		"e/panics/e_test.go": "package panics\n\nimport \"testing\"\n\nfunc TestPanics(t *testing.T) { panic(\"at the disco\") }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runIn(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	t.Chdir(dir)
	var out bytes.Buffer
	code, err := run(context.Background(), args, &out)
	if err != nil {
		t.Logf("run: %v", err)
	}
	return code, out.String()
}

func TestRunsLikeGoTestAndKeepsTheBinaries(t *testing.T) {
	dir := writeModule(t)
	bin := t.TempDir()

	code, out := runIn(t, dir, "-bin", bin, "-p", "2", "./a/...", "./b/...", "./c/...", "./a/x")
	if code != 1 {
		t.Errorf("exit %d; want 1 (b/x fails)\n%s", code, out)
	}
	for _, want := range []string{"ok  \texample.com/m/a/x\t", "broken on purpose", "FAIL\texample.com/m/b/x\t", "\nFAIL\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "example.com/m/a/x") != 1 {
		t.Errorf("a/x, asked twice, ran %d times:\n%s", strings.Count(out, "example.com/m/a/x"), out)
	}
	if strings.Contains(out, "notests") {
		t.Errorf("a package without tests was run:\n%s", out)
	}
	if strings.Contains(out, "--- PASS") {
		t.Errorf("a passing package's output was printed without -v:\n%s", out)
	}

	// Two packages called x: each has a binary of its own, in a place
	// that does not depend on what else the run asked for.
	binaries, _ := filepath.Glob(filepath.Join(bin, "*", "*", "x.test"))
	if len(binaries) != 2 {
		t.Fatalf("binaries %v; want two x.test in two directories", binaries)
	}
	// The go command touches an up-to-date binary's mtime; a link
	// writes a new file.
	stat := func() map[string]os.FileInfo {
		m := map[string]os.FileInfo{}
		for _, b := range binaries {
			fi, err := os.Stat(b)
			if err != nil {
				t.Fatal(err)
			}
			m[b] = fi
		}
		return m
	}
	before := stat()

	// Run again, b/x alone with -run: nothing is linked again, and only
	// the test asked for runs.
	code, out = runIn(t, dir, "-bin", bin, "-run", "^TestFine$", "-v", "./b/x", "./a/x")
	if code != 0 {
		t.Errorf("exit %d with -run ^TestFine$; want 0\n%s", code, out)
	}
	if !strings.Contains(out, "--- PASS: TestFine") || strings.Contains(out, "TestBroken") {
		t.Errorf("-run ^TestFine$ -v:\n%s", out)
	}
	for b, m := range stat() {
		if !os.SameFile(m, before[b]) {
			t.Errorf("%s was written again though nothing changed", b)
		}
	}

	// -skip, and a change that makes the binary out of date.
	if err := os.WriteFile(filepath.Join(dir, "b/x/x.go"), []byte("package x\n\nvar Changed = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runIn(t, dir, "-bin", bin, "-skip", "^TestBroken$", "./b/x")
	if code != 0 {
		t.Errorf("exit %d with -skip ^TestBroken$; want 0\n%s", code, out)
	}
	changed := 0
	for b, m := range stat() {
		if !os.SameFile(m, before[b]) {
			changed++
		}
	}
	if changed != 1 {
		t.Errorf("%d binaries linked again after b/x changed; want 1", changed)
	}
}

func TestTimeoutAndPanicFail(t *testing.T) {
	dir := writeModule(t)
	code, out := runIn(t, dir, "-bin", t.TempDir(), "-timeout", "1s", "./d/...", "./e/...")
	if code != 1 {
		t.Errorf("exit %d; want 1", code)
	}
	for _, want := range []string{"panic: test timed out after 1s", "FAIL\texample.com/m/d/slow\t", "at the disco", "FAIL\texample.com/m/e/panics\t"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBuildFailureFails(t *testing.T) {
	dir := writeModule(t)
	if err := os.WriteFile(filepath.Join(dir, "a/x/x.go"), []byte("package x\n\nfunc Two() int { return \"two\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runIn(t, dir, "-bin", t.TempDir(), "./a/x", "./b/x")
	if code == 0 || !strings.Contains(out, "[build failed]") || !strings.Contains(out, "x.go:3") {
		t.Errorf("exit %d for a package that does not compile:\n%s", code, out)
	}
}

func TestArguments(t *testing.T) {
	o, err := parse([]string{"-p", "3", "-run", "X", "./a", "./b", "--", "-race", "-ldflags=-s -w"})
	if err != nil {
		t.Fatal(err)
	}
	if o.parallel != 3 || o.run != "X" || strings.Join(o.pkgs, " ") != "./a ./b" || strings.Join(o.build, "|") != "-race|-ldflags=-s -w" {
		t.Errorf("parsed %+v", o)
	}
	for _, args := range [][]string{{"--", "-race"}, {"./a", "-run", "X"}, {}} {
		if _, err := parse(args); err == nil {
			t.Errorf("%q: want an error", args)
		}
	}
	if _, err := parse([]string{"-p", "0", "./a"}); err == nil {
		t.Error("-p 0: want an error")
	}
}
