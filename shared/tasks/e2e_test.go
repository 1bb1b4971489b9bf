package tasks_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cads/infra/local/localtest"
	"cads/infra/testenv"
	"cads/shared/tasks"
)

type httpClient struct {
	t      *testing.T
	base   string
	secret string
}

type reply struct {
	Status int
	Raw    string
	Body   map[string]any
}

func (c httpClient) do(method, path, ctype, body string) reply {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		c.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+c.secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := reply{Status: res.StatusCode, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

func (c httpClient) json(method, path, body string) reply {
	return c.do(method, path, "application/json", body)
}

// await polls a task until it has finished.
func (c httpClient) await(r reply) reply {
	c.t.Helper()
	if r.Status != 200 && r.Status != 201 {
		c.t.Fatalf("task not created: %d %s", r.Status, r.Raw)
	}
	href := r.Body["href"].(string)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if r.Body["state"] == "success" || r.Body["state"] == "failed" {
			return r
		}
		time.Sleep(100 * time.Millisecond)
		r = c.json("GET", href, "")
	}
	c.t.Fatalf("task %s did not finish: %s", href, r.Raw)
	return r
}

// The whole path on the local platform: real HTTP through the gateway and
// the authorizer, tasks through the embedded SQS queue to the worker, a
// run-action calling a loopback server.
func TestApplicationLifecycleEndToEnd(t *testing.T) {
	p, _ := localtest.Start(t)
	c := httpClient{t: t, base: p.URL, secret: p.Bootstrap.Secret}

	var hits atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(202)
	}))
	defer hook.Close()

	r := c.json("POST", "/v2/applications", `{"name":"Shop","aliases":["shop.example.com"]}`)
	if r.Status != 200 || r.Body["state"] != "stopped" {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	app := r.Body["href"].(string)
	if r := c.json("POST", app+"/actions", `{"id":"warm-up","url":"`+hook.URL+`/warm","secret_key":"MDEyMzQ1Njc4OWFiY2RlZg=="}`); r.Status != 200 {
		t.Fatalf("action: %d %s", r.Status, r.Raw)
	}

	// start, waiting for it: 200 with the finished task.
	r = c.await(c.json("POST", "/v2/tasks?wait=5", `{"type":"start","target":"`+app+`"}`))
	if r.Body["state"] != "success" {
		t.Fatalf("start: %s", r.Raw)
	}
	if r := c.json("GET", app, ""); r.Body["state"] != "running" {
		t.Fatalf("after start: %s", r.Raw)
	}
	if r := c.json("DELETE", app, ""); r.Status != 409 {
		t.Fatalf("delete running: %d %s", r.Status, r.Raw)
	}
	// A second start fails with the reason.
	if r := c.await(c.json("POST", "/v2/tasks", `{"type":"start","target":"`+app+`"}`)); r.Body["state"] != "failed" || !strings.Contains(r.Raw, "it is running") {
		t.Fatalf("second start: %s", r.Raw)
	}

	if r := c.await(c.json("POST", "/v2/tasks", `{"type":"run-action","target":"`+app+`","parameters":{"id":"warm-up"}}`)); r.Body["state"] != "success" || hits.Load() != 1 {
		t.Fatalf("run-action: %s (%d calls)", r.Raw, hits.Load())
	}

	// A patch of what runs is a task.
	r = c.do("PATCH", app, "application/json-patch+json", `[{"op":"add","path":"/aliases/-","value":"www.shop.example.com"}]`)
	if r.Status != 201 || r.Body["type"] != tasks.TypePatchApplication {
		t.Fatalf("patch: %d %s", r.Status, r.Raw)
	}
	if r := c.await(r); r.Body["state"] != "success" {
		t.Fatalf("patch task: %s", r.Raw)
	}
	if r := c.json("GET", app, ""); !strings.Contains(r.Raw, "www.shop.example.com") {
		t.Fatalf("after patch: %s", r.Raw)
	}

	for _, typ := range []string{"enter_maintenance", "stop"} {
		if r := c.await(c.json("POST", "/v2/tasks", `{"type":"`+typ+`","target":"`+app+`"}`)); r.Body["state"] != "success" {
			t.Fatalf("%s: %s", typ, r.Raw)
		}
	}
	if r := c.json("DELETE", app, ""); r.Status != 200 || r.Body["state"] != "stopped" {
		t.Fatalf("delete stopped: %d %s", r.Status, r.Raw)
	}
	var list []map[string]any
	if r := c.json("GET", "/v2/tasks", ""); json.Unmarshal([]byte(r.Raw), &list) != nil || len(list) != 6 {
		t.Fatalf("tasks: %s", r.Raw)
	}
}

// tasks.MaxAttempts is what the redrive policy allows: the attempt that
// exhausts it is the last delivery before the DLQ.
func TestMaxAttemptsMatchesTheRedrivePolicy(t *testing.T) {
	q := testenv.Template(t).Queues["TasksQueue"]
	if q.RedrivePolicy == nil || q.RedrivePolicy.DeadLetterQueue != "TasksDLQ" || q.RedrivePolicy.MaxReceiveCount != tasks.MaxAttempts {
		t.Fatalf("TasksQueue redrive %+v, want TasksDLQ after %d receives", q.RedrivePolicy, tasks.MaxAttempts)
	}
	fn := testenv.Template(t).Functions["TaskWorkerFunction"]
	if time.Duration(fn.Timeout)*time.Second >= tasks.DefaultLease || q.VisibilityTimeout < 6*fn.Timeout {
		t.Fatalf("worker timeout %ds, lease %v, visibility %ds", fn.Timeout, tasks.DefaultLease, q.VisibilityTimeout)
	}
}
