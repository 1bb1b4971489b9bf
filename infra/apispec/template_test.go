package apispec_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cads/infra/apispec"
	"cads/infra/local"
	"cads/infra/testenv"
)

func key(method, path string) string { return method + " " + path }

// Every endpoint of the contract has exactly one route, to the function
// the contract names, no other route exists, and every route goes through
// the REQUEST authorizer.
func TestTemplateRoutesMatchTheAPI(t *testing.T) {
	tpl := testenv.Template(t)
	routes := map[string][]string{} // route -> the function folders it invokes
	for _, r := range tpl.Routes() {
		k := key(r.Method, r.Path)
		routes[k] = append(routes[k], strings.TrimPrefix(tpl.Functions[r.Function].CodeURI, "functions/"))
		if r.Authorizer != "RbacAuthorizer" {
			t.Errorf("%s %s is not guarded by RbacAuthorizer (authorizer %q)", r.Method, r.Path, r.Authorizer)
		}
	}
	known := map[string]bool{}
	for _, e := range apispec.Endpoints {
		k := key(e.Method, e.Path)
		if known[k] {
			t.Errorf("endpoint %s listed twice", k)
		}
		known[k] = true
		if fs := routes[k]; len(fs) != 1 || fs[0] != e.Function {
			t.Errorf("%s: routed to %v, want exactly functions/%s (its x-cads-function)", k, fs, e.Function)
		}
	}
	for k := range routes {
		if !known[k] {
			t.Errorf("route %s is not in the contract (apispec.Endpoints)", k)
		}
	}
}

func TestAuthorizerIsUncachedRequestAuthorizer(t *testing.T) {
	tpl := testenv.Template(t)
	api := tpl.Apis["Api"]
	az, ok := api.Authorizers[api.DefaultAuthorizer]
	if !ok || api.DefaultAuthorizer != "RbacAuthorizer" {
		t.Fatalf("default authorizer %q not declared", api.DefaultAuthorizer)
	}
	if az.PayloadType != "REQUEST" {
		t.Errorf("authorizer payload %q, want REQUEST", az.PayloadType)
	}
	// A cached policy would serve one route's decision to another.
	if az.ReauthorizeEvery == nil || *az.ReauthorizeEvery != 0 {
		t.Errorf("authorizer caching must be off (ReauthorizeEvery 0), got %v", az.ReauthorizeEvery)
	}
	if f := tpl.Functions[az.FunctionLogicalID]; f.CodeURI != "functions/authorizer" {
		t.Errorf("authorizer function %s has code %q", az.FunctionLogicalID, f.CodeURI)
	}
}

func TestBinaryMediaTypes(t *testing.T) {
	api := testenv.Template(t).Apis["Api"]
	have := map[string]bool{}
	for _, m := range api.BinaryMediaTypes {
		have[m] = true
	}
	// multipart uploads and the archive types of application tests
	// (docs/api.md#application-tests).
	for _, m := range []string{"multipart/form-data", "application/x-tar", "application/zip", "application/x-tar+gzip", "application/x-tar+x-bzip2", "application/x-bzip2", "application/x-gzip"} {
		if !have[m] {
			t.Errorf("BinaryMediaTypes lacks %s", m)
		}
	}
}

// An authorizer that cannot decide (DynamoDB busy past its retries or its
// deadline) is a 429 to retry, as the functions answer contention: never a
// 500.
func TestAuthorizerFailureIsARetry(t *testing.T) {
	r, ok := testenv.Template(t).Apis["Api"].GatewayResponses["AUTHORIZER_FAILURE"]
	if !ok {
		t.Fatal("no AUTHORIZER_FAILURE gateway response")
	}
	if r.StatusCode != 429 || r.Headers["Retry-After"] == "" || !strings.Contains(r.Templates["application/json"], `"status":429`) {
		t.Errorf("AUTHORIZER_FAILURE: %d, Retry-After %q, body %s; want a 429 with Retry-After", r.StatusCode, r.Headers["Retry-After"], r.Templates["application/json"])
	}
}

