package local_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"cads/infra/local/localtest"
)

// The operations of issue 18 part 2, through the local API Gateway and
// the authorizer: task logs, log schemas, the applications' collection
// metrics, and a log archive prepared by a task, listed, downloaded as
// gzip and deleted.
func TestNewOpsThroughTheGateway(t *testing.T) {
	p, _ := localtest.Start(t)
	do := func(method, path, body string) (int, []byte, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, p.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.Bootstrap.Secret)
		req.Header.Set("Accept", "application/gzip, application/json")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, raw, res.Header
	}
	st, raw, _ := do("POST", "/v2/applications", `{"name":"archive demo","aliases":["archive.example.com"]}`)
	var app struct{ ID, Href string }
	if st != 200 || json.Unmarshal(raw, &app) != nil {
		t.Fatalf("create application: %d %s", st, raw)
	}

	// Log schemas: every type, numeric fields marked as metrics.
	st, raw, _ = do("GET", "/v2/log-schemas", "")
	var schemas []struct {
		Type   string
		Fields []struct {
			Name     string
			IsMetric bool `json:"is_metric"`
		}
	}
	if st != 200 || json.Unmarshal(raw, &schemas) != nil || len(schemas) != 5 || schemas[0].Type != "access" || len(schemas[0].Fields) != 42 {
		t.Fatalf("log schemas: %d %.300s", st, raw)
	}

	// The collection metrics route is not an application named "metrics".
	if st, raw, _ := do("GET", "/v2/applications/metrics?names=requests&summarize=true", ""); st != 200 || !strings.Contains(string(raw), `"metrics":{"requests":0}`) {
		t.Fatalf("applications/metrics: %d %s", st, raw)
	}

	// Custom records in the current hour, then an archive of that hour.
	now := time.Now().UTC()
	var recs []string
	for i := range 30 {
		recs = append(recs, fmt.Sprintf(`{"created":%q,"stream":"app","message":"line %d","address":"192.0.2.7","filename":"app.log","hostname":"web-1"}`, now.Format(time.RFC3339Nano), i))
	}
	if st, raw, _ := do("POST", app.Href+"/logs", "["+strings.Join(recs, ",")+"]"); st != 200 {
		t.Fatalf("custom logs: %d %s", st, raw)
	}
	from := now.Truncate(time.Hour)
	to := from.Add(time.Hour)
	ref := "/v2/archived-logs/applications/" + app.ID + "/custom"
	task := fmt.Sprintf(`{"type":"prepare-for-download","parameters":{"reference":%q,"from":%q,"to":%q,"retention":5}}`, ref, from.Format(time.RFC3339), to.Format(time.RFC3339))
	st, raw, _ = do("POST", "/v2/tasks?wait=5", task)
	var tk struct{ ID, State, Message string }
	if st != 200 || json.Unmarshal(raw, &tk) != nil || tk.State != "success" || !strings.Contains(tk.Message, "30 records") {
		t.Fatalf("prepare-for-download: %d %s", st, raw)
	}
	if st, raw, _ := do("POST", "/v2/tasks", strings.Replace(task, from.Format(time.RFC3339), from.Add(time.Minute).Format(time.RFC3339), 1)); st != 400 || !strings.Contains(string(raw), "whole hours") {
		t.Fatalf("a range off the hour: %d %s", st, raw)
	}

	// The task's log, through its own route.
	st, raw, _ = do("GET", "/v2/tasks/"+tk.ID+"/logs", "")
	var lines []struct{ Activity, Severity, Message string }
	if st != 200 || json.Unmarshal(raw, &lines) != nil || len(lines) != 3 || lines[2].Activity != "finish" || !strings.HasPrefix(lines[2].Message, "success: ") {
		t.Fatalf("task logs: %d %s", st, raw)
	}

	// Listed with its range, count and size.
	st, raw, _ = do("GET", "/v2/archived-logs?filter="+url.QueryEscape("type=custom and application="+app.ID), "")
	var list []struct {
		Href   string
		Ranges []struct {
			From, To    time.Time
			Count, Size int
			State       string
		}
	}
	if st != 200 || json.Unmarshal(raw, &list) != nil || len(list) != 1 || list[0].Href != ref || len(list[0].Ranges) != 1 ||
		list[0].Ranges[0].Count != 30 || list[0].Ranges[0].State != "ready" || !list[0].Ranges[0].From.Equal(from) {
		t.Fatalf("archived logs: %d %s", st, raw)
	}
	if st, raw, _ := do("GET", "/v2/archived-logs?filter="+url.QueryEscape("type=cdn"), ""); st != 200 || string(raw) != "[]" {
		t.Fatalf("filtered to another type: %d %s", st, raw)
	}

	// Downloaded as the gzip file of 30 JSON lines, byte for byte as listed.
	rng := "?from=" + url.QueryEscape(from.Format(time.RFC3339)) + "&to=" + url.QueryEscape(to.Format(time.RFC3339))
	st, raw, h := do("GET", ref+rng, "")
	if st != 200 || h.Get("Content-Type") != "application/gzip" || len(raw) != list[0].Ranges[0].Size {
		t.Fatalf("download: %d %s %d bytes: %.200q", st, h.Get("Content-Type"), len(raw), raw)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(plain)), "\n")
	if len(got) != 30 || !strings.Contains(got[0], `"message":"line `) {
		t.Fatalf("archive content: %d lines: %.300s", len(got), plain)
	}
	if st, raw, _ := do("GET", ref+"?from="+url.QueryEscape(from.Add(-time.Hour).Format(time.RFC3339))+"&to="+url.QueryEscape(to.Format(time.RFC3339)), ""); st != 404 {
		t.Fatalf("a range never prepared: %d %s", st, raw)
	}
	if st, raw, _ := do("GET", "/v2/archived-logs/applications/"+app.ID+"/nosuchtype"+rng, ""); st != 404 {
		t.Fatalf("an unknown archive type: %d %s", st, raw)
	}

	// Deleted whole; then gone.
	if st, raw, _ := do("DELETE", ref, ""); st != 200 || !strings.Contains(string(raw), `"count":30`) {
		t.Fatalf("delete: %d %s", st, raw)
	}
	if st, raw, _ := do("GET", ref+rng, ""); st != 404 {
		t.Fatalf("download after delete: %d %s", st, raw)
	}
	if st, raw, _ := do("DELETE", ref, ""); st != 404 {
		t.Fatalf("delete again: %d %s", st, raw)
	}
}
