package clientgen_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"cads/infra/local/localtest"
	"cads/infra/testenv"
	"cads/shared/openapi"
)

// The generators run on the document exactly as served. Each must
// generate a client for every operation without a warning, and what both
// generate must compile.
func TestGeneratorsTakeTheContract(t *testing.T) {
	g := newGenerators(t)
	doc := g.write(t, "openapi.json", []byte(openapi.JSON()))
	ids := operationIDs(t, []byte(openapi.JSON()))
	if len(ids) == 0 {
		t.Fatal("the document has no operations")
	}
	for _, p := range g.ogen(t, doc, ids) {
		t.Errorf("ogen: %s", p)
	}
	for _, p := range g.oapiCodegen(t, doc, ids) {
		t.Errorf("oapi-codegen: %s", p)
	}
	if t.Failed() {
		return
	}
	// The generated packages build against the runtime modules the tools
	// module pins.
	if out, err := g.goCmd(g.mod, "build", "./..."); err != nil {
		t.Fatalf("the generated clients do not compile: %v\n%s", err, out)
	}
	t.Run("ogen client through the local gateway", func(t *testing.T) { g.scenario(t) })
}

// scenario runs testdata/scenario, compiled in the scratch module with the
// generated ogen client, against a local platform whose every response is
// also checked against the contract. The scenario calls every operation
// of the served document and fails if one was not answered with a
// success.
func (g *generators) scenario(t *testing.T) {
	p, _ := localtest.Start(t)
	key, err := os.ReadFile(p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "scenario", "scenario_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(g.mod, "scenario"), 0o755); err != nil {
		t.Fatal(err)
	}
	g.write(t, filepath.Join("mod", "scenario", "scenario_test.go"), src)
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^TestScenario$", "./scenario/")
	cmd.Dir = g.mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -trimpath",
		"CADS_API_URL="+p.URL, "CADS_API_KEY="+strings.TrimSpace(string(key)), "CADS_ROOT_ACCOUNT="+p.Bootstrap.RootAccount)
	out, err := cmd.CombinedOutput()
	// The scenario compares the operations it called with the document's;
	// a pass without that comparison would say nothing of the coverage.
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestScenario")) || !bytes.Contains(out, []byte("covered: ")) {
		t.Errorf("the scenario with the generated client: %v\n%s", err, tail(out))
		return
	}
	if _, after, ok := bytes.Cut(out, []byte("covered: ")); ok {
		line, _, _ := bytes.Cut(after, []byte("\n"))
		t.Logf("scenario covered %s", line)
	}
}

// The check is strict where ogen is lenient: what the contract once had,
// a type union and a oneOf of two object types without a discriminator,
// fails it, whether ogen refuses the schema or skips the operation.
func TestGeneratorCheckCatchesWhatGeneratorsRefuse(t *testing.T) {
	g := newGenerators(t)
	var d map[string]any
	if err := json.Unmarshal([]byte(openapi.JSON()), &d); err != nil {
		t.Fatal(err)
	}
	schemas := d["components"].(map[string]any)["schemas"].(map[string]any)
	for _, tc := range []struct {
		name   string
		schema map[string]any
	}{
		{"a six-type union", map[string]any{"type": []any{"string", "number", "boolean", "array", "object", "null"}}},
		{"an undiscriminated oneOf of objects", map[string]any{"oneOf": []any{
			map[string]any{"$ref": "#/components/schemas/AccessKey"},
			map[string]any{"$ref": "#/components/schemas/AccessKeyWithSecret"},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := schemas["LogValue"]
			schemas["LogValue"] = tc.schema
			b, err := json.Marshal(d)
			schemas["LogValue"] = saved
			if err != nil {
				t.Fatal(err)
			}
			doc := g.write(t, strings.ReplaceAll(tc.name, " ", "-")+".json", b)
			if problems := g.ogen(t, doc, operationIDs(t, b)); len(problems) == 0 {
				t.Errorf("ogen took %s without a problem reported", tc.name)
			}
		})
	}
}

// generators are ogen and oapi-codegen, built from the tools module, and a
// scratch module (the tools module's go.mod and go.sum) to generate into.
type generators struct {
	tools, bin, mod string
}

func newGenerators(t *testing.T) *generators {
	t.Helper()
	work := t.TempDir()
	g := &generators{
		tools: filepath.Join(testenv.Root(t), "infra", "clientgen", "tools"),
		bin:   testenv.BuildDir(t, "clientgen-generators"),
		mod:   filepath.Join(work, "mod"),
	}
	if out, err := g.goCmd(g.tools, "build", "-o", g.bin+string(filepath.Separator),
		"github.com/ogen-go/ogen/cmd/ogen", "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"); err != nil {
		t.Fatalf("build the generators: %v\n%s", err, out)
	}
	if err := os.MkdirAll(g.mod, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(g.tools, f))
		if err != nil {
			t.Fatal(err)
		}
		g.write(t, filepath.Join("mod", f), b)
	}
	return g
}

