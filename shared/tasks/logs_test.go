package tasks_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/tasks"
	"cads/shared/tasks/tasksapi"
	"cads/shared/wire"
	"cads/shared/wire/taskswire"
)

// A task's log: a line when submitted, one per claim, one per release
// after a retryable failure, one at the end; read back through the API
// with from, to and limit, and refused for another account.
func TestTaskLogs(t *testing.T) {
	e := newEnv(t)
	e.dp.failures.Store(1)
	a := e.app(domain.AppStopped)
	tk := e.submit(tasks.TypeStart, a.ID, nil)
	if out := e.run(tk.ID); out != tasks.Retry {
		t.Fatalf("first attempt: %v, want Retry", out)
	}
	// Lines are stamped to the millisecond: without a step the release
	// and the next claim can share one, and from= below (the second
	// claim's time) would take the release too.
	e.clk.Advance(time.Second)
	if out := e.run(tk.ID); out != tasks.Done {
		t.Fatalf("second attempt: %v, want Done", out)
	}
	h := taskswire.Handler(wire.New(quiet, e.d.Client, e.d.Table))
	p := caller.Principal{ID: "u1", Kind: domain.KindUser, AccountID: "acct", KeyID: "k"}
	read := func(query string) (int, []tasksapi.ProcessLog, string) {
		t.Helper()
		r := call(t, h, p, "GET", "/v2/tasks/"+tk.ID+"/logs"+query, "", "")
		var lines []tasksapi.ProcessLog
		if r.Status == 200 {
			if err := json.Unmarshal([]byte(r.Raw), &lines); err != nil {
				t.Fatalf("%s: %v", r.Raw, err)
			}
		}
		return r.Status, lines, r.Raw
	}
	st, lines, raw := read("")
	want := []struct{ activity, severity string }{{"submit", "info"}, {"claim", "info"}, {"retry", "warning"}, {"claim", "info"}, {"finish", "info"}}
	if st != 200 || len(lines) != len(want) {
		t.Fatalf("log: %d %s", st, raw)
	}
	for i, w := range want {
		l := lines[i]
		if l.Activity != w.activity || l.Severity != w.severity || l.Created.IsZero() || (i > 0 && l.Created.Before(lines[i-1].Created)) {
			t.Fatalf("line %d: %+v, want %s/%s in time order: %s", i, l, w.activity, w.severity, raw)
		}
		if (i == 0) != (l.ProcessID == "") {
			t.Fatalf("line %d: process %q (only the submission has none)", i, l.ProcessID)
		}
	}
	if !strings.Contains(lines[2].Message, "data plane unreachable") || !strings.HasPrefix(lines[4].Message, "success: ") {
		t.Fatalf("messages: %q, %q", lines[2].Message, lines[4].Message)
	}
	if lines[1].ProcessID == lines[3].ProcessID {
		t.Fatalf("two attempts with one process id %q", lines[1].ProcessID)
	}
	if _, got, _ := read("?limit=2"); len(got) != 2 || got[1].Activity != "claim" {
		t.Fatalf("limit=2: %+v", got)
	}
	from := lines[3].Created.Format(time.RFC3339Nano) // the helper sends the query as is
	if _, got, _ := read("?from=" + from); len(got) != 2 || got[0].Activity != "claim" {
		t.Fatalf("from the second claim: %+v", got)
	}
	if _, got, _ := read("?to=" + from); len(got) != 3 {
		t.Fatalf("to the second claim (exclusive): %+v", got)
	}
	for _, q := range []string{"?limit=-1", "?limit=x", "?from=yesterday", "?from=" + from + "&to=" + from} {
		if st, _, raw := read(q); st != 400 {
			t.Fatalf("%s: %d %s", q, st, raw)
		}
	}
	other := p
	other.AccountID = "elsewhere"
	if r := call(t, h, other, "GET", "/v2/tasks/"+tk.ID+"/logs", "", ""); r.Status != 404 {
		t.Fatalf("another account: %d %s", r.Status, r.Raw)
	}
}
