package wire_test

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Package paths below are relative to cads/shared/.
var (
	// common is what every function links: this package and what it
	// builds (logger, DynamoDB client, store), what the store needs, and
	// the domain at the centre of it all; routes is the contract's route
	// tables, of which each function links its own (apigw.Router); etag
	// is the entity tags apigw and the address sets make.
	common = []string{"wire", "caller", "jsontext", "etag", "logging", "ddb", "retry", "clock", "store", "apigw", "routes", "domain", "authz", "ids", "audit"}
	// rbac is the permission check of the caller's roles (access) with the
	// built-in roles it knows, and the wiring that builds it.
	rbac = []string{"access", "builtin", "wire/accesswire"}
	// api is what an API function adds: the audit trail's diff of a
	// resource before and after a write (no worker or authorizer links it).
	api = append(slices.Clone(rbac), "auditdiff")
)

// function is what one function may link beyond common.
type function struct {
	// Wire is its own wiring package under shared/wire, which its main
	// calls.
	Wire string
	// Serves are the shared packages of the families it serves, with any
	// wiring package it shares with another function.
	Serves []string
}

// functionDeps has one row per folder of functions/. Anything a function
// links beyond its row and common (another family, a wiring package not
// its own, a module none of its packages brings) fails TestFunctionDeps.
// A new function adds one row here.
var functionDeps = map[string]function{
	"authorizer":   {"authorizerwire", join(rbac, "authorizer")},
	"users":        {"userswire", join(api, "users", "openapi")},
	"accounts":     {"accountswire", join(api, "accounts", "names")},
	"roles":        {"roleswire", join(api, "listmerge", "roles", "notifier", "users", "patch", "outbox", "names")},
	"notifier":     {"notifierwire", []string{"notifier"}},
	"applications": {"applicationswire", join(api, "applications", "applications/appconfig", "applications/pagecontrol", "patch", "tasks", "tasks/tasksapi", "outbox", "wire/taskswire")},
	"tasks":        {"taskswire", join(api, "tasks", "tasks/tasksapi", "applications/appconfig", "outbox")},
	"task-worker":  {"taskworkerwire", join(nil, "tasks", "applications/appconfig", "outbox", "logs", "metrics")},
	"tests":        {"testswire", join(api, "tests", "tests/testsapi", "applications/appconfig", "loadgen", "metrics", "outbox")},
	"test-runner":  {"testrunnerwire", join(nil, "tests", "applications/appconfig", "loadgen", "metrics", "outbox", "wire/metricswire")},
	"address-sets": {"addresssetswire", join(api, "listmerge", "addresssets", "addresssets/addresssetsapi", "metrics", "patch", "outbox", "wire/metricswire")},
	"metrics":      {"metricsapiwire", join(api, "metrics", "metrics/metricsapi", "metrics/prototypes", "logs")},
	"aggregator":   {"aggregatorwire", join(nil, "listmerge", "metrics", "addresssets", "logs", "patch", "outbox", "wire/metricswire")},
	"logs":         {"logswire", join(api, "logs", "logs/logsapi", "metrics")},
	"installer":    {"installerwire", join(rbac, "installer", "bootstrap", "names")},
}

// queueWorkers are the functions a queue or CloudFormation triggers
// (template.yaml): they adapt messages to the services, so none of them
// may link the HTTP layer, which TestFunctionDeps checks.
var queueWorkers = []string{"notifier", "test-runner", "installer", "task-worker", "aggregator"}

// moduleOf is the third-party module a shared package brings; a function
// may link it only if it may link that package.
var moduleOf = map[string]string{
	"patch":                    "github.com/evanphx/json-patch/v5",
	"applications/pagecontrol": "github.com/santhosh-tekuri/jsonschema/v6",
	"tests":                    "github.com/dsnet/compress",
	"metrics":                  "github.com/valyala/fastjson",
	"logs":                     "github.com/valyala/fastjson",
	"authz":                    "github.com/gobwas/glob",
	"domain":                   "golang.org/x/text",
	"access":                   "github.com/hashicorp/golang-lru/v2",
	"names":                    "github.com/mtibben/confusables",
}

