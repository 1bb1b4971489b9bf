package tasks_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/applications/appconfig"
	"cads/shared/domain"
	"cads/shared/store"
	"cads/shared/tasks"
)

// Every task type from every application state: a lifecycle task moves
// the application through its transitional state to its target when the
// state allows it, and otherwise fails with a message naming both states
// while the application stays as it was; the other types run in any state
// and leave the state alone.
func TestStateMachineTable(t *testing.T) {
	e := newEnv(t)
	key := rsaPublicPEM(t)
	actions := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer actions.Close()

	types := append(append([]string{}, tasks.PostTypes...), tasks.TypePatchApplication)
	for _, typ := range types {
		for _, state := range tasks.AppStates {
			t.Run(typ+"/from-"+state, func(t *testing.T) {
				ctx := context.Background()
				a := e.app(state)
				var params any
				switch typ {
				case tasks.TypeRunAction:
					if err := e.st.Applications.CreateAction(ctx, "acct", domain.Action{App: a.ID, ID: "ping", URL: actions.URL + "/ping", HTTPMethod: "POST", Version: 1}); err != nil {
						t.Fatal(err)
					}
					params = tasks.RunActionParams{ID: "ping"}
				case tasks.TypeGenerateOriginCertificate:
					params = tasks.CertificateParams{Key: key}
				case tasks.TypeInvalidateCache:
					params = tasks.InvalidateParams{Tags: []string{"css"}}
				case tasks.TypePatchApplication:
					params = tasks.PatchParams{Changes: appconfig.Changes{"request_timeout": json.RawMessage("45")}}
				case tasks.TypePrepareForDownload:
					from := time.Now().UTC().Truncate(time.Hour)
					to := from.Add(time.Hour)
					params = tasks.PrepareParams{Reference: domain.ArchiveHref(a.ID, "custom"), From: &from, To: &to}
				}
				tk := e.submit(typ, a.ID, params)
				if out := e.run(tk.ID); out != tasks.Done {
					t.Fatalf("outcome %v, want Done", out)
				}
				got, app := e.task(tk.ID), e.appNow(a.ID)
				if app.TransitionTask != "" {
					t.Fatalf("the application still holds a transition: %+v", app)
				}
				lc, lifecycle := tasks.Lifecycles[typ]
				switch {
				case lifecycle && slices.Contains(lc.From, state):
					if got.State != domain.TaskSuccess || app.State != lc.To {
						t.Fatalf("task %s %q, application %s; want success and %s", got.State, got.Message, app.State, lc.To)
					}
					var res map[string]string
					_ = json.Unmarshal([]byte(got.Result), &res)
					if res["from"] != state || res["state"] != lc.To {
						t.Fatalf("result %s", got.Result)
					}
				case lifecycle:
					if got.State != domain.TaskFailed || app.State != state ||
						!strings.Contains(got.Message, "it is "+state) || !strings.Contains(got.Message, "allowed only when it is") {
						t.Fatalf("task %s %q, application %s; want failed with a clear message and the state unchanged", got.State, got.Message, app.State)
					}
				default:
					if got.State != domain.TaskSuccess || app.State != state {
						t.Fatalf("task %s %q, application %s; want success and the state unchanged", got.State, got.Message, app.State)
					}
				}
				if got.Completed == nil || got.Started == nil {
					t.Fatalf("finished task without started/completed: %+v", got)
				}
				// No outbox marker is left for a finished task.
				if due, _ := e.st.Tasks.DueOutbox(ctx, time.Now().Add(time.Hour), 1000); slices.ContainsFunc(due, func(o store.OutboxMarker) bool { return o.Body == msg(tk.ID) }) {
					t.Fatal("the outbox marker outlived the task")
				}
			})
		}
	}
}

