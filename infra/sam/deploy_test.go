package sam_test

// Checks of template.yaml against what breaks a deployed stack on AWS
// although the template passes the SAM translator and cfn-lint: limits of
// API Gateway, Lambda and SQS, and what a stack must keep when it is
// deleted. docs/deploy.md explains each rule.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cads/infra/sam"
	"cads/infra/testenv"
	"cads/shared/builtin"
	"cads/shared/store"
)

// apiGatewayIntegrationLimit is API Gateway's maximum integration timeout
// for a REST API (29 s): a function allowed to run longer is cut off by a
// 504 while its work may still land.
const apiGatewayIntegrationLimit = 29

func TestTemplateAPIFunctionsFitTheIntegrationTimeout(t *testing.T) {
	tpl := testenv.Template(t)
	seen := map[string]bool{}
	for _, r := range tpl.Routes() {
		if seen[r.Function] {
			continue
		}
		seen[r.Function] = true
		if f := tpl.Functions[r.Function]; f.Timeout > apiGatewayIntegrationLimit {
			t.Errorf("%s serves %s %s with Timeout %d s, above API Gateway's %d s integration limit", f.LogicalID, r.Method, r.Path, f.Timeout, apiGatewayIntegrationLimit)
		}
	}
	if len(seen) == 0 {
		t.Fatal("template.yaml has no routes")
	}
}

// AWS's advice for an SQS event source: a visibility timeout of at least
// six times the function's timeout plus the batching window, so a batch
// retried after throttling is not handed out again while it runs.
func TestTemplateQueueVisibilityCoversSixInvocations(t *testing.T) {
	tpl := testenv.Template(t)
	n := 0
	for _, id := range slices.Sorted(maps.Keys(tpl.Functions)) {
		f := tpl.Functions[id]
		for _, ev := range f.Events {
			if ev.SQS == nil {
				continue
			}
			n++
			q := tpl.Queues[ev.SQS.Queue]
			want := 6*f.Timeout + ev.SQS.MaximumBatchingWindowInSeconds
			if q.VisibilityTimeout < want {
				t.Errorf("queue %s: VisibilityTimeout %d s, want at least %d s (6 x %s's Timeout %d s + batching window %d s)",
					q.LogicalID, q.VisibilityTimeout, want, id, f.Timeout, ev.SQS.MaximumBatchingWindowInSeconds)
			}
		}
	}
	if n == 0 {
		t.Fatal("template.yaml has no SQS event sources")
	}
}

// Every account lives in the table: deleting or replacing the stack must
// not delete it, and neither may a stray DeleteTable call.
func TestTemplateTableIsRetained(t *testing.T) {
	tpl := testenv.Template(t)
	for id, tb := range tpl.Tables {
		if tb.DeletionPolicy != "Retain" || tb.UpdateReplacePolicy != "Retain" {
			t.Errorf("table %s: DeletionPolicy %q, UpdateReplacePolicy %q; want Retain for both", id, tb.DeletionPolicy, tb.UpdateReplacePolicy)
		}
		if !tb.DeletionProtection {
			t.Errorf("table %s: DeletionProtectionEnabled is not true", id)
		}
	}
}