// runtimeModules (prefixes) are what every Lambda function may link: the
// Lambda runtime, its API Gateway adapter (apigw), the AWS SDK, and the
// fan-out helper (errgroup) that the store and most families use.
var runtimeModules = []string{
	"github.com/aws/aws-lambda-go",
	"github.com/awslabs/aws-lambda-go-api-proxy",
	"github.com/aws/aws-sdk-go-v2",
	"github.com/aws/smithy-go",
	"golang.org/x/sync",
	// The API functions' audit trail diffs a resource before and after a
	// write (auditdiff: JSON Patch); jsondiff brings the tidwall modules.
	// The rows above keep auditdiff out of the authorizer and the workers.
	"github.com/wI2L/jsondiff",
	"github.com/tidwall/",
}

// localOnly are modules of the local platform and the tests (embedded
// DynamoDB and SQS, the template parser, the profile reader and what they
// pull in): a function that links one carries test code to Lambda.
var localOnly = []string{
	"github.com/truora/minidyn",
	"github.com/Admiral-Piett/goaws",
	"github.com/awslabs/goformation",
	"github.com/google/pprof",
	"github.com/sirupsen/logrus",
	"github.com/gorilla/",
	"gopkg.in/yaml",
}

func join(base []string, more ...string) []string { return append(slices.Clone(base), more...) }

// TestFunctionDeps lists, as `make build` builds them (linux/arm64,
// -tags lambda.norpc), the packages each function links and checks them
// against functionDeps: each function links only what it serves.
func TestFunctionDeps(t *testing.T) {
	root := moduleRoot(t)
	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	var folders []string
	for _, e := range entries {
		if e.IsDir() {
			folders = append(folders, e.Name())
		}
	}
	if len(folders) == 0 {
		t.Fatal("no function folders under functions/")
	}
	for name := range functionDeps {
		if !slices.Contains(folders, name) {
			t.Errorf("functionDeps has a row for %q but functions/%s does not exist: remove the row", name, name)
		}
	}

	// One `go list` for every function's dependencies, one for the module
	// of each package.
	deps := map[string][]string{}
	for _, line := range goList(t, root, "{{.ImportPath}}\t{{join .Deps \" \"}}", false, "./functions/...") {
		pkg, list, _ := strings.Cut(line, "\t")
		deps[strings.TrimPrefix(pkg, "cads/functions/")] = strings.Fields(list)
	}
	module := map[string]string{}
	for _, line := range goList(t, root, "{{.ImportPath}}\t{{with .Module}}{{.Path}}{{end}}", true, "./functions/...") {
		pkg, mod, _ := strings.Cut(line, "\t")
		module[pkg] = mod
	}

	for _, name := range folders {
		t.Run(name, func(t *testing.T) {
			linked, ok := deps[name]
			if !ok {
				t.Fatalf("go list did not list cads/functions/%s", name)
			}
			row, ok := functionDeps[name]
			if !ok {
				t.Fatalf("functions/%s has no row in functionDeps (shared/wire/deps_test.go): add\n\t%q: {\"<its wiring package under shared/wire>\", join(rbac, <the shared packages it serves>...)},\nIt links today (cads/shared/...): %s",
					name, name, strings.Join(sharedOf(linked), " "))
			}
			allowed := map[string]bool{}
			allowedMods := slices.Clone(runtimeModules)
			own := "cads/shared/wire/" + row.Wire
			for _, p := range join(common, append([]string{"wire/" + row.Wire}, row.Serves...)...) {
				allowed["cads/shared/"+p] = true
				if m, ok := moduleOf[p]; ok {
					allowedMods = append(allowedMods, m)
				}
			}
			if slices.Contains(queueWorkers, name) && slices.Contains(linked, "cads/shared/apigw") {
				t.Errorf("links cads/shared/apigw: a queue worker links no HTTP layer (move what it uses out of the package with the HTTP handler)")
			}
			if !slices.Contains(linked, own) {
				t.Errorf("does not link its wiring package %s (the row's Wire): its main must call it", own)
			}
			badMods := map[string]string{} // module -> its first package linked
			for _, p := range linked {
				switch mod := module[p]; {
				case mod == "": // the standard library
				case mod == "cads":
					if !allowed[p] {
						t.Errorf("links %s, which it does not serve (its row allows, beyond common: wire/%s %s)", p, row.Wire, strings.Join(row.Serves, " "))
					}
				case !hasPrefix(mod, allowedMods) || hasPrefix(mod, localOnly):
					if _, seen := badMods[mod]; !seen {
						badMods[mod] = p
					}
				}
			}
			for _, mod := range slices.Sorted(maps.Keys(badMods)) {
				if hasPrefix(mod, localOnly) {
					t.Errorf("links module %s (package %s), which only the local platform and the tests may use", mod, badMods[mod])
				} else {
					t.Errorf("links module %s (package %s), which none of the shared packages it may link brings", mod, badMods[mod])
				}
			}
		})
	}
}

