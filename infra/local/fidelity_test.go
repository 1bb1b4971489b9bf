package local_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/gateway"
	"cads/infra/local"
	"cads/infra/local/localtest"
	"cads/infra/sam"
	"cads/infra/schedule"
	"cads/infra/testenv"
)

// logLines returns the platform's JSON log lines with the given message.
func logLines(t *testing.T, logs string, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Every enabled Schedule event of the template runs at its rate: one
// minute on the platform's clock runs both sweeps once, without error.
func TestSchedulesRunTheTemplatesSweeps(t *testing.T) {
	tpl, err := sam.Load(filepath.Join(testenv.Root(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for id, fn := range tpl.Functions {
		for _, ev := range fn.Events {
			if ev.Schedule != nil && ev.Schedule.Enabled {
				if e, err := schedule.Parse(ev.Schedule.Schedule); err != nil || e.Next(time.Time{}) != (time.Time{}).Add(time.Minute) {
					t.Fatalf("%s.%s: %q is not the one-minute sweep this test drives", id, ev.Name, ev.Schedule.Schedule)
				}
				want[id] = true
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("the template has no Schedule events")
	}

	clock := schedule.NewManualClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	p, logs := localtest.Start(t, func(o *local.Options) { o.Clock = clock })
	if err := clock.WaitForWaiters(t.Context(), len(want)); err != nil {
		t.Fatal(err)
	}
	if n := len(logLines(t, logs.String(), "schedule ran")); n != 0 {
		t.Fatalf("%d runs before the clock moved", n)
	}
	clock.Advance(time.Minute)
	// Advance fires the due waiters and forgets them; each schedule arms
	// its next one after it has started its run. Closing before that
	// leaves the schedule's loop both a fire and a stop to choose from
	// (and it chose the stop, under load, at 4c74f64).
	if err := clock.WaitForWaiters(t.Context(), len(want)); err != nil {
		t.Fatal(err)
	}
	// Close waits for the runs in progress, so their lines are all there.
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, l := range logLines(t, logs.String(), "schedule ran") {
		fn, _ := l["function"].(string)
		ran[fn]++
		if l["error"] != nil || l["level"] != "INFO" || l["rule"] == "" || l["duration"] == nil {
			t.Errorf("run of %s: %v", fn, l)
		}
	}
	for id := range want {
		if ran[id] != 1 {
			t.Errorf("%s ran %d times in one minute, want 1 (runs %v)", id, ran[id], ran)
		}
	}
}

// A schedule the local platform cannot run stops the start, loudly.
func TestUnknownScheduleExpressionFailsTheStart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`Schedule: rate\([^)]*\)`)
	if !re.Match(b) {
		t.Skip("the template has no rate() schedule to alter")
	}
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, re.ReplaceAll(b, []byte("Schedule: rate(1 fortnight)")), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := local.Start(t.Context(), local.Options{Template: path, APIAddr: "127.0.0.1:0", StateDir: t.TempDir(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil {
		_ = p.Close(context.Background())
		t.Fatal("the platform started with rate(1 fortnight)")
	}
	if !strings.Contains(err.Error(), `rate(1 fortnight)`) {
		t.Errorf("error %v does not name the expression", err)
	}
}

// An API function slower than the integration timeout gets the template's
// INTEGRATION_TIMEOUT response while it runs on; its context has the
// template's Timeout as deadline.
func TestSlowAPIFunctionAnswers504(t *testing.T) {
	tpl, err := sam.Load(filepath.Join(testenv.Root(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var api sam.Api
	for _, a := range tpl.Apis {
		api = a
	}
	gr, ok := api.GatewayResponses[gateway.RespIntegrationTimeout]
	if !ok {
		t.Skip("the template does not customise INTEGRATION_TIMEOUT")
	}
	timeout := time.Duration(tpl.Functions["UsersFunction"].Timeout) * time.Second

	release := make(chan struct{})
	deadline := make(chan time.Duration, 1)
	p, logs := localtest.Start(t, func(o *local.Options) {
		o.IntegrationTimeout = 300 * time.Millisecond
		o.WrapAPI = func(id string, h gateway.ProxyHandler) gateway.ProxyHandler {
			if id != "UsersFunction" {
				return h
			}
			return func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				if req.Headers["X-Test-Slow"] == "" {
					return h(ctx, req)
				}
				dl, _ := ctx.Deadline()
				deadline <- time.Until(dl)
				<-release
				return h(ctx, req)
			}
		}
	})
	t.Cleanup(func() { close(release) })

	req, _ := http.NewRequest("GET", p.URL+"/v2/users/self", nil)
	req.Header.Set("Authorization", "Bearer "+p.Bootstrap.Secret)
	req.Header.Set("X-Test-Slow", "1")
	began := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body, wantBody any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(gr.Templates["application/json"]), &wantBody)
	wantStatus := gr.StatusCode
	if wantStatus == 0 {
		wantStatus = 504
	}
	if res.StatusCode != wantStatus || !jsonEqual(body, wantBody) {
		t.Errorf("got %d %v, want %d %v", res.StatusCode, body, wantStatus, wantBody)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("answered after %v", took)
	}
	if d := <-deadline; d <= timeout-2*time.Second || d > timeout {
		t.Errorf("function deadline in %v, want the template's %v", d, timeout)
	}
	var timedOut bool
	for _, l := range logLines(t, logs.String(), "gateway request") {
		if l["status"] == float64(wantStatus) && strings.Contains(l["error"].(string), "integration timeout: function UsersFunction") {
			timedOut = true
		}
	}
	if !timedOut {
		t.Errorf("the 504 is not in the log:\n%s", logs.String())
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