// A message delivered again after its task finished changes nothing, and a
// task whose worker died mid-transition is resumed, not restarted.
func TestRedeliveryNeverAppliesTwice(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.app(domain.AppStopped)
	tk := e.submit(tasks.TypeStart, a.ID, nil)
	if e.run(tk.ID) != tasks.Done || e.appNow(a.ID).State != domain.AppRunning {
		t.Fatal("start did not run")
	}
	calls := e.dp.setState.Load()
	for range 3 {
		if out := e.run(tk.ID); out != tasks.Done {
			t.Fatalf("redelivery outcome %v", out)
		}
	}
	if e.dp.setState.Load() != calls || e.task(tk.ID).Attempts != 1 {
		t.Fatalf("a redelivered message ran the task again (%d data plane calls, %d attempts)", e.dp.setState.Load(), e.task(tk.ID).Attempts)
	}

	// A worker claims a stop and begins the transition, then dies: its
	// lease runs out and the redelivered message finishes the same
	// transition.
	stop := e.submit(tasks.TypeStop, a.ID, nil)
	past := time.Now().Add(-time.Hour)
	if _, err := e.st.Tasks.ClaimTask(ctx, stop.ID, "dead", past, past.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Applications.BeginTransition(ctx, a.Account, a.ID, domain.AppRunning, domain.AppStopping, stop.ID); err != nil {
		t.Fatal(err)
	}
	if out := e.run(stop.ID); out != tasks.Done {
		t.Fatalf("resume outcome %v", out)
	}
	got := e.task(stop.ID)
	if got.State != domain.TaskSuccess || got.Attempts != 2 || e.appNow(a.ID).State != domain.AppStopped || !strings.Contains(got.Result, `"from":"running"`) {
		t.Fatalf("resumed task %+v, application %s", got, e.appNow(a.ID).State)
	}
}

// Round trips of the worker: a lifecycle task is claimed (and its list's
// journal written from the claimed item), its application read and moved
// to the transitional state (its list's journal beside it), then the
// task, the final state, the outbox marker and the journal are written in
// one transaction; a duplicate costs the refused claim and one read.
func TestWorkerRoundTrips(t *testing.T) {
	e := newEnv(t)
	a := e.app(domain.AppStopped)
	tk := e.submit(tasks.TypeStart, a.ID, nil)
	e.d.Counter.Reset()
	if e.run(tk.ID) != tasks.Done {
		t.Fatal("start failed")
	}
	if n, ops := e.d.Counter.Total(), e.d.Counter.ByOperation(); n != 6 || ops["PutItem"] != 2 {
		t.Fatalf("start: %d round trips, want 6 (2 journal PutItems): %v", n, ops)
	}
	e.d.Counter.Reset()
	if e.run(tk.ID) != tasks.Done {
		t.Fatal("duplicate")
	}
	if n := e.d.Counter.Total(); n != 2 {
		t.Fatalf("duplicate: %d round trips, want 2: %v", n, e.d.Counter.ByOperation())
	}
	// The sweep of an invocation is one Query when nothing is due.
	e.d.Counter.Reset()
	if _, err := e.w.Handle(context.Background(), events.SQSEvent{}); err != nil {
		t.Fatal(err)
	}
	if n := e.d.Counter.Total(); n != 1 {
		t.Fatalf("empty invocation: %d round trips: %v", n, e.d.Counter.ByOperation())
	}
}

// A live lease keeps a duplicate delivery from running the task twice at
// the same time: the duplicate is retried later.
func TestDuplicateDuringRunIsRetried(t *testing.T) {
	e := newEnv(t)
	a := e.app(domain.AppStopped)
	tk := e.submit(tasks.TypeStart, a.ID, nil)
	now := time.Now()
	if _, err := e.st.Tasks.ClaimTask(context.Background(), tk.ID, "busy", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if out := e.run(tk.ID); out != tasks.Retry {
		t.Fatalf("duplicate under a live lease: %v, want Retry", out)
	}
	if e.appNow(a.ID).State != domain.AppStopped {
		t.Fatal("the duplicate ran")
	}
}

// Retryable failures are retried; the attempt that exhausts MaxAttempts
// marks the task failed, puts the application back where it was and
// leaves the message to the dead-letter queue. An attempt that died
// without a word is caught by the next delivery's attempt count.
func TestRetriesEndFailed(t *testing.T) {
	e := newEnv(t)
	e.dp.failures.Store(-1)
	a := e.app(domain.AppRunning)
	tk := e.submit(tasks.TypeEnterMaintenance, a.ID, nil)
	for i := 1; i < tasks.MaxAttempts; i++ {
		if out := e.run(tk.ID); out != tasks.Retry {
			t.Fatalf("attempt %d: %v, want Retry", i, out)
		}
		got := e.task(tk.ID)
		if got.State != domain.TaskRunning || got.Attempts != i || got.LastError == "" || e.appNow(a.ID).State != domain.AppEnteringMaintenance {
			t.Fatalf("after attempt %d: task %+v, application %s", i, got, e.appNow(a.ID).State)
		}
		if out := tasks.Out(got); !strings.HasPrefix(out.Message, "retrying after: ") || !strings.Contains(out.Message, "data plane unreachable") {
			t.Fatalf("message while retrying: %q", out.Message)
		}
	}
	if out := e.run(tk.ID); out != tasks.Retry {
		t.Fatalf("last attempt: %v, want Retry (the message goes to the DLQ)", out)
	}
	got, app := e.task(tk.ID), e.appNow(a.ID)
	if got.State != domain.TaskFailed || !strings.Contains(got.Message, "failed after 5 attempts") || app.State != domain.AppRunning || app.TransitionTask != "" {
		t.Fatalf("after the last attempt: task %s %q, application %+v", got.State, got.Message, app)
	}
	if out := e.run(tk.ID); out != tasks.Done {
		t.Fatalf("a message of a failed task: %v", out)
	}

	// Attempts that crash leave only their count.
	e.dp.failures.Store(0)
	b := e.app(domain.AppStopped)
	crash := e.submit(tasks.TypeStart, b.ID, nil)
	past := time.Now().Add(-time.Hour)
	for i := range tasks.MaxAttempts {
		at := past.Add(time.Duration(i) * time.Minute)
		if _, err := e.st.Tasks.ClaimTask(context.Background(), crash.ID, "dying", at, at.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if out := e.run(crash.ID); out != tasks.Retry {
		t.Fatalf("after %d silent deaths: %v", tasks.MaxAttempts, out)
	}
	if got := e.task(crash.ID); got.State != domain.TaskFailed || !strings.Contains(got.Message, "gave up after 5 attempts") || e.appNow(b.ID).State != domain.AppStopped {
		t.Fatalf("task %s %q", got.State, got.Message)
	}
}

// Messages that name no task go to the DLQ through the redrive policy.
func TestPoisonMessages(t *testing.T) {
	e := newEnv(t)
	for _, body := range []string{``, `not json`, `{"task":"../x"}`, `{"task":"nosuchtask"}`} {
		if out := e.w.Process(context.Background(), body); out != tasks.Retry {
			t.Errorf("%q: %v, want Retry", body, out)
		}
	}
}

// Concurrent lifecycle tasks on one application: whatever the
// interleaving, every task finishes, the application ends in a stable
// state, and the successful transitions chain from the initial state to
// the final one (none was lost or applied on a stale state).
func TestConcurrentTasksOnOneApplication(t *testing.T) {
	e := newEnv(t)
	types := []string{tasks.TypeStart, tasks.TypeStop, tasks.TypeEnterMaintenance, tasks.TypeExitMaintenance}
	for round := range 3 {
		a := e.app(domain.AppStopped)
		var ts []domain.Task
		for i := range 24 {
			typ := types[(i+round)%len(types)]
			if i%5 == 0 {
				typ = types[mrand.IntN(len(types))]
			}
			ts = append(ts, e.submit(typ, a.ID, nil))
		}
		var wg sync.WaitGroup
		for _, tk := range ts {
			wg.Go(func() {
				// Redeliver until the task is finished, as SQS would.
				for range 20 {
					if e.run(tk.ID) == tasks.Done {
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		app := e.appNow(a.ID)
		if transitional(app.State) || app.TransitionTask != "" {
			t.Fatalf("round %d: application left in %s (held by %q)", round, app.State, app.TransitionTask)
		}
		type step struct{ from, to string }
		var steps []step
		for _, tk := range ts {
			got := e.task(tk.ID)
			if !got.Finished() {
				t.Fatalf("round %d: task %s is %s", round, got.ID, got.State)
			}
			if got.State == domain.TaskSuccess {
				var r map[string]string
				_ = json.Unmarshal([]byte(got.Result), &r)
				steps = append(steps, step{r["from"], r["state"]})
			}
		}
		if len(steps) == 0 {
			t.Fatalf("round %d: no task succeeded", round)
		}
		// Depth-first search for an order of the successful transitions
		// that chains stopped -> ... -> the final state.
		used := make([]bool, len(steps))
		var chain func(state string, n int) bool
		chain = func(state string, n int) bool {
			if n == len(steps) {
				return state == app.State
			}
			for i, s := range steps {
				if !used[i] && s.from == state {
					used[i] = true
					if chain(s.to, n+1) {
						return true
					}
					used[i] = false
				}
			}
			return false
		}
		if !chain(domain.AppStopped, 0) {
			t.Fatalf("round %d: successful transitions %v do not chain from stopped to %s", round, steps, app.State)
		}
	}
}

// A configuration task and a descriptive edit racing on one application
// both land: the task re-applies its changes on a fresh read when it
// loses the optimistic write.
func TestConfigurationPatchKeepsConcurrentEdits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for i := range 5 {
		a := e.app(domain.AppRunning)
		// An alias names one application: a new one for each.
		alias := fmt.Sprintf("new%d.example.com", i)
		tk := e.submit(tasks.TypePatchApplication, a.ID, tasks.PatchParams{Changes: appconfig.Changes{
			"aliases": json.RawMessage(`["` + alias + `"]`), "request_timeout": json.RawMessage("12")}})
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 10 {
				cur := e.appNow(a.ID)
				c, _ := appconfig.Parse(cur.Config)
				c.Name = "renamed"
				if _, err := e.st.Applications.UpdateApplicationConfig(ctx, "acct", a.ID, cur.Version, c.Encode()); err == nil {
					return
				}
			}
			t.Error("the rename never landed")
		})
		wg.Go(func() {
			if out := e.run(tk.ID); out != tasks.Done {
				t.Errorf("patch outcome %v", out)
			}
		})
		wg.Wait()
		c, _ := appconfig.Parse(e.appNow(a.ID).Config)
		if c.Name != "renamed" || c.RequestTimeout != 12 || len(c.Aliases) != 1 || c.Aliases[0] != alias {
			t.Fatalf("lost update: %+v (task %q)", c, e.task(tk.ID).Message)
		}
	}
	// Changes that no longer validate fail the task with the reason.
	a := e.app(domain.AppStopped)
	tk := e.submit(tasks.TypePatchApplication, a.ID, tasks.PatchParams{Changes: appconfig.Changes{"default_hostname": json.RawMessage(`"other.example.com"`)}})
	e.run(tk.ID)
	if got := e.task(tk.ID); got.State != domain.TaskFailed || !strings.Contains(got.Message, "default_hostname") {
		t.Fatalf("invalid patch: %s %q", got.State, got.Message)
	}
}

// The outbox: a task whose message could not be sent is still written,
// and the sweep sends it once it is due, once per due time.
func TestOutboxResendsUnsentTasks(t *testing.T) {
	e := newEnv(t)
	e.ob.ResendAfter = 300 * time.Millisecond
	a := e.app(domain.AppStopped)
	e.sent.fail.Store(true)
	tk := e.submit(tasks.TypeStart, a.ID, nil)
	if got := e.task(tk.ID); got.State != domain.TaskPending {
		t.Fatalf("task %+v", got)
	}
	e.sent.fail.Store(false)
	if n, err := e.ob.Sweep(context.Background()); err != nil || n != 0 {
		t.Fatalf("sweep before due: %d, %v", n, err)
	}
	e.clk.Advance(400 * time.Millisecond)
	// Two sweeps at once send the task once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	testenv.AwaitIndexes() // the outbox is found through an index
	for range 2 {
		wg.Go(func() {
			n, err := e.ob.Sweep(context.Background())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if total != 1 || !slices.Equal(e.sent.all(), []string{tk.ID}) {
		t.Fatalf("sweeps sent %d: %v", total, e.sent.all())
	}
	// Once the task finishes its marker is gone: nothing more to send.
	e.run(tk.ID)
	e.clk.Advance(400 * time.Millisecond)
	testenv.AwaitIndexes() // the outbox is found through an index
	if n, _ := e.ob.Sweep(context.Background()); n != 0 {
		t.Fatalf("a finished task was re-sent")
	}
}

// A backlog of due markers is moved in parallel: one Query, then one wave
// of conditional writes, however many tasks wait.
func TestOutboxSweepRoundTrips(t *testing.T) {
	e := newEnv(t)
	e.ob.ResendAfter = 200 * time.Millisecond
	e.sent.fail.Store(true)
	var want []string
	for range 12 {
		a := e.app(domain.AppStopped)
		want = append(want, e.submit(tasks.TypeStart, a.ID, nil).ID)
	}
	e.sent.fail.Store(false)
	e.clk.Advance(300 * time.Millisecond)
	e.d.Counter.SetDelay(20 * time.Millisecond)
	e.d.Counter.Reset()
	testenv.AwaitIndexes() // the outbox is found through an index
	n, err := e.ob.Sweep(context.Background())
	if err != nil || n != len(want) {
		t.Fatalf("sweep sent %d, %v; want %d", n, err, len(want))
	}
	if got := e.d.Counter.Sequential(); got != 2 {
		t.Errorf("sequential round trips = %d, want 2 (calls %v)", got, e.d.Counter.ByOperation())
	}
	if got := e.d.Counter.ByOperation(); got["Query"] != 1 || got["UpdateItem"] != len(want) {
		t.Errorf("calls = %v, want 1 Query and %d UpdateItem", got, len(want))
	}
	sent := e.sent.all()
	slices.Sort(sent)
	slices.Sort(want)
	if !slices.Equal(sent, want) {
		t.Errorf("sent %v, want %v", sent, want)
	}
}

// run-action makes the real HTTP request: the action's method, a JSON
// body naming the task, a signature over timestamp and body when the
// action has a secret, the task id as idempotency key. 4xx fails the task,
// 5xx is retried, and the dial policy refuses other hosts.
func TestRunAction(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	secret := []byte("0123456789abcdef0123456789abcdef")
	var (
		mu     sync.Mutex
		status = 200
		seen   []*http.Request
		bodies []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, bodies = append(seen, r), append(bodies, string(b))
		st := status
		mu.Unlock()
		w.WriteHeader(st)
		_, _ = w.Write([]byte(`{"purged":true}`))
	}))
	defer srv.Close()
	a := e.app(domain.AppRunning)
	act := domain.Action{App: a.ID, ID: "purge", URL: srv.URL + "/hooks/purge", HTTPMethod: "PUT", SecretKey: base64.StdEncoding.EncodeToString(secret), Version: 1}
	if err := e.st.Applications.CreateAction(ctx, "acct", act); err != nil {
		t.Fatal(err)
	}
	tk := e.submit(tasks.TypeRunAction, a.ID, tasks.RunActionParams{ID: "purge"})
	if out := e.run(tk.ID); out != tasks.Done {
		t.Fatalf("outcome %v", out)
	}
	got := e.task(tk.ID)
	var res tasks.ActionResult
	_ = json.Unmarshal([]byte(got.Result), &res)
	if got.State != domain.TaskSuccess || res.StatusCode != 200 || res.Body != `{"purged":true}` {
		t.Fatalf("task %+v", got)
	}
	r := seen[0]
	if r.Method != "PUT" || r.URL.Path != "/hooks/purge" || r.Header.Get(tasks.HeaderIdemKey) != tk.ID || r.Header.Get(tasks.HeaderTask) != tasks.Href(tk.ID) {
		t.Fatalf("request %s %s %v", r.Method, r.URL, r.Header)
	}
	ts := r.Header.Get(tasks.HeaderTimestamp)
	if want := "sha256=" + tasks.Sign(secret, ts, []byte(bodies[0])); r.Header.Get(tasks.HeaderSignature) != want {
		t.Fatalf("signature %q, want %q", r.Header.Get(tasks.HeaderSignature), want)
	}
	if sec, _ := strconv.ParseInt(ts, 10, 64); time.Since(time.Unix(sec, 0)) > time.Minute {
		t.Fatalf("timestamp %s", ts)
	}
	if !strings.Contains(bodies[0], `"task":"/v2/tasks/`+tk.ID+`"`) || !strings.Contains(bodies[0], `"action":"purge"`) {
		t.Fatalf("body %s", bodies[0])
	}

	mu.Lock()
	status = 503
	mu.Unlock()
	retry := e.submit(tasks.TypeRunAction, a.ID, tasks.RunActionParams{ID: "purge"})
	if out := e.run(retry.ID); out != tasks.Retry || e.task(retry.ID).State != domain.TaskRunning {
		t.Fatalf("503: %v %+v", out, e.task(retry.ID))
	}
	mu.Lock()
	status = 404
	mu.Unlock()
	if out := e.run(retry.ID); out != tasks.Done {
		t.Fatalf("404: %v", out)
	}
	if got := e.task(retry.ID); got.State != domain.TaskFailed || !strings.Contains(got.Message, "404") {
		t.Fatalf("404: %s %q", got.State, got.Message)
	}

	// Only loopback locally: a private address is refused, not retried.
	if err := e.st.Applications.CreateAction(ctx, "acct", domain.Action{App: a.ID, ID: "inside", URL: "http://10.255.255.1:9/x", HTTPMethod: "POST", Version: 1}); err != nil {
		t.Fatal(err)
	}
	refused := e.submit(tasks.TypeRunAction, a.ID, tasks.RunActionParams{ID: "inside"})
	if out := e.run(refused.ID); out != tasks.Done {
		t.Fatalf("refused: %v", out)
	}
	if got := e.task(refused.ID); got.State != domain.TaskFailed || !strings.Contains(got.Message, "loopback") {
		t.Fatalf("refused: %s %q", got.State, got.Message)
	}
	// A deleted action fails the task.
	gone := e.submit(tasks.TypeRunAction, a.ID, tasks.RunActionParams{ID: "nothere"})
	e.run(gone.ID)
	if got := e.task(gone.ID); got.State != domain.TaskFailed || !strings.Contains(got.Message, "no action") {
		t.Fatalf("missing action: %s %q", got.State, got.Message)
	}
}

func TestDialPolicies(t *testing.T) {
	for addr, public := range map[string]bool{"8.8.8.8": true, "2606:4700::1111": true, "127.0.0.1": false, "10.1.2.3": false,
		"169.254.169.254": false, "100.64.0.1": false, "::1": false, "fe80::1": false, "::ffff:192.168.0.1": false, "0.0.0.0": false} {
		ip := mustAddr(t, addr)
		if got := tasks.PublicOnly(ip) == nil; got != public {
			t.Errorf("PublicOnly(%s) allowed=%v", addr, got)
		}
	}
	if tasks.LoopbackOnly(mustAddr(t, "127.0.0.1")) != nil || tasks.LoopbackOnly(mustAddr(t, "8.8.8.8")) == nil {
		t.Error("LoopbackOnly")
	}
}

// generate-origin-certificate issues a real certificate for the caller's
// public key from the account's CA, created once; its key never appears.
func TestGenerateOriginCertificate(t *testing.T) {
	e := newEnv(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	privPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	pub, err := tasks.PublicKeyPEM(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	a := e.app(domain.AppStopped)
	expiry := time.Now().Add(90 * 24 * time.Hour).UTC().Truncate(time.Second)
	var serials []*big.Int
	var caPEM string
	for i, params := range []tasks.CertificateParams{
		{Key: pub, Hostnames: []string{"origin.example.com", "*.origin.example.com"}, Expiry: &expiry},
		{Key: pub}, // hostnames from the target's aliases
	} {
		tk := e.submit(tasks.TypeGenerateOriginCertificate, a.ID, params)
		e.run(tk.ID)
		got := e.task(tk.ID)
		if got.State != domain.TaskSuccess {
			t.Fatalf("task %d: %s %q", i, got.State, got.Message)
		}
		var res tasks.CertificateResult
		if err := json.Unmarshal([]byte(got.Result), &res); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got.Result, "PRIVATE KEY") {
			t.Fatal("a private key is in the result")
		}
		if caPEM == "" {
			caPEM = res.CACertificate
		} else if res.CACertificate != caPEM {
			t.Fatal("the account's CA changed between certificates")
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM([]byte(res.CACertificate))
		b, _ := pem.Decode([]byte(res.Certificate))
		leaf, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		host := leaf.DNSNames[0]
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Fatalf("certificate does not verify against the account CA: %v", err)
		}
		if !leaf.PublicKey.(*rsa.PublicKey).Equal(&key.PublicKey) {
			t.Fatal("certificate is not for the given key")
		}
		switch i {
		case 0:
			if !leaf.NotAfter.Equal(expiry) || !slices.Equal(leaf.DNSNames, []string{"origin.example.com", "*.origin.example.com"}) {
				t.Fatalf("not after %v, names %v", leaf.NotAfter, leaf.DNSNames)
			}
		case 1:
			if !slices.Equal(leaf.DNSNames, []string{"shop.example.com", "www.shop.example.com"}) {
				t.Fatalf("names %v, want the aliases", leaf.DNSNames)
			}
		}
		serials = append(serials, leaf.SerialNumber)
	}
	if serials[0].Cmp(serials[1]) == 0 {
		t.Fatal("two certificates share a serial number")
	}
}

func TestInvalidateCacheIsRecorded(t *testing.T) {
	e := newEnv(t)
	a := e.app(domain.AppRunning)
	tk := e.submit(tasks.TypeInvalidateCache, a.ID, tasks.InvalidateParams{URLs: []string{"https://shop.example.com/img/*"}})
	e.run(tk.ID)
	invs, err := e.st.Tasks.ListInvalidations(context.Background(), a.ID)
	if err != nil || len(invs) != 1 || invs[0].URLs[0] != "https://shop.example.com/img/*" || invs[0].Task != tk.ID {
		t.Fatalf("invalidations %+v, %v", invs, err)
	}
	if got := e.task(tk.ID); got.State != domain.TaskSuccess || !strings.Contains(got.Message, "recorded") || !strings.Contains(got.Result, `"scope":"urls"`) {
		t.Fatalf("task %s %q %s", got.State, got.Message, got.Result)
	}
	if rec := e.dp.Recorded(); !slices.Contains(rec, "invalidate "+a.ID+" "+tk.ID) {
		t.Fatalf("data plane told %v", rec)
	}
}

func rsaPublicPEM(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}
