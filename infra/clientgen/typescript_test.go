package clientgen_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cads/infra/testenv"
	"cads/shared/openapi"
)

// TestTypeScriptClientCompiles generates TypeScript types from the
// document as served with openapi-typescript and compiles a small
// openapi-fetch program against them (testdata/ts/client.ts, tsc
// --noEmit, strict), the packages at the versions testdata/ts's lock file
// pins. A contract change that breaks what a TypeScript client writes
// fails here: the same run compiles the program against a contract with
// one such change too, and that copy must fail, on that change.
func TestTypeScriptClientCompiles(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPED: node is not installed, so the TypeScript client check (openapi-typescript, openapi-fetch, tsc) did not run; install Node.js 20 or later with npm")
	}
	// Node's processes beside the Go generators' builds: nothing shared
	// but the read-only document.
	t.Parallel()
	modules := tsModules(t)
	src := filepath.Join("testdata", "ts")
	dir := t.TempDir()
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"gen.mjs", "tsconfig.json"} {
		copyFile(filepath.Join(src, f), filepath.Join(dir, f))
	}
	// Both copies import their packages from the node_modules above them.
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for sub, doc := range map[string][]byte{"served": []byte(openapi.JSON()), "broken": breakContract(t, []byte(openapi.JSON()))} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(filepath.Join(src, "client.ts"), filepath.Join(dir, sub, "client.ts"))
		if err := os.WriteFile(filepath.Join(dir, sub, "openapi.json"), doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(node, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		return cmd.CombinedOutput()
	}
	gen, err := run("gen.mjs", "served", "broken")
	if err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, tail(gen))
	}
	// It reports what it could not translate on its output and goes on.
	if len(bytes.TrimSpace(gen)) > 0 {
		t.Fatalf("openapi-typescript reported a problem:\n%s", tail(gen))
	}
	out, err := run(filepath.Join(modules, "typescript", "bin", "tsc"), "-p", "tsconfig.json")
	if err == nil {
		t.Fatalf("tsc compiled the program against a contract that breaks it (%s)", brokenBy)
	}
	brokenSeen := false
	for line := range strings.SplitSeq(string(out), "\n") {
		if !strings.Contains(line, ": error TS") {
			continue // a continuation of the message above
		}
		if !strings.HasPrefix(line, "broken"+string(filepath.Separator)) {
			t.Errorf("the TypeScript client does not compile against the contract: %s", line)
			continue
		}
		brokenSeen = brokenSeen || strings.Contains(line, "secret_key")
	}
	if !brokenSeen && !t.Failed() {
		t.Errorf("tsc failed, but not on the broken contract's change (%s):\n%s", brokenBy, tail(out))
	}
	if t.Failed() {
		t.Logf("tsc:\n%s", tail(out))
	}
}

// brokenBy is the change breakContract makes.
const brokenBy = "a created key's secret_key renamed to secret"

// breakContract renames the secret of a created key, which the program
// reads: a change a TypeScript client must notice.
func breakContract(t *testing.T, doc []byte) []byte {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	key := d["components"].(map[string]any)["schemas"].(map[string]any)["AccessKeyWithSecret"].(map[string]any)
	props := key["properties"].(map[string]any)
	props["secret"] = props["secret_key"]
	delete(props, "secret_key")
	for i, r := range key["required"].([]any) {
		if r == "secret_key" {
			key["required"].([]any)[i] = "secret"
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tsModules is the node_modules of testdata/ts, installed by npm ci from
// its lock file into the user's cache, one directory per lock file: the
// work tree stays clean, and an install is made once per machine and
// version set.
func tsModules(t *testing.T) string {
	t.Helper()
	src := filepath.Join(testenv.Root(t), "infra", "clientgen", "testdata", "ts")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	root := filepath.Join(cache, "cads-clientgen-ts")
	final := filepath.Join(root, hex.EncodeToString(sum[:8]))
	modules := filepath.Join(final, "node_modules")
	if _, err := os.Stat(modules); err == nil {
		return modules
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("node is installed but npm is not: the TypeScript client check needs npm to install its packages")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// Installed beside and renamed into place, so that a run stopped
	// midway or a concurrent run never sees half an install.
	tmp, err := os.MkdirTemp(root, "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in a copy of %s: %v\n%s", src, err, tail(out))
	}
	if err := os.Rename(tmp, final); err != nil {
		// Fine if another run installed the same versions first.
		if _, statErr := os.Stat(modules); statErr != nil {
			t.Fatalf("install the packages into %s: %v", final, err)
		}
	}
	return modules
}
