package tests_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/metrics"
	"cads/shared/store"
	"cads/shared/wire"
	"cads/shared/wire/testrunnerwire"
	"cads/shared/wire/testswire"
)

// env is one test's installation: a fresh table (minidyn), the template's
// queues (goaws), the bootstrap, and the tests function and the test
// runner wired as their Lambda mains wire them. Requests are real API
// Gateway proxy events passed through JSON, with the authorizer context
// of a principal, as the gateway hands them over.
type env struct {
	t      *testing.T
	dyn    testenv.Dynamo
	deps   wire.Deps
	st     *store.Store
	op     caller.Principal // the operator, in the root account
	logs   *bytes.Buffer
	edge   *countingServer // the stand-in edge the runner sends to
	tests  apigw.ProxyHandler
	runner func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dyn: testenv.NewDynamo(t), logs: &bytes.Buffer{}}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.deps = wire.New(log, e.dyn.Client, e.dyn.Table)
	// The round trips counted here are the family's own; the cost tour
	// counts them with the audit trail's (docs/performance.md).
	e.deps.Audit = nil
	e.st = e.deps.Store

	e.deps.SQS, e.deps.QueueURLs = testenv.NewQueues(t)
	e.edge = newCountingServer(t)
	e.deps.Edge = wire.Edge{Addr: e.edge.Listener.Addr().String()}
	_, e.op = testenv.Bootstrap(t, e.st)
	// The operator's account has an application whose alias the fixtures'
	// URLs name (base).
	e.createApp(e.op.AccountID, "app1", alias)
	e.tests = testswire.Handler(e.deps)
	e.runner = testrunnerwire.Handler(e.deps)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", e.logs.String())
		}
	})
	e.dyn.Counter.Reset()
	return e
}

// alias is the alias of the operator's application app1, which the
// fixtures' URLs name.
const alias = "shop.example.com"

// createApp writes an application of account with aliases, as the
// applications API stores it.
func (e *env) createApp(account, id string, aliases ...string) {
	e.t.Helper()
	now := e.st.Now()
	cfg := mustJSON(map[string]any{"name": id, "aliases": aliases})
	if err := e.st.Applications.CreateApplication(context.Background(), domain.Application{ID: id, Account: account, State: domain.AppStopped, Config: cfg, Aliases: aliases, Version: 1, Created: now, Updated: now}, domain.Quota{}); err != nil {
		e.t.Fatal(err)
	}
}

type reply struct {
	Status  int
	Header  map[string][]string
	Raw     []byte
	Body    map[string]any
	List    []map[string]any
	Message string
}

func (r reply) str(k string) string { s, _ := r.Body[k].(string); return s }

// binaryTypes are the template's BinaryMediaTypes: such bodies arrive
// base64-encoded.
var binaryTypes = []string{"multipart/form-data", "application/zip", "application/x-tar", "application/x-tar+gzip", "application/x-tar+x-bzip2", "application/x-bzip2", "application/x-gzip"}

// call sends one request as the gateway would, as principal p.
func (e *env) call(p caller.Principal, method, path string, header map[string]string, body []byte) reply {
	e.t.Helper()
	path, query, _ := strings.Cut(path, "?")
	req := events.APIGatewayProxyRequest{
		Resource: "/v2/tests", Path: path, HTTPMethod: method,
		Headers: map[string]string{"Host": "127.0.0.1:3000"}, MultiValueHeaders: map[string][]string{"Host": {"127.0.0.1:3000"}},
		RequestContext: events.APIGatewayProxyRequestContext{
			ResourcePath: "/v2/tests", HTTPMethod: method, Path: "/api" + path, Stage: "api", RequestID: "req-1",
			AccountID: "123456789012", APIID: "local", Authorizer: p.Context(),
		},
	}
	if strings.HasPrefix(path, "/v2/tests/") {
		req.Resource = "/v2/tests/{id}"
		req.PathParameters = map[string]string{"id": strings.TrimPrefix(path, "/v2/tests/")}
	}
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			e.t.Fatal(err)
		}
		req.QueryStringParameters, req.MultiValueQueryStringParameters = map[string]string{}, q
		for k, v := range q {
			req.QueryStringParameters[k] = v[len(v)-1]
		}
	}
	for k, v := range header {
		req.Headers[k], req.MultiValueHeaders[k] = v, []string{v}
	}
	isBinary := false
	for _, b := range binaryTypes {
		if strings.HasPrefix(header["Content-Type"], b) {
			isBinary = true
		}
	}
	if isBinary {
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	} else {
		req.Body = string(body)
	}
	roundTripEvent(e.t, &req, &req.Body, req.IsBase64Encoded)
	resp, err := e.tests(context.Background(), req)
	if err != nil {
		e.t.Fatalf("function error: %v", err)
	}
	roundTripEvent(e.t, &resp, &resp.Body, resp.IsBase64Encoded)
	// Headers and multiValueHeaders merge as the gateway merges them.
	r := reply{Status: resp.StatusCode, Header: map[string][]string{}, Raw: []byte(resp.Body)}
	for k, v := range resp.Headers {
		r.Header[k] = []string{v}
	}
	for k, v := range resp.MultiValueHeaders {
		r.Header[k] = v
	}
	if resp.IsBase64Encoded {
		if r.Raw, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			e.t.Fatal(err)
		}
	}
	if ct := r.contentType(); ct == "application/json" {
		if err := json.Unmarshal(r.Raw, &r.Body); err != nil {
			if err := json.Unmarshal(r.Raw, &r.List); err != nil {
				e.t.Fatalf("%s %s: JSON body does not decode: %s", method, path, r.Raw)
			}
		}
		if er, ok := r.Body["error"].(map[string]any); ok {
			r.Message, _ = er["message"].(string)
			if st, _ := r.Body["status"].(float64); int(st) != r.Status {
				e.t.Fatalf("error body status %v for %d", st, r.Status)
			}
		}
	}
	return r
}