// Gateway-made errors use the API's error body.
func TestGatewayResponsesUseTheErrorBody(t *testing.T) {
	api := testenv.Template(t).Apis["Api"]
	for _, typ := range []string{"UNAUTHORIZED", "ACCESS_DENIED", "AUTHORIZER_FAILURE", "MISSING_AUTHENTICATION_TOKEN", "REQUEST_TOO_LARGE", "THROTTLED", "DEFAULT_4XX", "DEFAULT_5XX"} {
		if _, ok := api.GatewayResponses[typ]; !ok {
			t.Errorf("no gateway response %s", typ)
		}
	}
	for typ, r := range api.GatewayResponses {
		if r.StatusCode == 0 {
			t.Errorf("%s: no StatusCode, so the body's status could disagree with the response's", typ)
		}
		if r.Headers["Content-Type"] != "application/json" {
			t.Errorf("%s: Content-Type %q", typ, r.Headers["Content-Type"])
		}
		// Substitute the variables API Gateway would, then parse.
		body := r.Templates["application/json"]
		for _, v := range []string{"$context.authorizer.message", "$context.error.message"} {
			body = strings.ReplaceAll(body, v, "some text")
		}
		var b struct {
			Status int `json:"status"`
			Error  struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			t.Errorf("%s: template is not JSON: %v", typ, err)
			continue
		}
		if b.Error.Type == "" || b.Error.Message == "" || b.Status != r.StatusCode {
			t.Errorf("%s: body %+v does not match status %d", typ, b, r.StatusCode)
		}
	}
}

// Every function's folder exists, builds as a Lambda bootstrap, and has a
// local constructor; every folder under functions/ is in the template.
func TestFunctionsBuildAndAreWired(t *testing.T) {
	root := testenv.Root(t)
	tpl := testenv.Template(t)
	seen := map[string]bool{}
	var pkgs []string
	for id, f := range tpl.Functions {
		seen[f.CodeURI] = true
		if f.Runtime != "provided.al2023" || f.Handler != "bootstrap" || len(f.Architectures) != 1 || f.Architectures[0] != "arm64" {
			t.Errorf("%s: runtime %s handler %s arch %v; want provided.al2023, bootstrap, arm64", id, f.Runtime, f.Handler, f.Architectures)
		}
		if f.Environment["TABLE_NAME"] != "Table" {
			t.Errorf("%s: TABLE_NAME is %q, want !Ref Table", id, f.Environment["TABLE_NAME"])
		}
		if _, ok := local.Functions[f.CodeURI]; !ok {
			t.Errorf("%s: no local constructor for %s in infra/local.Functions", id, f.CodeURI)
		}
		pkgs = append(pkgs, "./"+f.CodeURI)
	}
	// One go build for every function, with make build's flags: one
	// build loads the module and links in parallel, where one per
	// function spent most of its time doing that fifteen times. The
	// binaries go to a folder kept between runs (testenv.BuildDir), so a
	// run after no change to a function checks it builds without linking
	// it again (linking all of them took most of this package's CPU), and
	// any change relinks. Without the version control stamp (which make
	// build keeps): a commit, or an uncommitted file anywhere in the tree,
	// changes it, and every function was linked again.
	out := testenv.BuildDir(t, "apispec-functions")
	cmd := exec.Command("go", append([]string{"build", "-tags", "lambda.norpc", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the functions do not all build: %v\n%s", err, b)
	}
	for id, f := range tpl.Functions {
		if fi, err := os.Stat(filepath.Join(out, filepath.Base(f.CodeURI))); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
			t.Errorf("%s (%s): no bootstrap binary: %v", id, f.CodeURI, err)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "functions", "*"))
	for _, d := range dirs {
		if rel := "functions/" + filepath.Base(d); !seen[rel] {
			t.Errorf("%s is not a function of template.yaml", rel)
		}
	}
}

// Queue-triggered functions must not lose messages: each queue has a
// dead-letter queue and the function reports partial batch failures.
func TestQueueFunctionsHaveDLQAndPartialFailures(t *testing.T) {
	tpl := testenv.Template(t)
	for id, f := range tpl.Functions {
		for _, ev := range f.Events {
			if ev.SQS == nil {
				continue
			}
			if !ev.SQS.ReportsBatchItemFailures() {
				t.Errorf("%s/%s does not report batch item failures", id, ev.Name)
			}
			q := tpl.Queues[ev.SQS.Queue]
			if q.RedrivePolicy == nil || q.RedrivePolicy.DeadLetterQueue == "" {
				t.Errorf("%s/%s: queue %s has no dead-letter queue", id, ev.Name, ev.SQS.Queue)
			}
		}
	}
}