// The operator key is the only way into a fresh installation: the secret
// holding it outlives the stack like the table it opens.
func TestTemplateInstallsOnDeployment(t *testing.T) {
	tpl := testenv.Template(t)
	var installs []sam.Resource
	for _, r := range tpl.Resources {
		if strings.HasPrefix(r.Type, "Custom::") || r.Type == "AWS::CloudFormation::CustomResource" {
			installs = append(installs, r)
		}
	}
	if len(installs) != 1 {
		t.Fatalf("%d custom resources, want exactly one (the installation)", len(installs))
	}
	in := installs[0]
	fn := strings.TrimSuffix(fmt.Sprint(in.Properties["ServiceToken"]), ".Arn")
	f, ok := tpl.Functions[fn]
	if !ok {
		t.Fatalf("custom resource %s: ServiceToken %v is not a function's Arn", in.LogicalID, in.Properties["ServiceToken"])
	}
	if f.CodeURI != "functions/installer" {
		t.Errorf("custom resource %s runs %s, want functions/installer", in.LogicalID, f.CodeURI)
	}
	secretID := fmt.Sprint(in.Properties["SecretId"])
	secret, ok := tpl.Resources[secretID]
	if !ok || secret.Type != "AWS::SecretsManager::Secret" {
		t.Fatalf("custom resource %s: SecretId %q is not an AWS::SecretsManager::Secret of the stack", in.LogicalID, secretID)
	}
	if secret.DeletionPolicy != "Retain" || secret.UpdateReplacePolicy != "Retain" {
		t.Errorf("secret %s: DeletionPolicy %q, UpdateReplacePolicy %q; want Retain (the retained table still trusts the key)", secretID, secret.DeletionPolicy, secret.UpdateReplacePolicy)
	}
	for _, k := range []string{"SecretString", "GenerateSecretString"} {
		if _, set := secret.Properties[k]; set {
			t.Errorf("secret %s sets %s: a stack update would overwrite the operator key", secretID, k)
		}
	}
	if _, ok := in.Properties["OperatorEmail"]; !ok {
		t.Errorf("custom resource %s: no OperatorEmail", in.LogicalID)
	}
	named := false
	for name, o := range tpl.Outputs {
		if fmt.Sprint(o.Value) == secretID {
			named = true
		}
		if strings.Contains(strings.ToLower(name), "secret") && fmt.Sprint(o.Value) != secretID {
			t.Errorf("output %s: %v", name, o.Value)
		}
	}
	if !named {
		t.Errorf("no output names the secret %s", secretID)
	}
	// CloudFormation calls a custom resource on a stack update only when
	// its properties change: the revision of the built-in roles is one, so
	// a deployment that brings a new revision upgrades the stored roles.
	if got, want := fmt.Sprint(in.Properties["BuiltinRolesRevision"]), strconv.Itoa(builtin.Revision()); got != want {
		t.Errorf("custom resource %s: BuiltinRolesRevision %q, want %q (shared/builtin/roles.json's revision)", in.LogicalID, got, want)
	}
	// The same for the schema migration: a new version of it runs only if
	// the template says so.
	if got, want := fmt.Sprint(in.Properties["SchemaVersion"]), strconv.Itoa(store.SchemaVersion); got != want {
		t.Errorf("custom resource %s: SchemaVersion %q, want %q (shared/store's SchemaVersion)", in.LogicalID, got, want)
	}
	res := tpl.Resources[fn]
	policy, _ := json.Marshal(res.Properties["Policies"])
	if !strings.Contains(string(policy), "secretsmanager:PutSecretValue") || !strings.Contains(string(policy), `"`+secretID+`"`) {
		t.Errorf("%s may not put the secret %s: Policies %s", fn, secretID, policy)
	}
	if strings.Contains(string(policy), "secretsmanager:GetSecretValue") {
		t.Errorf("%s may read the operator key back; it only needs to write it", fn)
	}
}

// The edge sends its ingest batches to MetricsQueue: the stack gives it a
// policy to attach and names the queue.
func TestTemplateLetsTheEdgeSendMetrics(t *testing.T) {
	tpl := testenv.Template(t)
	var policy string
	for id, r := range tpl.Resources {
		if r.Type != "AWS::IAM::ManagedPolicy" {
			continue
		}
		doc, _ := json.Marshal(r.Properties["PolicyDocument"])
		if strings.Contains(string(doc), `"sqs:SendMessage"`) && strings.Contains(string(doc), `"MetricsQueue.Arn"`) {
			policy = id
		}
	}
	if policy == "" {
		t.Fatal("no AWS::IAM::ManagedPolicy allows sqs:SendMessage on MetricsQueue")
	}
	outputs := map[string]bool{}
	for _, o := range tpl.Outputs {
		outputs[fmt.Sprint(o.Value)] = true
	}
	for _, want := range []string{policy, "MetricsQueue"} {
		if !outputs[want] {
			t.Errorf("no output gives %s to the edge", want)
		}
	}
}

// Every 4XX type API Gateway can produce keeps its own status (DEFAULT_4XX
// would turn it into one fixed status), and no template pastes
// $context.error.message, which API Gateway inserts unescaped.
func TestTemplateGatewayResponsesKeepTheirStatus(t *testing.T) {
	api := testenv.Template(t).Apis["Api"]
	fourXX := []string{"ACCESS_DENIED", "BAD_REQUEST_BODY", "BAD_REQUEST_PARAMETERS", "EXPIRED_TOKEN", "INVALID_API_KEY",
		"INVALID_SIGNATURE", "MISSING_AUTHENTICATION_TOKEN", "QUOTA_EXCEEDED", "REQUEST_TOO_LARGE", "RESOURCE_NOT_FOUND",
		"THROTTLED", "UNAUTHORIZED", "UNSUPPORTED_MEDIA_TYPE", "WAF_FILTERED"}
	for _, typ := range fourXX {
		r, ok := api.GatewayResponses[typ]
		if !ok {
			t.Errorf("%s is not customised: DEFAULT_4XX would answer it with status %d", typ, api.GatewayResponses["DEFAULT_4XX"].StatusCode)
			continue
		}
		if r.StatusCode < 400 || r.StatusCode > 499 {
			t.Errorf("%s: status %d is not a 4XX", typ, r.StatusCode)
		}
	}
	for typ, r := range api.GatewayResponses {
		for ct, body := range r.Templates {
			if strings.Contains(body, "$context.error.message") && !strings.Contains(body, "$context.error.messageString") {
				t.Errorf("%s (%s) inserts $context.error.message unescaped: %s", typ, ct, body)
			}
		}
	}
}