func (r reply) contentType() string {
	for k, v := range r.Header {
		if strings.EqualFold(k, "Content-Type") && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// roundTripEvent is roundTrip for a proxy event or response whose body is
// *body. A base64 body is ASCII without control characters, which JSON
// carries unchanged, so it stays out of the round trip: megabytes of it
// cost seconds of JSON scanning under the race detector and could not
// come back different. Any other body goes through JSON with the rest
// (invalid UTF-8 in it comes back replaced, as from Lambda).
func roundTripEvent[T any](t *testing.T, v *T, body *string, base64Body bool) {
	t.Helper()
	if !base64Body {
		roundTrip(t, v)
		return
	}
	b := *body
	*body = ""
	roundTrip(t, v)
	*body = b
}

// roundTrip sends v through JSON, as API Gateway and Lambda do.
func roundTrip[T any](t *testing.T, v *T) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	*v = out
}

// raw sends a configuration as the whole body.
func (e *env) raw(p caller.Principal, method, id, mediaType string, data []byte) reply {
	e.t.Helper()
	return e.call(p, method, "/v2/tests/"+id, map[string]string{"Content-Type": mediaType}, data)
}

// part is a multipart/form-data field.
type part struct {
	name, filename, contentType string
	data                        []byte
}

func (e *env) form(p caller.Principal, method, id string, parts ...part) reply {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, pt := range parts {
		h := textproto.MIMEHeader{}
		disp := fmt.Sprintf(`form-data; name=%q`, pt.name)
		if pt.filename != "" {
			disp += fmt.Sprintf(`; filename=%q`, pt.filename)
		}
		h.Set("Content-Disposition", disp)
		if pt.contentType != "" {
			h.Set("Content-Type", pt.contentType)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			e.t.Fatal(err)
		}
		_, _ = w.Write(pt.data)
	}
	_ = mw.Close()
	return e.call(p, method, "/v2/tests/"+id, map[string]string{"Content-Type": mw.FormDataContentType()}, buf.Bytes())
}

// drain receives what the run queue holds and hands it to the runner as
// the SQS event source would, until a receive comes back empty. A request
// sends its run before it answers and the runner sends none, so what is
// to be run is on the queue already: short polls (no WaitTimeSeconds) end
// the loop at the first empty answer instead of a long poll's second.
func (e *env) drain() int {
	e.t.Helper()
	ctx := context.Background()
	url := e.deps.QueueURLs[wire.TestRunsQueue]
	n := 0
	for {
		out, err := e.deps.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return n
		}
		m := out.Messages[0]
		ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), EventSource: "aws:sqs"}}}
		roundTrip(e.t, &ev)
		resp, err := e.runner(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			e.t.Fatalf("runner: %v %+v", err, resp)
		}
		if _, err := e.deps.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			e.t.Fatal(err)
		}
		n++
	}
}

// metricsRecords receives everything the metrics queue holds: the
// records and the batch ids of the ingest messages.
func (e *env) metricsRecords() ([]metrics.Record, []string) {
	e.t.Helper()
	ctx := context.Background()
	url := e.deps.QueueURLs[wire.MetricsQueue]
	var recs []metrics.Record
	var batches []string
	deadline := time.Now().Add(30 * time.Second)
	// A short poll first: the run has sent its records before the test
	// reads them, so an empty answer usually means the queue is empty,
	// which the attributes below tell at once. Long polls only while
	// messages are in flight.
	var wait int32
	for time.Now().Before(deadline) {
		// A short visibility timeout: goaws now and then loses the answer
		// to a receive after a load run (docs/hardening.md), and what it
		// handed out must come back soon rather than in minutes.
		out, err := e.deps.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: wait, VisibilityTimeout: 2})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, m := range out.Messages {
			var msg metrics.Message
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &msg); err != nil {
				e.t.Fatalf("not an ingest message: %v", err)
			}
			recs, batches = append(recs, msg.Records...), append(batches, msg.Batch)
			_, _ = e.deps.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
		if len(out.Messages) > 0 {
			continue
		}
		// Empty: done once nothing is queued or in flight either.
		if testenv.QueueDepth(e.t, e.deps.SQS, url) == 0 {
			return recs, batches
		}
		wait = 1
	}
	e.t.Fatalf("the metrics queue did not empty in 30 s (%d records read)", len(recs))
	return nil, nil
}

// other is a principal of another account, holding no role.
func other() caller.Principal {
	return caller.Principal{ID: "stranger", Kind: "user", Email: "s@example.com", AccountID: "elsewhere", KeyID: "k"}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
