package logs_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/local/localtest"
	"cads/shared/wire"
)

// TestLogsThroughThePlatform: ingest records go through the embedded SQS
// queue and the aggregator into the log partitions; the logs function
// answers through the local API Gateway and the authorizer, in JSON and
// CSV, and takes custom logs.
func TestLogsThroughThePlatform(t *testing.T) {
	p, _ := localtest.Start(t)
	secret := p.Bootstrap.Secret
	do := func(method, path, body string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(method, p.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw), res.Header.Get("Content-Type")
	}
	st, raw, _ := do("POST", "/v2/applications", `{"name":"logs demo","aliases":["logs.example.com"]}`)
	var app struct{ ID string }
	if st != 200 || json.Unmarshal([]byte(raw), &app) != nil || app.ID == "" {
		t.Fatalf("create application: %d %s", st, raw)
	}

	now := time.Now().UTC()
	var recs []map[string]any
	for i := range 40 {
		recs = append(recs, map[string]any{"app": app.ID, "arrival": now.Add(-time.Duration(40-i) * time.Second).Format(time.RFC3339Nano),
			"status_code": 200 + (i%2)*300, "request_path": fmt.Sprintf("/p,%d", i), "request_id": fmt.Sprintf("r%02d", i), "labels": []string{"x"}})
	}
	body, _ := json.Marshal(map[string]any{"batch": "e2e-1", "records": recs})
	if _, err := p.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(p.Queues[wire.MetricsQueue].URL), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}

	q := url.Values{"from": {now.Add(-time.Hour).Format(time.RFC3339)}, "to": {now.Add(time.Minute).Format(time.RFC3339)},
		"select": {"request_id,status_code,request_path"}, "filter": {"status_code >= 500"}, "rows": {"arrays"}}
	var doc struct {
		Records struct {
			Count  int     `json:"count"`
			Result [][]any `json:"result"`
		} `json:"records"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, raw, _ := do("GET", "/v2/applications/"+app.ID+"/logs?"+q.Encode(), "")
		if st != 200 || json.Unmarshal([]byte(raw), &doc) != nil {
			t.Fatalf("GET logs: %d %s", st, raw)
		}
		if doc.Records.Count == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ingested records did not arrive: %s", raw)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if doc.Records.Result[0][0] != "r01" || doc.Records.Result[0][1] != 500.0 {
		t.Fatalf("first 5xx record: %v", doc.Records.Result[0])
	}

	q.Del("rows")
	q.Set("format", "csv")
	st, raw, ct := do("GET", "/v2/applications/"+app.ID+"/logs?"+q.Encode(), "")
	rows, err := csv.NewReader(strings.NewReader(raw)).ReadAll()
	if st != 200 || !strings.HasPrefix(ct, "text/csv") || err != nil || len(rows) != 21 || rows[1][2] != "/p,1" {
		t.Fatalf("CSV: %d %s %v %q", st, ct, err, raw)
	}

	st, raw, _ = do("POST", "/v2/applications/"+app.ID+"/logs", fmt.Sprintf(`{"created":%q,"stream":"deploy","message":"v2 live","address":"192.0.2.1","filename":"deploy.log","hostname":"ci-1"}`, now.Format(time.RFC3339)))
	var ids []string
	if st != 200 || json.Unmarshal([]byte(raw), &ids) != nil || len(ids) != 1 {
		t.Fatalf("POST custom: %d %s", st, raw)
	}
	st, raw, _ = do("GET", "/v2/applications/"+app.ID+"/logs?type=custom&select=id,message&from="+url.QueryEscape(now.Add(-time.Minute).Format(time.RFC3339)), "")
	if st != 200 || !strings.Contains(raw, `{"id":"`+ids[0]+`","message":"v2 live"}`) {
		t.Fatalf("GET custom: %d %s", st, raw)
	}
	if st, raw, _ := do("GET", "/v2/applications/"+app.ID+"/logs?filter="+url.QueryEscape("status_code >"), ""); st != 400 || !strings.Contains(raw, "position 14") {
		t.Fatalf("bad filter: %d %s", st, raw)
	}
}