// One stage: without OpenApiVersion SAM also deploys the API as a stage
// named Stage.
func TestTemplateApiHasOneStage(t *testing.T) {
	for id, a := range testenv.Template(t).Apis {
		if !strings.HasPrefix(a.OpenApiVersion, "3.") {
			t.Errorf("api %s: OpenApiVersion %q; set it (e.g. 3.0) so SAM deploys the stage %q only", id, a.OpenApiVersion, a.StageName)
		}
	}
	cfn := translated(t)
	var stages []string
	for id, r := range resources(cfn) {
		if r.Type == "AWS::ApiGateway::Stage" {
			stages = append(stages, id)
		}
		if r.Type == "AWS::ApiGateway::Deployment" {
			if s, ok := r.Properties["StageName"]; ok {
				t.Errorf("deployment %s creates the extra stage %v", id, s)
			}
		}
	}
	if len(stages) != 1 {
		t.Errorf("stages %v, want exactly one", stages)
	}
}

// lambdaPolicyLimit is the size limit of a Lambda function's resource
// policy (20 KB).
const lambdaPolicyLimit = 20 * 1024

// Each AWS::Lambda::Permission is one statement of its function's
// resource policy. SAM writes one per Api event; the translated template
// is measured with realistic names, and every function must stay under
// half the limit so routes can still be added.
func TestTemplateResourcePoliciesStaySmall(t *testing.T) {
	cfn := translated(t)
	sizes, statements := policySizes(t, cfn)
	if len(sizes) == 0 {
		t.Fatal("no AWS::Lambda::Permission in the translated template")
	}
	for _, fn := range slices.Sorted(maps.Keys(sizes)) {
		t.Logf("%-22s %3d statements %6d bytes (%4.1f%% of 20 KB)", fn, statements[fn], sizes[fn], 100*float64(sizes[fn])/lambdaPolicyLimit)
		if sizes[fn] > lambdaPolicyLimit/2 {
			t.Errorf("%s: resource policy of about %d bytes (%d statements), over half of Lambda's %d-byte limit", fn, sizes[fn], statements[fn], lambdaPolicyLimit)
		}
	}
}

// The CloudFormation side of the names a policy statement carries, chosen
// long: a 20-character stack name in the region with the longest name.
const (
	stackName = "cads-api-v2-producti"
	region    = "ap-southeast-2"
	accountID = "123456789012"
	apiID     = "a1b2c3d4e5"
)

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// policySizes estimates each function's resource policy as Lambda stores
// it: one statement per permission, with CloudFormation's generated
// statement ids and function names at their longest.
func policySizes(t *testing.T, cfn map[string]any) (map[string]int, map[string]int) {
	t.Helper()
	type statement struct {
		Sid       string
		Effect    string
		Principal map[string]string
		Action    string
		Resource  string
		Condition map[string]map[string]string `json:",omitempty"`
	}
	byFunction := map[string][]statement{}
	for id, r := range resources(cfn) {
		if r.Type != "AWS::Lambda::Permission" {
			continue
		}
		fn := target(r.Properties["FunctionName"])
		if fn == "" {
			t.Errorf("permission %s: FunctionName %v names no function of the stack", id, r.Properties["FunctionName"])
			continue
		}
		// CloudFormation names the function stack-LogicalId-SUFFIX (at
		// most 64 characters) and the statement stack-LogicalId-SUFFIX.
		name := limit(stackName+"-"+fn+"-ABCDEFGHIJKLM", 64)
		st := statement{
			Sid:       limit(stackName+"-"+id+"-ABCDEFGHIJKLM", 100),
			Effect:    "Allow",
			Principal: map[string]string{"Service": fmt.Sprint(r.Properties["Principal"])},
			Action:    fmt.Sprint(r.Properties["Action"]),
			Resource:  "arn:aws:lambda:" + region + ":" + accountID + ":function:" + name,
		}
		if src := sub(r.Properties["SourceArn"]); src != "" {
			st.Condition = map[string]map[string]string{"ArnLike": {"AWS:SourceArn": src}}
		}
		byFunction[fn] = append(byFunction[fn], st)
	}
	sizes, counts := map[string]int{}, map[string]int{}
	for fn, sts := range byFunction {
		b, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Id": "default", "Statement": sts})
		if err != nil {
			t.Fatal(err)
		}
		sizes[fn], counts[fn] = len(b), len(sts)
	}
	return sizes, counts
}

