package installer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"cads/infra/testenv"
	"cads/shared/access"
	"cads/shared/installer"
	"cads/shared/store"
)

const (
	secretARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:OperatorKeySecret-AbCdEf"
	email     = "ops@example.com"
)

// secretsStandIn is a stand-in for AWS Secrets Manager: the JSON 1.1
// protocol of PutSecretValue, GetSecretValue and DescribeSecret for the
// secret secretARN, as the real SDK client speaks it.
type secretsStandIn struct {
	mu       sync.Mutex
	versions []string // values, oldest first; the last one is AWSCURRENT
	calls    map[string]int
	failPut  bool
}

func (s *secretsStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "secretsmanager.")
	s.calls[op]++
	var in struct {
		SecretID     string `json:"SecretId"`
		SecretString string
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &in); err != nil || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		writeErr(w, "InvalidRequestException", "bad request")
		return
	}
	if in.SecretID != secretARN {
		writeErr(w, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	version := func(i int) string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", i) }
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch op {
	case "PutSecretValue":
		if s.failPut {
			writeErr(w, "InternalServiceError", "stand-in refuses")
			return
		}
		s.versions = append(s.versions, in.SecretString)
		_ = json.NewEncoder(w).Encode(map[string]any{"ARN": secretARN, "Name": "OperatorKeySecret", "VersionId": version(len(s.versions)), "VersionStages": []string{"AWSCURRENT"}})
	case "GetSecretValue":
		if len(s.versions) == 0 {
			writeErr(w, "ResourceNotFoundException", "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT")
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ARN": secretARN, "Name": "OperatorKeySecret", "SecretString": s.versions[len(s.versions)-1], "VersionId": version(len(s.versions)), "VersionStages": []string{"AWSCURRENT"}})
	case "DescribeSecret":
		stages := map[string][]string{}
		if n := len(s.versions); n > 0 {
			stages[version(n)] = []string{"AWSCURRENT"}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ARN": secretARN, "Name": "OperatorKeySecret", "VersionIdsToStages": stages})
	default:
		writeErr(w, "InvalidRequestException", "the stand-in does not serve "+op)
	}
}

func writeErr(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "Message": msg})
}

// cloudFormation records the responses sent to the pre-signed ResponseURL.
type cloudFormation struct {
	mu        sync.Mutex
	responses []cfn.Response
}

func (c *cloudFormation) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var res cfn.Response
	if r.Method != http.MethodPut || json.NewDecoder(r.Body).Decode(&res) != nil {
		http.Error(w, "want a PUT of a JSON response", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.responses = append(c.responses, res)
	c.mu.Unlock()
}

func (c *cloudFormation) last(t *testing.T) cfn.Response {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.responses) == 0 {
		t.Fatal("no response was sent to CloudFormation")
	}
	return c.responses[len(c.responses)-1]
}

type env struct {
	db      testenv.Dynamo
	st      *store.Store
	secrets *secretsStandIn
	sm      *secretsmanager.Client
	cf      *cloudFormation
	cfURL   string
	logs    *strings.Builder
	run     cfn.CustomResourceLambdaFunction
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{db: testenv.NewDynamo(t), secrets: &secretsStandIn{calls: map[string]int{}}, cf: &cloudFormation{}, logs: &strings.Builder{}}
	e.st = store.New(e.db.Client, e.db.Table)
	smSrv := httptest.NewServer(e.secrets)
	t.Cleanup(smSrv.Close)
	e.sm = secretsmanager.New(secretsmanager.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(smSrv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	cfSrv := httptest.NewServer(e.cf)
	t.Cleanup(cfSrv.Close)
	e.cfURL = cfSrv.URL
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, e.logs}, nil))
	in := &installer.Installer{Store: e.st, Secrets: installer.SecretsManager{Client: e.sm}, Log: log}
	e.run = cfn.LambdaWrap(in.Handle)
	return e
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// send delivers one CloudFormation event, the way Lambda runs the wrapped
// handler, and returns what CloudFormation received.
func (e *env) send(t *testing.T, typ cfn.RequestType, physicalID string, props map[string]any) cfn.Response {
	t.Helper()
	ev := cfn.Event{
		RequestType:        typ,
		RequestID:          "req-" + string(typ),
		ResponseURL:        e.cfURL + "/cloudformation-custom-resource-response",
		ResourceType:       "Custom::Installation",
		PhysicalResourceID: physicalID,
		LogicalResourceID:  "Installation",
		StackID:            "arn:aws:cloudformation:us-east-1:123456789012:stack/cads/00000000-0000-0000-0000-000000000000",
		ResourceProperties: props,
	}
	if typ == cfn.RequestUpdate {
		ev.OldResourceProperties = props
	}
	if reason, err := e.run(context.Background(), ev); err != nil {
		t.Fatalf("%s: the response did not reach CloudFormation: %v (%s)", typ, err, reason)
	}
	return e.cf.last(t)
}

func (e *env) secret(t *testing.T) string {
	t.Helper()
	out, err := e.sm.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretARN)})
	if err != nil {
		t.Fatalf("read the secret: %v", err)
	}
	return aws.ToString(out.SecretString)
}

func (e *env) items(t *testing.T) int32 {
	t.Helper()
	out, err := e.db.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.db.Table), Select: types.SelectCount})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

func props() map[string]any {
	return map[string]any{"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:installer", installer.PropSecretID: secretARN, installer.PropOperatorEmail: email,
		installer.PropSchemaVersion: strconv.Itoa(store.SchemaVersion)}
}

