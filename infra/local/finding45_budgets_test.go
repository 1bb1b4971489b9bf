package local_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"cads/shared/logs"
)

// Replays of findings 4 and 5 of the tenant isolation issue, through the
// local gateway, authorizer and functions: every request's work and
// response are bounded (docs/hardening.md, Budgets).

// rawDo sends a request with a raw body and returns the response and its
// body, whatever the content type.
func rawDo(t *testing.T, c client, method, path, secret, contentType string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// budgetApp creates an application and posts n custom log records whose
// message is 32 KiB of fill, a second apart, in POSTs under the JSON body
// limit.
func budgetApp(t *testing.T, c client, op string, n int, fill string) string {
	t.Helper()
	r := c.do("POST", "/v2/applications", op, map[string]any{"name": "Budgets", "aliases": []string{"budgets.example.com"}})
	if r.Status != 200 {
		t.Fatalf("create application: %d %s", r.Status, r.Raw)
	}
	app := r.Body["id"].(string)
	msg := strings.Repeat(fill, (32<<10)/len(fill))
	base := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
	per := 1_000_000 / (len(msg) + 200) // records per POST under the 1 MiB body limit
	for done := 0; done < n; {
		var batch []map[string]string
		for ; done < n && len(batch) < per; done++ {
			batch = append(batch, map[string]string{"created": base.Add(time.Duration(done) * time.Second).Format(time.RFC3339),
				"stream": "app", "message": msg, "address": "192.0.2.1", "filename": "app.log", "hostname": "web1"})
		}
		// Sent as written: json.Marshal would make each '<' six bytes.
		var body bytes.Buffer
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(batch); err != nil {
			t.Fatal(err)
		}
		if res, b := rawDo(t, c, "POST", "/v2/applications/"+app+"/logs", op, "application/json", body.Bytes()); res.StatusCode != 200 {
			t.Fatalf("post logs: %d %.300s", res.StatusCode, b)
		}
	}
	return app
}

type logsDoc struct {
	Records struct {
		Count  int     `json:"count"`
		Result [][]any `json:"result"`
		Start  int     `json:"start"`
		Next   *int    `json:"next"`
		Cut    *struct {
			Budget          string `json:"budget"`
			Limit           int64  `json:"limit"`
			Message         string `json:"message"`
			RecordsExamined int    `json:"records_examined"`
			Work            int64  `json:"work"`
			Continue        struct {
				From, To, Resume string
				Start            int
			} `json:"continue"`
		} `json:"cut"`
	} `json:"records"`
}

func getLogs(t *testing.T, c client, op, app string, q url.Values) (int, logsDoc, string) {
	t.Helper()
	if q.Get("format") != "csv" && !q.Has("rows") {
		q = maps.Clone(q)
		q.Set("rows", "arrays") // logsDoc reads rows as arrays
	}
	res, b := rawDo(t, c, "GET", "/v2/applications/"+app+"/logs?"+q.Encode(), op, "", nil)
	var d logsDoc
	if res.StatusCode == 200 {
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("logs document: %v: %.300s", err, b)
		}
	}
	return res.StatusCode, d, string(b)
}

// TestFinding4_LogRegexBudget: the regular expression that took 8.7 s over
// 30 records of 32 KB is refused before anything is read, naming the
// limit; a filter within the program limit whose model cost exceeds the
// work budget is cut, says so with its counters, and its continuation
// reaches the end of the range having examined every record once.
func TestFinding4_LogRegexBudget(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	app := budgetApp(t, c, op, 30, "a")
	from := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)

	q := url.Values{"type": {"custom"}, "from": {from}, "filter": {`message ~ '(.{100}){10}x'`}}
	status, _, raw := getLogs(t, c, op, app, q)
	if status != 400 || !strings.Contains(raw, "MaxRegexpProgram") || !strings.Contains(raw, `"type":"bad_request"`) {
		t.Fatalf("the finding's filter: %d %s", status, raw)
	}

	// 2 x 203 instructions per byte of 32 KiB messages: about 13 million
	// units a record in the cost model (the literal prefix makes the real
	// scan fast), so the 300 million unit budget ends the scan early.
	q.Set("filter", `message ~ 'x(.{20}){10}' or message ~ 'y(.{20}){10}'`)
	examined, pages := 0, 0
	for {
		status, d, raw := getLogs(t, c, op, app, q)
		if status != 200 || d.Records.Count != 0 {
			t.Fatalf("metered filter: %d %.400s", status, raw)
		}
		pages++
		cut := d.Records.Cut
		if cut == nil {
			break
		}
		if cut.Budget != logs.CutWork || cut.Limit != logs.WorkBudget || cut.Work < logs.WorkBudget || cut.Work > logs.WorkBudget+20_000_000 ||
			cut.RecordsExamined < 1 || cut.RecordsExamined >= 30 || cut.Continue.Resume == "" || cut.Message == "" {
			t.Fatalf("cut: %+v", cut)
		}
		examined += cut.RecordsExamined
		q.Set("from", cut.Continue.From)
		q.Set("to", cut.Continue.To)
		q.Set("start", fmt.Sprint(cut.Continue.Start))
		q.Set("resume", cut.Continue.Resume)
		if pages > 5 {
			t.Fatal("the continuations do not end")
		}
	}
	if pages < 2 || examined >= 30 {
		t.Fatalf("%d pages, %d records examined before the last", pages, examined)
	}
}

// TestFinding5_MetricsResolutionOverflow: the resolution that overflowed
// the plan's arithmetic (a 500) is a 400 naming the limit.
func TestFinding5_MetricsResolutionOverflow(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	r := c.do("POST", "/v2/applications", op, map[string]any{"name": "Metrics", "aliases": []string{"metrics.example.com"}})
	if r.Status != 200 {
		t.Fatalf("create application: %d %s", r.Status, r.Raw)
	}
	for _, res := range []string{"9223372036854773800", "9223372036854775807", "316224010"} {
		r := c.do("GET", "/v2/applications/"+r.Body["id"].(string)+"/metrics?names=requests&resolution="+res, op, nil)
		if r.Status != 400 || r.errorType(t) != "bad_request" || !strings.Contains(r.Raw, "MaxResolution") {
			t.Errorf("resolution %s: %d %s", res, r.Status, r.Raw)
		}
	}
}

// TestFinding5_JSONBodyOverLambdaLimit: a 7 MiB JSON body, within API
// Gateway's 10 MiB but not Lambda's 6 MB event, is a 413 in the API's
// error body, not a 500.
func TestFinding5_JSONBodyOverLambdaLimit(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	body := []byte(`{"message": "` + strings.Repeat("a", 7<<20) + `"}`)
	res, b := rawDo(t, c, "POST", "/v2/applications", op, "application/json", body)
	var e struct {
		Status int `json:"status"`
		Error  struct{ Type, Message string }
	}
	if err := json.Unmarshal(b, &e); err != nil || res.StatusCode != 413 || e.Status != 413 || e.Error.Type != "payload_too_large" || e.Error.Message == "" ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("7 MiB JSON: %d %v %.300s", res.StatusCode, err, b)
	}
}
