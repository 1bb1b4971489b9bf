package logs_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"cads/shared/domain"
	"cads/shared/logs"
)

// custom posts n custom records at t.
func (e *env) custom(t time.Time, n int) {
	e.t.Helper()
	var recs []string
	for i := range n {
		recs = append(recs, fmt.Sprintf(`{"created":%q,"stream":"s","message":"m%d","address":"192.0.2.1","filename":"f","hostname":"h"}`, t.Format(time.RFC3339Nano), i))
	}
	if r := e.call(e.op, "POST", "/v2/applications/"+e.app+"/logs", nil, "["+strings.Join(recs, ",")+"]"); r.status != 200 {
		e.t.Fatalf("custom logs: %d %s", r.status, r.raw)
	}
}

// Preparing an archive: the records of the range only, gzipped JSON lines,
// written whole; a budget refuses with the limit named and writes
// nothing; another account's application is not found.
func TestPrepareArchive(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	st := e.deps.Store
	hour := st.Now().UTC().Truncate(time.Hour)
	e.custom(hour.Add(-time.Minute), 5) // the hour before: not in the range
	e.custom(hour.Add(time.Second), 40)
	req := logs.ArchiveRequest{Account: e.op.AccountID, App: e.app, ArchiveType: "custom", From: hour, To: hour.Add(time.Hour), Task: "t1"}

	a := logs.NewArchiver(st.Logs)
	arc, err := a.Prepare(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if arc.Count != 40 || arc.Chunks != 1 || arc.Type != logs.TypeCustom || arc.Expires != arc.Created.Add(3*24*time.Hour).Unix() {
		t.Fatalf("archive %+v", arc)
	}
	data, err := st.Logs.LogArchiveData(ctx, arc)
	if err != nil || len(data) != arc.Size {
		t.Fatalf("data: %d bytes, %v", len(data), err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	lines := strings.Split(strings.TrimSpace(string(plain)), "\n")
	var first map[string]any
	if len(lines) != 40 || json.Unmarshal([]byte(lines[0]), &first) != nil || first["stream"] != "s" || first["id"] == "" {
		t.Fatalf("content: %d lines, first %s", len(lines), lines[0])
	}

	// Budgets: nothing written, the limit named.
	other := req
	other.From, other.To = hour.Add(-time.Hour), hour.Add(time.Hour)
	small := logs.NewArchiver(st.Logs)
	small.LowerArchiveBudgets(30, 1<<20)
	var bq *logs.BadQuery
	if _, err := small.Prepare(ctx, other); !errors.As(err, &bq) || !strings.Contains(bq.Msg, "ScanBudget") {
		t.Fatalf("record budget: %v", err)
	}
	small.LowerArchiveBudgets(1000, 100)
	if _, err := small.Prepare(ctx, other); !errors.As(err, &bq) || !strings.Contains(bq.Msg, "MaxLogArchiveBytes") {
		t.Fatalf("size budget: %v", err)
	}
	have, err := st.Logs.ListLogArchives(ctx, e.op.AccountID, "", st.Now())
	if err != nil || len(have) != 1 {
		t.Fatalf("archives after refusals: %d %v", len(have), err)
	}

	// Not the account's application: nothing written.
	stray := req
	stray.Account = "someotheraccount"
	if _, err := a.Prepare(ctx, stray); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another account's application: %v", err)
	}
	if have, _ := st.Logs.ListLogArchives(ctx, "someotheraccount", "", st.Now()); len(have) != 0 {
		t.Fatalf("written for another account: %+v", have)
	}

	// The endpoints: listing, download, another account, bad input, delete.
	rng := url.Values{"from": {hour.Format(time.RFC3339)}, "to": {hour.Add(time.Hour).Format(time.RFC3339)}}
	ref := "/v2/archived-logs/applications/" + e.app + "/custom"
	r := e.call(e.op, "GET", "/v2/archived-logs", nil, "")
	if r.status != 200 || !strings.Contains(r.raw, `"href":"`+ref+`"`) || !strings.Contains(r.raw, `"count":40,"state":"ready"`) {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	for f, want := range map[string]int{"type=custom": 1, "type = 'proxy-logs'": 0, "application=" + e.app + " and type=custom": 1, "application=/v2/applications/zzz": 0} {
		r := e.call(e.op, "GET", "/v2/archived-logs", url.Values{"filter": {f}}, "")
		var got []logs.ArchivedLogJSON
		if r.status != 200 || json.Unmarshal([]byte(r.raw), &got) != nil || len(got) != want {
			t.Fatalf("filter %q: %d %s", f, r.status, r.raw)
		}
	}
	for f, want := range map[string]string{"state=ready": "unknown field", "type=events": "not an archive type", "type=custom or type=cdn": "not <field>=<value>"} {
		e.wantError(e.call(e.op, "GET", "/v2/archived-logs", url.Values{"filter": {f}}, ""), 400, want)
	}
	if r := e.call(e.op, "GET", "/v2/archived-logs", url.Values{"from": {hour.Add(time.Hour).Format(time.RFC3339)}}, ""); r.raw != "[]" {
		t.Fatalf("from after the range: %s", r.raw)
	}
	if r := e.call(e.op, "GET", ref, rng, ""); r.status != 200 || r.ct != "application/gzip" {
		t.Fatalf("download: %d %s", r.status, r.ct)
	}
	e.wantError(e.call(e.op, "GET", ref, nil, ""), 400, "from and to are required")
	e.wantError(e.call(e.op, "GET", "/v2/archived-logs/applications/"+e.app+"/access", rng, ""), 404, "no archive type")
	stranger := e.op
	stranger.AccountID = "someotheraccount"
	e.wantError(e.call(stranger, "GET", ref, rng, ""), 404, "no archive")
	e.wantError(e.call(stranger, "DELETE", ref, nil, ""), 404, "no archive")
	e.wantError(e.call(e.op, "DELETE", ref, url.Values{"from": {hour.Add(time.Minute).Format(time.RFC3339)}}, ""), 404, "no archive")
	if r := e.call(e.op, "DELETE", ref, rng, ""); r.status != 200 || !strings.Contains(r.raw, `"count":40`) {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	e.wantError(e.call(e.op, "GET", ref, rng, ""), 404, "no archive")
	if _, err := st.Logs.LogArchiveData(ctx, arc); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("chunks after delete: %v", err)
	}
}