func TestCreateUpdateDeleteKeepOneInstallation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	created := e.send(t, cfn.RequestCreate, "", props())
	if created.Status != cfn.StatusSuccess {
		t.Fatalf("Create: %s (%s)", created.Status, created.Reason)
	}
	root, _ := created.Data["RootAccount"].(string)
	if root == "" || created.PhysicalResourceID != "installation/"+root {
		t.Fatalf("Create: physical id %q, data %v", created.PhysicalResourceID, created.Data)
	}
	in, err := e.st.Installation.GetInstallation(ctx)
	if err != nil || in.RootAccount != root || in.Operator != created.Data["Operator"] {
		t.Fatalf("installation %+v (%v), response data %v", in, err, created.Data)
	}
	secret := e.secret(t)
	if strings.Contains(e.logs.String(), secret) || strings.Contains(fmt.Sprint(created), secret) {
		t.Fatal("the operator key appears in a log or in the response to CloudFormation")
	}

	// The stored key is the operator's and opens the root account.
	res, err := access.New(access.NewStore(e.st), slog.New(slog.DiscardHandler)).Authorize(ctx, secret, "GET", "/v2/accounts/"+root)
	if err != nil {
		t.Fatalf("the stored key does not authenticate: %v", err)
	}
	if res.Principal.ID != in.Operator || res.Principal.Email != email || !res.Decision.Allowed {
		t.Fatalf("stored key: principal %+v, decision %+v", res.Principal, res.Decision)
	}
	items := e.items(t)

	// Update, and a second Create (e.g. a retried event), change nothing.
	for _, ev := range []struct {
		typ cfn.RequestType
		id  string
	}{{cfn.RequestUpdate, created.PhysicalResourceID}, {cfn.RequestCreate, ""}} {
		got := e.send(t, ev.typ, ev.id, props())
		if got.Status != cfn.StatusSuccess || got.PhysicalResourceID != created.PhysicalResourceID || got.Data["RootAccount"] != root {
			t.Fatalf("%s: %s %q, physical id %q, data %v", ev.typ, got.Status, got.Reason, got.PhysicalResourceID, got.Data)
		}
		if now := e.secret(t); now != secret {
			t.Fatalf("%s replaced the stored operator key", ev.typ)
		}
		if n := e.items(t); n != items {
			t.Fatalf("%s: %d items in the table, want %d", ev.typ, n, items)
		}
	}
	if n := e.secrets.calls["PutSecretValue"]; n != 1 {
		t.Fatalf("PutSecretValue called %d times, want once", n)
	}

	// Delete succeeds and keeps everything.
	deleted := e.send(t, cfn.RequestDelete, created.PhysicalResourceID, props())
	if deleted.Status != cfn.StatusSuccess || deleted.PhysicalResourceID != created.PhysicalResourceID {
		t.Fatalf("Delete: %s %q, physical id %q", deleted.Status, deleted.Reason, deleted.PhysicalResourceID)
	}
	if n := e.items(t); n != items {
		t.Fatalf("Delete: %d items in the table, want %d", n, items)
	}
	if _, err := access.New(access.NewStore(e.st), slog.New(slog.DiscardHandler)).Authorize(ctx, e.secret(t), "GET", "/v2/accounts/"+root); err != nil {
		t.Fatalf("after Delete the stored key no longer authenticates: %v", err)
	}
}

// A key that could not be stored is never installed: the table stays empty,
// CloudFormation hears FAILED, and the next try installs with a stored key.
func TestSecretFailureInstallsNothing(t *testing.T) {
	e := newEnv(t)
	e.secrets.failPut = true
	got := e.send(t, cfn.RequestCreate, "", props())
	if got.Status != cfn.StatusFailed || !strings.Contains(got.Reason, "put secret value") {
		t.Fatalf("Create with a failing secret store: %s %q", got.Status, got.Reason)
	}
	if n := e.items(t); n != 0 {
		t.Fatalf("%d items written although the key was not stored", n)
	}
	e.secrets.failPut = false
	if got := e.send(t, cfn.RequestCreate, "", props()); got.Status != cfn.StatusSuccess {
		t.Fatalf("retry: %s %q", got.Status, got.Reason)
	}
	in, err := e.st.Installation.GetInstallation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := access.New(access.NewStore(e.st), slog.New(slog.DiscardHandler)).Authorize(context.Background(), e.secret(t), "GET", "/v2/accounts/"+in.RootAccount)
	if err != nil || res.Principal.ID != in.Operator {
		t.Fatalf("retry: stored key: %+v %v", res.Principal, err)
	}
}

// Missing properties fail Create and Update, but Delete always succeeds:
// a failed Create is rolled back with a Delete that must not hang.
func TestBadPropertiesFailButDeleteSucceeds(t *testing.T) {
	e := newEnv(t)
	got := e.send(t, cfn.RequestCreate, "", map[string]any{installer.PropOperatorEmail: email})
	if got.Status != cfn.StatusFailed || !strings.Contains(got.Reason, installer.PropSecretID) {
		t.Fatalf("Create without SecretId: %s %q", got.Status, got.Reason)
	}
	if got := e.send(t, cfn.RequestDelete, got.PhysicalResourceID, map[string]any{}); got.Status != cfn.StatusSuccess {
		t.Fatalf("Delete after a failed Create: %s %q", got.Status, got.Reason)
	}
	if n := e.items(t); n != 0 {
		t.Fatalf("%d items written", n)
	}
}