// domainPkgs are the domain: the entities, their rules and the error type
// (domain), and the pure rule packages it builds on. They say what the API
// is about, not how it is stored or served, so they link none of the
// adapters (store, apigw, ddb, ...) and no AWS module, which
// TestDomainDeps checks.
//
// domain depends on authz on purpose: a role's permissions are the
// engine's Permission values and Role.AuthzRole hands a role to it. authz
// is a pure engine (no I/O, no project package), so the domain building
// on it adds no adapter; engine below pins that it stays that way.
var domainPkgs = []string{"domain", "authz", "ids", "builtin", "names"}

// engine are the domain packages that depend on no package of the
// project at all: the decision engine and the id rules.
var engine = []string{"authz", "ids"}

// adapters are shared packages outside the domain that must not reach the
// HTTP layer, each with what it must not link: the store speaks domain
// errors, and apigw alone turns them into statuses; patch applies PATCH
// bodies that apigw has read, and refuses bad ones with domain errors.
//
// The permission check (access), the wiring every function shares (wire),
// the caller's identity (caller), the text rule (jsontext), the entity
// tags (etag) and the services the queue workers run (tasks, metrics,
// tests, appconfig, notifier, logs, addresssets) do not link apigw
// either: their HTTP handlers live in a package of their own
// (tasks/tasksapi, metrics/metricsapi, tests/testsapi, logs/logsapi,
// addresssets/addresssetsapi). The services the workers run do not link
// access (the permission check) either: only their handlers decide.
var adapters = map[string][]string{
	"store":                  {"cads/shared/apigw", "github.com/aws/aws-lambda-go"},
	"patch":                  {"cads/shared/apigw", "github.com/aws/", "net/http"},
	"access":                 {"cads/shared/apigw"},
	"wire":                   {"cads/shared/apigw"},
	"caller":                 {"cads/shared/apigw", "net/http"},
	"jsontext":               {"cads/shared/apigw", "net/http"},
	"tasks":                  {"cads/shared/apigw", "cads/shared/access"},
	"metrics":                {"cads/shared/apigw", "cads/shared/access"},
	"tests":                  {"cads/shared/apigw", "cads/shared/access"},
	"applications/appconfig": {"cads/shared/apigw", "cads/shared/access"},
	"notifier":               {"cads/shared/apigw", "cads/shared/access"},
	"etag":                   {"cads/shared/apigw", "net/http"},
	"logs":                   {"cads/shared/apigw", "cads/shared/access"},
	"addresssets":            {"cads/shared/apigw", "cads/shared/access"},
}

