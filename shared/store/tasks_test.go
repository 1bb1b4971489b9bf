package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cads/shared/domain"
	"cads/shared/store"
)

func newTask(t *testing.T, st *store.Store, id, account string, created time.Time) domain.Task {
	t.Helper()
	tk := domain.Task{ID: id, Account: account, Type: "start", Target: "/v2/applications/app1", App: "app1",
		State: domain.TaskPending, CreatedBy: "u1", Created: created, Updated: created}
	m := store.OutboxMarker{Queue: "TasksQueue", Body: `{"task":"` + id + `"}`, Due: created.Add(time.Minute)}
	if err := st.Tasks.CreateTask(context.Background(), tk, &m); err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestTaskLeaseAndFinish(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	now := st.Now()
	newApp(t, st, "acct1", "app1")
	d.Counter.Reset()
	newTask(t, st, "t1", "acct1", now)
	if d.Counter.Total() != 1 {
		t.Fatalf("create task: %d round trips, want 1 (task and outbox marker in one transaction)", d.Counter.Total())
	}
	if _, err := st.Tasks.GetTask(ctx, "acct2", "t1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("cross-account get: %v", err)
	}

	tk, err := st.Tasks.ClaimTask(ctx, "t1", "w1", now, now.Add(time.Minute))
	if err != nil || tk.State != domain.TaskRunning || tk.Attempts != 1 || tk.Started == nil || tk.LeaseOwner != "w1" {
		t.Fatalf("claim = %+v, %v", tk, err)
	}
	// A live lease keeps others out; an expired one is taken over.
	if _, err := st.Tasks.ClaimTask(ctx, "t1", "w2", now.Add(30*time.Second), now.Add(2*time.Minute)); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("claim under a live lease: %v", err)
	}
	tk, err = st.Tasks.ClaimTask(ctx, "t1", "w2", now.Add(2*time.Minute), now.Add(3*time.Minute))
	if err != nil || tk.Attempts != 2 || tk.LeaseOwner != "w2" || !tk.Started.Equal(now) {
		t.Fatalf("takeover = %+v, %v", tk, err)
	}
	if err := st.Tasks.ReleaseTask(ctx, "acct1", "t1", "w1", "boom"); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("release by the old owner: %v", err)
	}
	if err := st.Tasks.ReleaseTask(ctx, "acct1", "t1", "w2", "boom"); err != nil {
		t.Fatal(err)
	}
	tk, err = st.Tasks.ClaimTask(ctx, "t1", "w3", now.Add(2*time.Minute), now.Add(3*time.Minute))
	if err != nil || tk.Attempts != 3 || tk.LastError != "boom" {
		t.Fatalf("claim after release = %+v, %v", tk, err)
	}

	// The finish and its effect commit together, once.
	if err := st.Applications.BeginTransition(ctx, "acct1", "app1", domain.AppStopped, domain.AppStarting, "t1"); err != nil {
		t.Fatal(err)
	}
	fin := store.TaskFinish{ID: "t1", Owner: "w2", State: domain.TaskSuccess, Message: "started", Result: `{"state":"running"}`,
		Transition: &store.Transition{App: "app1", Task: "t1", To: domain.AppRunning}}
	if err := st.Tasks.FinishTask(ctx, fin); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("finish by a stale owner: %v", err)
	}
	if a, _ := st.Applications.GetApplication(ctx, "acct1", "app1"); a.State != domain.AppStarting {
		t.Fatalf("a refused finish changed the application: %+v", a)
	}
	fin.Owner = "w3"
	if err := st.Tasks.FinishTask(ctx, fin); err != nil {
		t.Fatal(err)
	}
	tk, _ = st.Tasks.LoadTask(ctx, "t1")
	if tk.State != domain.TaskSuccess || tk.Completed == nil || tk.Result != `{"state":"running"}` || tk.LeaseOwner != "" {
		t.Fatalf("finished task = %+v", tk)
	}
	if a, _ := st.Applications.GetApplication(ctx, "acct1", "app1"); a.State != domain.AppRunning || a.TransitionTask != "" {
		t.Fatalf("application after finish = %+v", a)
	}
	if err := st.Tasks.FinishTask(ctx, fin); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("second finish: %v", err)
	}
	if _, err := st.Tasks.ClaimTask(ctx, "t1", "w4", now.Add(time.Hour), now.Add(2*time.Hour)); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("claim of a finished task: %v", err)
	}
	if _, err := st.Tasks.ClaimTask(ctx, "nope", "w4", now, now); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("claim of a missing task: %v", err)
	}
}