// write writes a file under the scratch directory and returns its path.
func (g *generators) write(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(g.mod), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// goCmd runs the go command in dir, outside any workspace and with the
// module files as they are (no download beyond what go.sum names).
func (g *generators) goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -trimpath")
	return cmd.CombinedOutput()
}

// ogenTolerated are ogen warnings that say nothing about the contract:
// HTTP header names are case-insensitive, and the document spells
// WWW-Authenticate as RFC 9110 does.
var ogenTolerated = []string{"Header name is not canonical"}

// ogen generates a client and a server into the scratch module and
// returns the problems: a failure (ogen refuses what it does not
// implement unless told to skip it), a warning of any kind, or an
// operation the client lacks.
func (g *generators) ogen(t *testing.T, doc string, ids []string) []string {
	t.Helper()
	target := filepath.Join(g.mod, "ogenclient")
	cmd := exec.Command(filepath.Join(g.bin, "ogen"), "-target", target, "-package", "ogenclient", "-clean", doc)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return []string{fmt.Sprintf("%v\n%s", err, tail(out))}
	}
	var problems []string
	for line := range strings.SplitSeq(string(out), "\n") {
		level, _, _ := strings.Cut(strings.TrimSpace(line), "\t")
		switch level {
		case "WARN", "ERROR", "DPANIC", "PANIC", "FATAL":
		default:
			continue
		}
		tolerated := false
		for _, s := range ogenTolerated {
			tolerated = tolerated || strings.Contains(line, s)
		}
		if !tolerated {
			problems = append(problems, line)
		}
	}
	client, err := os.ReadFile(filepath.Join(target, "oas_client_gen.go"))
	if err != nil {
		return append(problems, err.Error())
	}
	for _, id := range ids {
		if !bytes.Contains(client, []byte(`otelogen.OperationID("`+id+`")`)) {
			problems = append(problems, "no client method for operation "+id)
		}
	}
	return problems
}

// oapiCodegen generates types and a client into the scratch module and
// returns the problems: a failure, anything it prints (it prints nothing
// when all is well), or an operation the client lacks.
func (g *generators) oapiCodegen(t *testing.T, doc string, ids []string) []string {
	t.Helper()
	dir := filepath.Join(g.mod, "oapiclient")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "client.go")
	cmd := exec.Command(filepath.Join(g.bin, "oapi-codegen"), "-generate", "types,client", "-package", "oapiclient", "-o", file, doc)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return []string{fmt.Sprintf("%v\n%s", err, tail(out))}
	}
	var problems []string
	if s := strings.TrimSpace(string(out)); s != "" {
		problems = append(problems, s)
	}
	client, err := os.ReadFile(file)
	if err != nil {
		return append(problems, err.Error())
	}
	for _, id := range ids {
		if !regexp.MustCompile(`func \(c \*Client\) ` + regexp.QuoteMeta(goName(id)) + `(WithBody)?\(`).Match(client) {
			problems = append(problems, "no client method for operation "+id)
		}
	}
	return problems
}

// goName is oapi-codegen's name for an operationId: its words (runs of
// letters and digits), each with a capital first letter.
func goName(id string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(id, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}

// operationIDs lists the operationIds of a document.
func operationIDs(t *testing.T, doc []byte) []string {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, item := range d.Paths {
		for method, raw := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
			default:
				continue
			}
			var op struct {
				OperationID string `json:"operationId"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			if op.OperationID == "" {
				t.Fatalf("an operation has no operationId: %s", raw)
			}
			ids = append(ids, op.OperationID)
		}
	}
	return ids
}

// tail is the end of a tool's output, where the reason of a failure is.
func tail(out []byte) []byte {
	const max = 4000
	if len(out) > max {
		return out[len(out)-max:]
	}
	return out
}