func limit(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// target is the logical id in {"Ref": X} or {"Fn::GetAtt": [X, "Arn"]}.
func target(v any) string {
	m, _ := v.(map[string]any)
	if ref, ok := m["Ref"].(string); ok {
		return ref
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) > 0 {
		s, _ := ga[0].(string)
		return s
	}
	return ""
}

// sub renders a SourceArn: a string or an Fn::Sub with the names above.
func sub(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	m, _ := v.(map[string]any)
	var (
		src  string
		vars map[string]any
	)
	switch x := m["Fn::Sub"].(type) {
	case string:
		src = x
	case []any:
		if len(x) == 2 {
			src, _ = x[0].(string)
			vars, _ = x[1].(map[string]any)
		}
	}
	return subVar.ReplaceAllStringFunc(src, func(s string) string {
		name := s[2 : len(s)-1]
		if v, ok := vars[name]; ok {
			if str, ok := v.(string); ok {
				return str
			}
			if target(v) != "" {
				return apiID
			}
		}
		switch name {
		case "AWS::Region":
			return region
		case "AWS::AccountId":
			return accountID
		case "AWS::Partition":
			return "aws"
		}
		return apiID // ${Api}: the only resource a SourceArn names here
	})
}

type cfnResource struct {
	Type       string
	Properties map[string]any
}

func resources(cfn map[string]any) map[string]cfnResource {
	b, _ := json.Marshal(cfn["Resources"])
	var rs map[string]cfnResource
	_ = json.Unmarshal(b, &rs)
	return rs
}

// translated is template.yaml through the SAM translator; the test is
// skipped where the translator is not installed (`make lint` says how).
// The translator runs once per test binary (a Python process of about a
// second and a half): the tests that use it only read the result.
func translated(t *testing.T) map[string]any {
	t.Helper()
	cfn, err := translateOnce(filepath.Join(testenv.Root(t), "template.yaml"))
	if errors.Is(err, sam.ErrNoTranslator) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return cfn
}

// translation is template.yaml translated, once.
var translation struct {
	once sync.Once
	cfn  map[string]any
	err  error
}

func translateOnce(path string) (map[string]any, error) {
	translation.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		translation.cfn, translation.err = sam.Translate(ctx, path)
	})
	return translation.cfn, translation.err
}

// sam build runs `make build-<LogicalId>` (BuildMethod: makefile) from the
// repository root: each target must build the function's own folder with
// the flags of `make build`, for the template's architecture.
func TestTemplateSAMBuildRunsTheMakefile(t *testing.T) {
	root := testenv.Root(t)
	tpl := testenv.Template(t)
	for _, id := range slices.Sorted(maps.Keys(tpl.Functions)) {
		f := tpl.Functions[id]
		md := tpl.Resources[id].Metadata
		if f.BuildMethod != "makefile" || md["ProjectRootDirectory"] != "." || md["ContextPath"] != "." {
			t.Errorf("%s: Metadata %v; want BuildMethod makefile with ProjectRootDirectory and ContextPath \".\" (the Makefile and go.mod are at the root)", id, md)
			continue
		}
		cmd := exec.Command("make", "-n", "build-"+id, "ARTIFACTS_DIR=/artifacts")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("make -n build-%s: %v\n%s", id, err, out)
			continue
		}
		want := "GOARCH=" + f.Architectures[0] + " CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' -o /artifacts/bootstrap ./" + f.CodeURI
		if !strings.Contains(string(out), want) {
			t.Errorf("make build-%s runs\n%s\nwant it to contain\n%s", id, out, want)
		}
	}
}

// The way SAM calls it: one function, for real, into an artifacts folder.
func TestTemplateSAMBuildTargetBuildsTheLambdaBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a function")
	}
	// A folder kept between runs (testenv.BuildDir): go build
	// relinks the binary there only when its build ID differs from what
	// the sources and flags give now, so a run after no change to the
	// function still runs the target and checks what it built, without
	// linking it again. Without the version control stamp: each commit,
	// or an uncommitted file anywhere in the tree, changes it.
	art := testenv.BuildDir(t, "sam-artifacts")
	cmd := exec.Command("make", "build-MetricsFunction")
	cmd.Dir = testenv.Root(t)
	cmd.Env = append(os.Environ(), "ARTIFACTS_DIR="+art, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -buildvcs=false"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build-MetricsFunction: %v\n%s", err, out)
	}
	bin := filepath.Join(art, "bootstrap")
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m %s: %v\n%s", bin, err, out)
	}
	for _, want := range []string{"build\t-tags=lambda.norpc", "build\tGOARCH=arm64", "build\tGOOS=linux", "build\tCGO_ENABLED=0", "build\t-trimpath=true", "path\tcads/functions/metrics"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("%s lacks %q:\n%s", bin, want, out)
		}
	}
}
