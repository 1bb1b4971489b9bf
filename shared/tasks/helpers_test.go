package tasks_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"cads/infra/testenv"
	"cads/shared/applications/appconfig"
	"cads/shared/clock"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/outbox"
	"cads/shared/store"
	"cads/shared/tasks"
	"cads/shared/wire/taskworkerwire"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// sentLog is a Sender that records what it sent, or fails when told to.
type sentLog struct {
	mu   sync.Mutex
	ids  []string
	fail atomic.Bool
}

func (s *sentLog) Send(_ context.Context, _ string, bodies ...string) error {
	if s.fail.Load() {
		return errors.New("queue unavailable")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, taskIDs(bodies)...)
	return nil
}

// taskIDs are the task ids of task messages.
func taskIDs(bodies []string) []string {
	out := make([]string, len(bodies))
	for i, b := range bodies {
		var m struct{ Task string }
		_ = json.Unmarshal([]byte(b), &m)
		out[i] = m.Task
	}
	return out
}

// newOutbox is the generic outbox over st sending through send, and the
// task outbox of its task queue.
func newOutbox(st *store.Store, send outbox.Sender) (*outbox.Outbox, *tasks.Outbox) {
	ob := outbox.New(st.Tasks, send, quiet)
	return ob, tasks.NewOutbox(st.Tasks, ob.Queue("TasksQueue"))
}

func (s *sentLog) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

// testDP is the fake data plane with scripted failures of SetState.
type testDP struct {
	*tasks.FakeDataPlane
	// failures is how many SetState calls fail from now on (-1: all).
	failures atomic.Int32
	setState atomic.Int32
}

func (d *testDP) SetState(ctx context.Context, app domain.Application, state string) error {
	d.setState.Add(1)
	if n := d.failures.Load(); n != 0 {
		if n > 0 {
			d.failures.Add(-1)
		}
		return errors.New("data plane unreachable")
	}
	return d.FakeDataPlane.SetState(ctx, app, state)
}

type env struct {
	t      *testing.T
	d      testenv.Dynamo
	st     *store.Store
	clk    *clock.Shifted // the store's: tests jump past due times
	dp     *testDP
	sent   *sentLog
	ob     *outbox.Outbox
	outbox *tasks.Outbox
	w      *tasks.Worker
}

func newEnv(t *testing.T) *env {
	t.Helper()
	d := testenv.NewDynamo(t)
	clk := &clock.Shifted{}
	st := store.New(d.Client, d.Table, store.WithClock(clk.Now))
	e := &env{t: t, d: d, st: st, clk: clk, sent: &sentLog{}}
	e.dp = &testDP{FakeDataPlane: tasks.NewFakeDataPlane(quiet, tasks.LoopbackOnly)}
	e.ob, e.outbox = newOutbox(st, e.sent)
	e.w = tasks.NewWorker(tasks.NewWorkerStore(st), e.dp, e.ob, quiet)
	e.w.Archives = taskworkerwire.Archives(st.Logs)
	if err := st.Accounts.CreateAccount(context.Background(), domain.Account{ID: "acct", Name: "acct", Ancestors: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

func config(name string, aliases ...string) string {
	c := appconfig.Configuration{Name: name, Aliases: aliases}
	c.Normalize()
	return c.Encode()
}

// app stores an application of account "acct" in state.
func (e *env) app(state string) domain.Application {
	e.t.Helper()
	now := e.st.Now()
	a := domain.Application{ID: ids.New(), Account: "acct", State: state, Config: config("shop", "shop.example.com", "www.shop.example.com"),
		Version: 1, Created: now, Updated: now}
	if err := e.st.Applications.CreateApplication(context.Background(), a, domain.Quota{}); err != nil {
		e.t.Fatal(err)
	}
	return a
}

// submit writes a task as the API would.
func (e *env) submit(typ, app string, params any) domain.Task {
	e.t.Helper()
	if params == nil {
		params = struct{}{}
	}
	t, err := tasks.NewTask(e.st.Now(), "acct", "u1", tasks.Request{Type: typ, App: app, Params: params})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.outbox.Submit(context.Background(), t); err != nil {
		e.t.Fatal(err)
	}
	return t
}

func msg(id string) string { return fmt.Sprintf(`{"task":%q}`, id) }

func (e *env) run(id string) tasks.Outcome { return e.w.Process(context.Background(), msg(id)) }

func (e *env) task(id string) domain.Task {
	e.t.Helper()
	t, err := e.st.Tasks.LoadTask(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

func (e *env) appNow(id string) domain.Application {
	e.t.Helper()
	a, err := e.st.Applications.GetApplication(context.Background(), "acct", id)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func transitional(state string) bool {
	return !slices.Contains([]string{domain.AppStopped, domain.AppRunning, domain.AppMaintenance}, state)
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// weakKey is a PEM RSA public key below MinRSABits.
func weakKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}
