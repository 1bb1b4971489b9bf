package isolation_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"cads/infra/local/localtest"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/store"
)

// finding3Config is an application test configuration (a tar, as the
// reference document's examples are packed) whose one session loads urls.
// Each virtual user pauses after every request: the assertions need some
// requests of each template in the run, not the thousands a second of
// unpaced virtual users send (each refused or answered alike).
func finding3Config(t *testing.T, urls ...string) []byte {
	t.Helper()
	var reqs []map[string]any
	for i, u := range urls {
		reqs = append(reqs, map[string]any{"name": "r" + string(rune('a'+i)), "method": "GET", "url": u, "wait": true})
	}
	cfg, _ := json.Marshal(map[string]any{"probabilities": 1, "models": map[string]any{
		"drain": map[string]any{"type": "user.StaticSession", "requests": reqs, "wait-time": 50},
	}})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "test.json", Mode: 0o644, Size: int64(len(cfg)), ModTime: time.Unix(1767225600, 0), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(cfg)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFinding3_TestTargetsOnlyOwnAliases replays finding 3: an
// application test whose request URL named the embedded SQS server
// (127.0.0.1:<port>) drained another tenant's queued notification while
// it ran. Through the local gateway, every upload of such a configuration
// is a 400 naming the host; a configuration stored before the check runs
// without those requests (errors in its result, nothing sent); the
// notification stays queued; and a test of the account's own alias is
// delivered to the stand-in edge, over HTTP and HTTPS.
func TestFinding3_TestTargetsOnlyOwnAliases(t *testing.T) {
	p, _ := localtest.Start(t)
	ctx := context.Background()
	op := p.Bootstrap.Secret

	do := func(method, path, ctype string, body []byte) (int, map[string]any) {
		t.Helper()
		st, m, _ := finding3Call(t, p.URL, op, method, path, ctype, body)
		return st, m
	}
	doJSON := func(method, path string, v any) (int, map[string]any) {
		t.Helper()
		st, m, _ := finding3JSON(t, p.URL, op, method, path, v)
		return st, m
	}
	form := func(method, path string, archive []byte) (int, map[string]any) {
		t.Helper()
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="drain.tar"`)
		h.Set("Content-Type", "application/x-tar")
		w, _ := mw.CreatePart(h)
		_, _ = w.Write(archive)
		_ = mw.Close()
		return do(method, path, mw.FormDataContentType(), buf.Bytes())
	}

	// Another tenant's notification, waiting in the notifications
	// dead-letter queue, which no function consumes: only an attack could
	// take it.
	dlq := p.Queues["NotificationsDLQ"].URL
	if dlq == "" {
		t.Fatal("the template declares no NotificationsDLQ")
	}
	note := `{"kind":"invitation","account":"tenant-b","to":"b@example.com"}`
	sent, err := p.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(note)})
	if err != nil {
		t.Fatal(err)
	}
	sqsHost := strings.TrimPrefix(aws.ToString(p.SQS.Options().BaseEndpoint), "http://")
	attack := "http://" + sqsHost + "/?Action=ReceiveMessage&MaxNumberOfMessages=10&VisibilityTimeout=43200&QueueUrl=" + dlq

	// The attacker's account has an application of its own.
	const alias = "shop.example.com"
	if st, app := doJSON("POST", "/v2/applications", map[string]any{"name": "Shop", "aliases": []string{alias}}); st != 200 {
		t.Fatalf("POST application: %d %v", st, app)
	}
	if st, m := do("PUT", "/v2/tests/shop", "application/x-tar", finding3Config(t, "http://"+alias+"/", "https://"+alias+"/secure")); st != 200 {
		t.Fatalf("PUT of the own alias: %d %v", st, m)
	}

	// Every way to upload the attack is refused, naming the host.
	refused := func(how string, st int, m map[string]any) {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		if msg, _ := e["message"].(string); st != 400 || e["type"] != "bad_request" || !strings.Contains(msg, sqsHost) {
			t.Fatalf("%s: %d %v, want a 400 naming %s", how, st, m, sqsHost)
		}
	}
	evil := finding3Config(t, "http://"+alias+"/", attack)
	st, m := do("PUT", "/v2/tests/drain", "application/x-tar", evil)
	refused("PUT raw", st, m)
	st, m = form("PUT", "/v2/tests/drain", evil)
	refused("PUT form", st, m)
	st, m = do("PATCH", "/v2/tests/shop", "application/x-tar", evil)
	refused("PATCH raw", st, m)
	st, m = form("PATCH", "/v2/tests/shop", evil)
	refused("PATCH form", st, m)
	if st, m := doJSON("GET", "/v2/tests/drain", nil); st != 404 {
		t.Fatalf("the refused test exists: %d %v", st, m)
	}

	// The same configuration stored before uploads were checked: its run
	// sends the own alias's request to the edge and not the attack.
	legacy := finding3Config(t, "http://"+alias+"/", attack)
	now := p.Deps.Store.Now()
	if err := p.Deps.Store.Tests.CreateAppTest(ctx, domain.AppTest{Account: p.Bootstrap.RootAccount, ID: "legacy", MediaType: "application/x-tar",
		Archive: store.NewAppTestBlob(ids.New(), legacy), ArchiveUpdated: now, Summary: "{}", Version: 1, Created: now, Updated: now}, legacy, nil); err != nil {
		t.Fatal(err)
	}
	run := func(id string) map[string]any {
		t.Helper()
		st, m := doJSON("POST", "/v2/tests", map[string]any{"id": id, "duration": 1, "virtualUsers": 2})
		if st != 200 {
			t.Fatalf("POST run of %s: %d %v", id, st, m)
		}
		loadID := m["last_run"].(map[string]any)["load_id"]
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			_, m := doJSON("GET", "/v2/tests/"+id, nil)
			if r, _ := m["last_run"].(map[string]any); r["load_id"] == loadID && (r["state"] == "succeeded" || r["state"] == "failed") {
				return r
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("the run of %s did not finish", id)
		return nil
	}
	templates := func(r map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, s := range r["result"].(map[string]any)["session_templates"].([]any) {
			for _, rt := range s.(map[string]any)["request_templates"].([]any) {
				out[rt.(map[string]any)["name"].(string)] = rt.(map[string]any)
			}
		}
		return out
	}

	r := run("legacy")
	if r["state"] != "succeeded" {
		t.Fatalf("legacy run: %v", r)
	}
	rts := templates(r)
	ra, rb := rts["ra"]["metrics"].(map[string]any), rts["rb"]["metrics"].(map[string]any)
	if why, _ := rts["rb"]["refused"].(string); rb["request_count"].(float64) == 0 || rb["error_count"] != rb["request_count"] || !strings.Contains(why, sqsHost) {
		t.Fatalf("the attack's request: %v", rts["rb"])
	}
	if ra["request_count"].(float64) == 0 || ra["error_count"] != 0.0 || int(ra["request_count"].(float64)) != p.Edge.Served(alias, r["load_id"].(string)) {
		t.Fatalf("the own alias's request: %v; the edge answered %d", ra, p.Edge.Served(alias, r["load_id"].(string)))
	}

	// The own alias, over HTTP and HTTPS, is answered by the stand-in edge.
	r = run("shop")
	agg := r["result"].(map[string]any)["aggregate_metrics"].(map[string]any)
	if n := agg["request_count"].(float64); r["state"] != "succeeded" || n == 0 || agg["error_count"] != 0.0 || int(n) != p.Edge.Served(alias, r["load_id"].(string)) {
		t.Fatalf("own run: %v; the edge answered %d", r, p.Edge.Served(alias, r["load_id"].(string)))
	}
	if codes := agg["response_counts"].([]any); len(codes) != 1 || codes[0].(map[string]any)["code"] != 200.0 {
		t.Fatalf("own run's answers: %v", codes)
	}

	// The other tenant's notification was never touched.
	attrs, err := p.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	if a := attrs.Attributes; a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)] != "1" || a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] != "0" {
		t.Fatalf("the notification queue: %v, want the one message visible", a)
	}
	got, err := p.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || aws.ToString(got.Messages[0].MessageId) != aws.ToString(sent.MessageId) || aws.ToString(got.Messages[0].Body) != note {
		t.Fatalf("the notification queue holds %+v", got.Messages)
	}
}
