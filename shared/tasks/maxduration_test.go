package tasks_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/tasks"
	"cads/shared/wire"
)

// The reference document's enter_maintenance parameters: maximum_duration
// (whole seconds) is accepted within its bounds and stored as given.
func TestParseMaximumDuration(t *testing.T) {
	now := time.Now()
	r, err := tasks.ParsePost([]byte(`{"type":"enter_maintenance","target":"/v2/applications/a1","parameters":{"maximum_duration":3600}}`), now)
	if p, ok := r.Params.(tasks.EnterParams); err != nil || !ok || p.MaximumDuration == nil || *p.MaximumDuration != 3600 {
		t.Fatalf("accepted: %+v %v", r, err)
	}
	for _, body := range []string{
		`{"maximum_duration":0}`, `{"maximum_duration":-5}`, `{"maximum_duration":2592001}`,
		`{"maximum_duration":1.5}`, `{"maximum_duration":"1h"}`, `{"maximum_duration":60,"until":"x"}`,
	} {
		if _, err := tasks.ParsePost([]byte(`{"type":"enter_maintenance","target":"/v2/applications/a1","parameters":`+body+`}`), now); err == nil {
			t.Errorf("%s accepted", body)
		}
	}
	if wire.TasksQueue != tasks.QueueID {
		t.Fatalf("the worker schedules exits on %q, the task queue is %q", tasks.QueueID, wire.TasksQueue)
	}
}

var taskHrefRE = regexp.MustCompile(`/v2/tasks/([a-z0-9]+)\)`)

// An enter_maintenance task with maximum_duration schedules the
// exit_maintenance that ends it: pending, not run before its time even
// when delivered early, sent by the outbox sweep once due, and then it
// ends that maintenance. A maintenance entered again by another task in
// between is left alone.
func TestMaximumDurationEndsTheMaintenance(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// An hour, not a second: the store's clock is shifted real time, and
	// a loaded machine once took longer than a second between the enter
	// and the first sweep, which then found the exits due.
	limit := 3600
	scheduled := func(app domain.Application) (domain.Task, domain.Task) {
		t.Helper()
		enter := e.submit(tasks.TypeEnterMaintenance, app.ID, tasks.EnterParams{MaximumDuration: &limit})
		if got := e.run(enter.ID); got != tasks.Done || e.appNow(app.ID).State != domain.AppMaintenance {
			t.Fatalf("enter: %v, app %s", got, e.appNow(app.ID).State)
		}
		m := taskHrefRE.FindStringSubmatch(e.task(enter.ID).Message)
		if m == nil {
			t.Fatalf("enter names no scheduled exit: %q", e.task(enter.ID).Message)
		}
		return enter, e.task(m[1])
	}
	a, b := e.app(domain.AppRunning), e.app(domain.AppRunning)
	enterA, exitA := scheduled(a)
	_, exitB := scheduled(b)
	if exitA.Type != tasks.TypeExitMaintenance || exitA.State != domain.TaskPending || exitA.Ends != enterA.ID || exitA.App != a.ID ||
		exitA.CreatedBy != enterA.CreatedBy || !strings.Contains(tasks.Out(exitA).Message, "ends the maintenance that task /v2/tasks/"+enterA.ID) {
		t.Fatalf("scheduled exit: %+v", exitA)
	}
	// Delivered before its time: not claimed, still pending, nothing moved.
	if got := e.run(exitA.ID); got != tasks.Done || e.task(exitA.ID).State != domain.TaskPending || e.task(exitA.ID).Attempts != 0 ||
		e.appNow(a.ID).State != domain.AppMaintenance {
		t.Fatalf("early delivery: %v %+v", got, e.task(exitA.ID))
	}
	// B leaves maintenance and enters it again (without a limit) before
	// its scheduled exit is due.
	for _, typ := range []string{tasks.TypeExitMaintenance, tasks.TypeEnterMaintenance} {
		if got := e.run(e.submit(typ, b.ID, nil).ID); got != tasks.Done {
			t.Fatalf("%s B: %v", typ, got)
		}
	}
	// The sweep sends each scheduled exit once it is due, not before: the
	// store's clock moves past the maximum duration instead of the test
	// waiting it out.
	sentExits := func() bool {
		return slices.Contains(e.sent.all(), exitA.ID) || slices.Contains(e.sent.all(), exitB.ID)
	}
	if _, err := e.ob.Sweep(ctx); err != nil || sentExits() {
		t.Fatalf("a sweep before the exits were due: %v, sent %v", err, e.sent.all())
	}
	for _, exit := range []domain.Task{exitA, exitB} {
		if due := time.UnixMilli(exit.NotBefore); !due.After(e.st.Now()) {
			t.Fatalf("exit %s due at %s, before the clock moved (%s)", exit.ID, due, e.st.Now())
		}
	}
	e.clk.Advance(time.Duration(limit)*time.Second + time.Millisecond)
	testenv.AwaitIndexes() // the outbox is found through an index
	if n, err := e.ob.Sweep(ctx); err != nil || n != 2 || !slices.Contains(e.sent.all(), exitA.ID) || !slices.Contains(e.sent.all(), exitB.ID) {
		t.Fatalf("the sweep once the exits were due: %d %v, sent %v", n, err, e.sent.all())
	}
	if got := e.run(exitA.ID); got != tasks.Done || e.task(exitA.ID).State != domain.TaskSuccess || e.appNow(a.ID).State != domain.AppRunning {
		t.Fatalf("scheduled exit of A: %v %+v, app %s", got, e.task(exitA.ID), e.appNow(a.ID).State)
	}
	got := e.run(exitB.ID)
	if fin := e.task(exitB.ID); got != tasks.Done || fin.State != domain.TaskSuccess || !strings.HasPrefix(fin.Message, "nothing to do") ||
		e.appNow(b.ID).State != domain.AppMaintenance {
		t.Fatalf("scheduled exit of B's earlier maintenance: %v %+v, app %s", got, fin, e.appNow(b.ID).State)
	}
}