func TestTaskConfigAndInvalidationEffects(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	now := st.Now()
	newApp(t, st, "acct1", "app1")
	newTask(t, st, "t1", "acct1", now)
	newTask(t, st, "t2", "acct1", now)
	if _, err := st.Tasks.ClaimTask(ctx, "t1", "w", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	stale := store.TaskFinish{ID: "t1", Owner: "w", State: domain.TaskSuccess, Config: &store.ConfigChange{Account: "acct1", App: "app1", From: 7, Config: `{}`}}
	if err := st.Tasks.FinishTask(ctx, stale); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("config from a stale version: %v", err)
	}
	if tk, _ := st.Tasks.LoadTask(ctx, "t1"); tk.State != domain.TaskRunning {
		t.Fatalf("the task finished although its effect failed: %+v", tk)
	}
	stale.Config.From = 1
	if err := st.Tasks.FinishTask(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if a, _ := st.Applications.GetApplication(ctx, "acct1", "app1"); a.Version != 2 || a.Config != `{}` {
		t.Fatalf("application = %+v", a)
	}

	if _, err := st.Tasks.ClaimTask(ctx, "t2", "w", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	inv := &store.Invalidation{App: "app1", Task: "t2", Tags: []string{"css"}, Created: now}
	if err := st.Tasks.FinishTask(ctx, store.TaskFinish{ID: "t2", Owner: "w", State: domain.TaskSuccess, Invalidation: inv}); err != nil {
		t.Fatal(err)
	}
	invs, err := st.Tasks.ListInvalidations(ctx, "app1")
	if err != nil || len(invs) != 1 || invs[0].Tags[0] != "css" {
		t.Fatalf("invalidations = %+v, %v", invs, err)
	}
}

func TestOutboxAndListing(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, id := range []string{"t1", "t2", "t3"} {
		newTask(t, st, id, "acct1", base.Add(time.Duration(i)*time.Hour))
	}
	newTask(t, st, "t9", "acct2", base)

	list, err := st.Tasks.ListTasks(ctx, "acct1", base.Add(time.Hour), base.Add(2*time.Hour), 0)
	if err != nil || len(list) != 1 || list[0].ID != "t2" {
		t.Fatalf("window [1h,2h) = %+v, %v", list, err)
	}
	if list, _ := st.Tasks.ListTasks(ctx, "acct1", time.Time{}, time.Time{}, 0); len(list) != 3 || list[0].ID != "t3" {
		t.Fatalf("all, newest first = %+v", list)
	}
	if list, _ := st.Tasks.ListTasks(ctx, "acct1", time.Time{}, time.Time{}, 2); len(list) != 2 || list[1].ID != "t2" {
		t.Fatalf("newest two = %+v", list)
	}

	// Markers are due one minute after creation.
	due, err := st.Tasks.DueOutbox(ctx, base.Add(61*time.Minute), 10)
	if err != nil || len(due) != 3 || due[0].Body != `{"task":"t1"}` && due[0].Body != `{"task":"t9"}` {
		t.Fatalf("due = %+v, %v", due, err)
	}
	for _, m := range due {
		if !m.Held || m.Queue != "TasksQueue" || !m.Due.Equal(base.Add(time.Minute)) && !m.Due.Equal(base.Add(time.Hour+time.Minute)) {
			t.Fatalf("task marker %+v: want held, on TasksQueue, due a minute after its task", m)
		}
	}
	stale := due[0]
	moved, err := st.Tasks.PostponeOutbox(ctx, &due[0], base.Add(24*time.Hour))
	if err != nil || !moved || !due[0].Due.Equal(base.Add(24*time.Hour)) {
		t.Fatalf("postpone: %v %v %v", moved, err, due[0].Due)
	}
	// A second sweeper holding the same read loses.
	if moved, err := st.Tasks.PostponeOutbox(ctx, &stale, base.Add(48*time.Hour)); err != nil || moved {
		t.Fatalf("second postpone: %v %v", moved, err)
	}
	if due, _ := st.Tasks.DueOutbox(ctx, base.Add(61*time.Minute), 10); len(due) != 2 {
		t.Fatalf("due after postponing one = %+v", due)
	}
}

func TestCertificateAuthorityIsCreatedOnce(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	if _, err := st.Tasks.GetCertificateAuthority(ctx, "acct1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("no CA yet: %v", err)
	}
	if err := st.Tasks.CreateCertificateAuthority(ctx, domain.CertificateAuthority{Account: "acct1", CertPEM: "c1", KeyPEM: "k1"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Tasks.CreateCertificateAuthority(ctx, domain.CertificateAuthority{Account: "acct1", CertPEM: "c2", KeyPEM: "k2"}); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("second CA: %v", err)
	}
	if ca, err := st.Tasks.GetCertificateAuthority(ctx, "acct1"); err != nil || ca.CertPEM != "c1" {
		t.Fatalf("CA = %+v, %v", ca, err)
	}
}
