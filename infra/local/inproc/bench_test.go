package inproc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/local"
	"cads/infra/local/localtest"
	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/metrics"
	"cads/shared/wire"
	"cads/shared/wire/accountswire"
	"cads/shared/wire/addresssetswire"
	"cads/shared/wire/aggregatorwire"
	"cads/shared/wire/applicationswire"
	"cads/shared/wire/authorizerwire"
	"cads/shared/wire/logswire"
	"cads/shared/wire/roleswire"
	"cads/shared/wire/taskswire"
	"cads/shared/wire/testswire"
	"cads/shared/wire/userswire"
)

// BenchmarkHandlers measures the authorizer, one request of each API
// function and an aggregator batch in-process, as Lambda would run them:
// the event through JSON, the real handler, DynamoDB on the embedded
// server over loopback.
// ns/op is the whole invocation (the DynamoDB server's work included);
// allocs/op are the function's and the server's. `make bench` runs it;
// the load run (infra/cmd/bench) splits CPU between the parts.
func BenchmarkHandlers(b *testing.B) {
	// Nothing is logged: a line per request would measure the logger.
	// The authorizer runs with its warm path as deployed (staleness 1 s).
	p, _ := localtest.Start(b, func(o *local.Options) {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
		o.AuthzStaleness = 0
	})
	d, boot := p.Deps, p.Bootstrap
	op := testenv.Operator(boot)
	created := invoke(b, d, req{fn: applicationswire.Handler, as: op, method: "POST", resource: "/v2/applications", contentType: "application/json",
		body: `{"name":"bench","aliases":["bench.example.com"]}`})
	var app struct{ ID string }
	if err := json.Unmarshal([]byte(created.Body), &app); err != nil || created.StatusCode != 200 {
		b.Fatalf("fixture application: %d %s", created.StatusCode, created.Body)
	}

	// Warm: the same key again within the staleness bound (what a busy
	// container sees); cold: every decision reads the table.
	cold := d
	cold.AuthzStaleness = 0
	for _, c := range []struct {
		name string
		az   func(context.Context, events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error)
	}{{"authorizer/GET application", authorizerwire.Handler(d)}, {"authorizer cold/GET application", authorizerwire.Handler(cold)}} {
		az := c.az
		b.Run(c.name, func(b *testing.B) {
			path := "/v2/applications/" + app.ID
			ev := events.APIGatewayCustomAuthorizerRequestTypeRequest{Type: "REQUEST", HTTPMethod: "GET", Path: path, Resource: "/v2/applications/{id}",
				MethodArn: "arn:aws:execute-api:us-east-1:000000000000:local/api/GET" + path,
				Headers:   map[string]string{"Authorization": "Bearer " + boot.Secret}}
			b.ReportAllocs()
			for b.Loop() {
				e := ev
				throughJSON(b, &e)
				res, err := az(context.Background(), e)
				if err != nil || len(res.PolicyDocument.Statement) != 1 || res.PolicyDocument.Statement[0].Effect != "Allow" {
					b.Fatalf("authorizer: %v %+v", err, res)
				}
			}
		})
	}

	for _, c := range []struct {
		name string
		r    req
	}{
		{"users/GET self", req{fn: userswire.Handler, method: "GET", resource: "/v2/users/self/authorization"}},
		{"accounts/GET account", req{fn: accountswire.Handler, method: "GET", resource: "/v2/accounts/{id}", params: map[string]string{"id": boot.RootAccount}}},
		{"roles/GET roles", req{fn: roleswire.Handler, method: "GET", resource: "/v2/accounts/{id}/roles", params: map[string]string{"id": boot.RootAccount}}},
		{"applications/GET application", req{fn: applicationswire.Handler, method: "GET", resource: "/v2/applications/{id}", params: map[string]string{"id": app.ID}}},
		{"applications/GET applications", req{fn: applicationswire.Handler, method: "GET", resource: "/v2/applications"}},
		{"tasks/GET tasks", req{fn: taskswire.Handler, method: "GET", resource: "/v2/tasks"}},
		{"address-sets/GET address sets", req{fn: addresssetswire.Handler, method: "GET", resource: "/v2/address-sets"}},
		{"logs/GET logs", req{fn: logswire.Handler, method: "GET", resource: "/v2/applications/{id}/logs", params: map[string]string{"id": app.ID}}},
		{"tests/GET tests", req{fn: testswire.Handler, method: "GET", resource: "/v2/tests"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := c.r
			r.as = op
			// One handler for the whole run, as a warm Lambda container
			// keeps it: its decider reuses what it read for the caller
			// within the staleness bound, as deployed.
			built := r.fn(d)
			r.fn = func(wire.Deps) apigw.ProxyHandler { return built }
			b.ReportAllocs()
			for b.Loop() {
				if resp := invoke(b, d, r); resp.StatusCode != 200 {
					b.Fatalf("%d %s", resp.StatusCode, resp.Body)
				}
			}
		})
	}
	agg := aggregatorwire.Handler(d)
	b.Run("aggregator/100 access records", func(b *testing.B) {
		// A new batch id per message: each is folded and stored (a
		// repeated one would be skipped as a redelivery). Last, as the
		// records it stores grow the table, and the embedded server's
		// queries slow down with the table's size.
		at := time.Now().UTC().Add(-time.Minute)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			recs := make([]metrics.Record, 100)
			for j := range recs {
				recs[j] = metrics.Record{App: app.ID, Arrival: at.Format(time.RFC3339Nano), Completed: at.Add(20 * time.Millisecond).Format(time.RFC3339Nano),
					RequestID: fmt.Sprintf("bench-%d-%03d", n, j), RequestMethod: "GET", RequestHost: "bench.example.com", RequestPath: "/", StatusCode: 200,
					BytesIn: 500, BytesOut: 12000, Elapsed: 20, ServerLatency: 15, Country: "DE", CacheSource: "miss", DeliveryStatus: "delivered"}
			}
			body, _ := json.Marshal(metrics.Message{Batch: fmt.Sprintf("bench-%d", n), Records: recs})
			ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: fmt.Sprint(n), Body: string(body), EventSource: "aws:sqs"}}}
			throughJSON(b, &ev)
			if res, err := agg(context.Background(), ev); err != nil || len(res.BatchItemFailures) > 0 {
				b.Fatalf("aggregator: %v %+v", err, res)
			}
		}
	})
}