// TestDomainDeps keeps the package picture of docs/architecture.md: the
// domain packages depend on nothing of the project's beyond each other
// and on no AWS module (Lambda events, the SDK, DynamoDB types), the
// engine on nothing of the project's, and the store and patch do not
// depend on apigw.
func TestDomainDeps(t *testing.T) {
	root := moduleRoot(t)
	inDomain := map[string]bool{}
	var pkgs []string
	for _, p := range domainPkgs {
		inDomain["cads/shared/"+p] = true
		pkgs = append(pkgs, "./shared/"+p)
	}
	for p := range adapters {
		pkgs = append(pkgs, "./shared/"+p)
	}
	lines := goList(t, root, "{{.ImportPath}}\t{{join .Deps \" \"}}", false, pkgs...)
	if len(lines) != len(pkgs) {
		t.Fatalf("go list listed %d packages, want %d: %q", len(lines), len(pkgs), lines)
	}
	for _, line := range lines {
		pkg, list, _ := strings.Cut(line, "\t")
		deps := strings.Fields(list)
		name := strings.TrimPrefix(pkg, "cads/shared/")
		if forbidden, ok := adapters[name]; ok {
			for _, d := range deps {
				if hasPrefix(d, forbidden) {
					t.Errorf("%s links %s: it must speak domain errors and leave HTTP to apigw (and the HTTP handlers)", pkg, d)
				}
			}
			continue
		}
		if !inDomain[pkg] {
			t.Fatalf("go list listed %s, which was not asked for", pkg)
		}
		if slices.Contains(engine, name) {
			for _, d := range deps {
				if strings.HasPrefix(d, "cads/") {
					t.Errorf("%s links %s: the engine depends on no package of the project (the domain builds on it, not the reverse)", pkg, d)
				}
			}
		}
		for _, d := range deps {
			switch {
			case strings.HasPrefix(d, "cads/") && !inDomain[d]:
				t.Errorf("domain package %s links %s: the domain depends on no adapter (move the dependency out, or the code into an adapter)", pkg, d)
			case strings.HasPrefix(d, "github.com/aws/"):
				t.Errorf("domain package %s links %s: the domain knows nothing of AWS", pkg, d)
			}
		}
	}
}

func sharedOf(pkgs []string) []string {
	var out []string
	for _, p := range pkgs {
		if s, ok := strings.CutPrefix(p, "cads/shared/"); ok {
			out = append(out, s)
		}
	}
	return out
}

func hasPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// goList runs `go list` as `make build` builds the functions.
func goList(t *testing.T, root, format string, withDeps bool, pkgs ...string) []string {
	t.Helper()
	args := []string{"list", "-tags", "lambda.norpc", "-f", format}
	if withDeps {
		args = append(args, "-deps")
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		t.Fatal("not inside a module")
	}
	return filepath.Dir(mod)
}

// TestUnracedAreLocalOnly keeps `make test`'s race detector on everything
// a function ships: the packages the Makefile compiles without it
// (TEST_UNRACED) must be modules of localOnly, which TestFunctionDeps
// keeps out of every function.
func TestUnracedAreLocalOnly(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(moduleRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.Lines(string(mk)) {
		if rest, ok := strings.CutPrefix(line, "TEST_UNRACED :="); ok {
			patterns = append(patterns, strings.Fields(rest)...)
		}
	}
	if len(patterns) == 0 {
		t.Fatal("the Makefile sets no TEST_UNRACED: if every package is instrumented again, remove this test")
	}
	for _, p := range patterns {
		if mod := strings.TrimSuffix(p, "/..."); !hasPrefix(mod, localOnly) {
			t.Errorf("TEST_UNRACED has %s: only local-platform and test modules (localOnly) may go without the race detector", p)
		}
	}
	if !bytes.Contains(mk, []byte("$(foreach p,$(TEST_UNRACED),-gcflags=$(p)=-race=false)")) {
		t.Error("the test recipe no longer passes TEST_UNRACED to go test: update this test with it")
	}
}
