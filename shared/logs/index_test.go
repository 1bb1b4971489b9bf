package logs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"cads/shared/logs"
	"cads/shared/wire"
	"cads/shared/wire/aggregatorwire"
	"cads/shared/wire/logswire"
)

// The hour index (docs/logs.md section 1): a query reads the index, then
// only the partitions of hours that received records.

// counted runs fn with the counter's delay set, so that calls made in
// parallel overlap and Sequential counts waves, and returns the calls.
func (e *env) counted(fn func()) (total, seq int, ops map[string]int, rcu float64) {
	e.t.Helper()
	e.d.Counter.SetDelay(20 * time.Millisecond)
	defer e.d.Counter.SetDelay(0)
	e.d.Counter.Reset()
	fn()
	rcu, _ = e.d.Counter.Consumed()
	return e.d.Counter.Total(), e.d.Counter.Sequential(), e.d.Counter.ByOperation(), rcu
}

// indexItems reads the raw hour index items of the application and type.
func (e *env) indexItems(typ string) []map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.d.Client.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(e.d.Table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "LOGHOURS#" + e.app + "#" + typ}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Items
}

func TestLogsEmptyRangeCostsOneRoundTrip(t *testing.T) {
	e := newEnv(t)
	to := e.deps.Store.Now().Truncate(time.Hour).Add(time.Hour)
	for _, q := range []url.Values{
		nil, // the default: the last 24 hours
		{"groupby": {"status_code"}},
		{"type": {"custom"}, "format": {"csv"}},
		{"from": {to.Add(-744 * time.Hour).Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}}, // the longest range
	} {
		var r reply
		total, seq, ops, rcu := e.counted(func() { r = e.get(q) })
		if r.status != 200 || r.doc.Records.Count != 0 && !strings.HasPrefix(r.ct, "text/csv") {
			t.Fatalf("%v: %d %s", q, r.status, r.raw)
		}
		t.Logf("empty range %v: %d calls, %d sequential, %v, %.1f RCU", q, total, seq, ops, rcu)
		if total != 2 || seq != 1 || ops["GetItem"] != 1 || ops["Query"] != 1 {
			t.Fatalf("empty range %v: %d calls (%d sequential) %v, want the application GetItem beside the index Query: 2 calls, 1 sequential", q, total, seq, ops)
		}
	}
}

func TestLogsLongRangeReadsOnlyFilledHours(t *testing.T) {
	e := newEnv(t)
	now := e.deps.Store.Now()
	at := []time.Time{now.Add(-29 * 24 * time.Hour), now.Add(-5*24*time.Hour - 7*time.Minute), now.Add(-time.Hour)}
	for i, a := range at {
		e.ingest(fmt.Sprintf("long%d", i),
			gen{ID: fmt.Sprintf("a%d", i), App: e.app, Arrival: a.Format(time.RFC3339Nano), Status: 200, Method: "GET"},
			gen{ID: fmt.Sprintf("c%d", i), App: e.app, Type: "cdn", Arrival: a.Add(-3 * time.Hour).Format(time.RFC3339Nano), Status: 200})
	}
	// 744 hours, the most a query may span, ending at the next hour.
	to := now.Truncate(time.Hour).Add(time.Hour)
	q := url.Values{"from": {to.Add(-744 * time.Hour).Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}, "select": {"request_id"}}

	var r reply
	total, seq, ops, rcu := e.counted(func() { r = e.get(q) })
	t.Logf("744 h, 3 filled hours: %d calls, %d sequential, %v, %.1f RCU", total, seq, ops, rcu)
	if r.status != 200 || r.doc.Records.Count != 3 || r.doc.Records.Result[0][0] != "a0" || r.doc.Records.Result[2][0] != "a2" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	// Wave 1: application GetItem and index Query; then the 3 partitions
	// one after the other.
	if total != 5 || seq != 4 || ops["Query"] != 4 {
		t.Fatalf("744 h with 3 filled hours: %d calls (%d sequential) %v, want 5 (4 sequential): 1 + index, then 3 partition Queries", total, seq, ops)
	}

	q.Set("order", "-arrival")
	total, seq, _, _ = e.counted(func() { r = e.get(q) })
	if r.status != 200 || r.doc.Records.Count != 3 || r.doc.Records.Result[0][0] != "a2" || r.doc.Records.Result[2][0] != "a0" || total != 5 || seq != 4 {
		t.Fatalf("descending: %d calls (%d sequential): %s", total, seq, r.raw)
	}
	q.Del("order")

	q.Set("groupby", "request_method")
	total, seq, _, _ = e.counted(func() { r = e.get(q) })
	if r.status != 200 || len(r.doc.Group.Result) != 1 || r.doc.Group.Result[0][1] != 3.0 || total != 5 || seq != 4 {
		t.Fatalf("grouped: %d calls (%d sequential): %s", total, seq, r.raw)
	}
	q.Del("groupby")

	// Each type has its own index: the cdn hours are not read for access.
	q.Set("type", "cdn")
	total, _, _, _ = e.counted(func() { r = e.get(q) })
	if r.status != 200 || r.doc.Records.Count != 3 || r.doc.Records.Result[0][0] != "c0" || total != 5 {
		t.Fatalf("cdn: %d calls: %s", total, r.raw)
	}
	// A range inside the retention that misses every filled hour.
	q = url.Values{"type": {"access"}, "from": {at[1].Add(2 * time.Hour).Format(time.RFC3339)}, "to": {at[2].Add(-2 * time.Hour).Format(time.RFC3339)}}
	total, seq, _, _ = e.counted(func() { r = e.get(q) })
	if r.status != 200 || r.doc.Records.Count != 0 || total != 2 || seq != 1 {
		t.Fatalf("range between the filled hours: %d calls (%d sequential): %s", total, seq, r.raw)
	}
}

func TestLogsRedeliveryLeavesIndexUnchanged(t *testing.T) {
	e := newEnv(t)
	now := e.deps.Store.Now()
	// Two days for certain (more than 24 hours apart), two records in the
	// later day's hour.
	h1 := now.Add(-time.Hour).Truncate(time.Hour).Add(10 * time.Minute)
	first := []time.Time{now.Add(-26 * time.Hour), h1}
	recs := []any{
		gen{ID: "r0", App: e.app, Arrival: first[0].Format(time.RFC3339Nano), Status: 200},
		gen{ID: "r1", App: e.app, Arrival: h1.Format(time.RFC3339Nano), Status: 200},
		gen{ID: "r2", App: e.app, Arrival: h1.Add(time.Second).Format(time.RFC3339Nano), Status: 200},
	}
	e.ingest("again", recs...)
	before := e.indexItems(logs.TypeAccess)
	if len(before) != 2 {
		t.Fatalf("%d index items, want one per day", len(before))
	}
	for i, it := range before {
		day, _ := time.Parse("20060102", it["SK"].(*types.AttributeValueMemberS).Value)
		hours := it["hours"].(*types.AttributeValueMemberNS).Value
		ttl := it["ttl"].(*types.AttributeValueMemberN).Value
		if want := fmt.Sprint(first[i].UTC().Hour()); !slices.Equal(hours, []string{want}) {
			t.Fatalf("day %s: hours %v, want [%s]", day.Format("2006-01-02"), hours, want)
		}
		if want := fmt.Sprint(day.Add(24*time.Hour + logs.Retention).Unix()); ttl != want {
			t.Fatalf("day %s: ttl %s, want the end of the day plus the retention, %s", day.Format("2006-01-02"), ttl, want)
		}
	}
	e.ingest("again", recs...) // redelivered
	if after := e.indexItems(logs.TypeAccess); !reflect.DeepEqual(itemValues(after), itemValues(before)) {
		t.Fatalf("index changed by a redelivery:\n%v\n%v", itemValues(before), itemValues(after))
	}
	r := e.get(url.Values{"from": {now.Add(-48 * time.Hour).Format(time.RFC3339)}, "select": {"request_id"}})
	var got []any
	for _, row := range r.doc.Records.Result {
		got = append(got, row[0])
	}
	if r.status != 200 || !slices.Equal(got, []any{"r0", "r1", "r2"}) {
		t.Fatalf("after a redelivery: %v (%s)", got, r.raw)
	}
}

// itemValues is an item as comparable text.
func itemValues(items []map[string]types.AttributeValue) []string {
	var out []string
	for _, it := range items {
		var parts []string
		for k, v := range it {
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				parts = append(parts, k+"=S:"+v.Value)
			case *types.AttributeValueMemberN:
				parts = append(parts, k+"=N:"+v.Value)
			case *types.AttributeValueMemberNS:
				ns := slices.Sorted(slices.Values(v.Value))
				parts = append(parts, k+"=NS:"+strings.Join(ns, ","))
			default:
				parts = append(parts, fmt.Sprintf("%s=%T", k, v))
			}
		}
		slices.Sort(parts)
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// failingChunks is a client whose BatchWriteItem calls (the chunk writes)
// fail, after the index UpdateItems of the same round have completed: the
// worst case, an index naming hours whose chunks are missing.
func failingChunks(t *testing.T, e *env) *dynamodb.Client {
	var (
		mu      sync.Mutex
		updated = make(chan struct{})
		closed  bool
	)
	inject := middleware.InitializeMiddlewareFunc("test-fail-chunks", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		switch in.Parameters.(type) {
		case *dynamodb.BatchWriteItemInput:
			select {
			case <-updated:
			case <-time.After(5 * time.Second):
				t.Error("no index UpdateItem beside the chunk write")
			}
			return middleware.InitializeOutput{}, middleware.Metadata{}, errors.New("injected chunk write failure")
		case *dynamodb.UpdateItemInput:
			out, md, err := next.HandleInitialize(ctx, in)
			mu.Lock()
			if err == nil && !closed {
				closed = true
				close(updated)
			}
			mu.Unlock()
			return out, md, err
		}
		return next.HandleInitialize(ctx, in)
	})
	return dynamodb.New(e.d.Client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(slices.Clip(o.APIOptions), func(s *middleware.Stack) error {
			return s.Initialize.Add(inject, middleware.Before)
		})
	})
}

func TestLogsChunkWriteFailureFailsTheWrite(t *testing.T) {
	e := newEnv(t)
	now := e.deps.Store.Now()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	broken := wire.New(quiet, failingChunks(t, e), e.d.Table)

	rec := gen{ID: "f0", App: e.app, Arrival: now.Add(-time.Minute).Format(time.RFC3339Nano), Status: 200}
	body := fmt.Sprintf(`{"batch":"fail1","records":[{"app":%q,"arrival":%q,"request_id":"f0","status_code":200}]}`, rec.App, rec.Arrival)
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-fail1", Body: body}}}
	resp, err := aggregatorwire.Handler(broken)(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-fail1" {
		t.Fatalf("a failed chunk write must fail the message: %v %+v", err, resp)
	}
	if len(e.indexItems(logs.TypeAccess)) != 1 {
		t.Fatal("the index update of the failed round should have been written (this test's worst case)")
	}
	// The hour is indexed but holds nothing: one wasted partition Query.
	var r reply
	total, seq, _, _ := e.counted(func() { r = e.get(nil) })
	if r.status != 200 || r.doc.Records.Count != 0 || total != 3 || seq != 2 {
		t.Fatalf("indexed hour without chunks: %d calls (%d sequential): %s", total, seq, r.raw)
	}

	// The redelivery, on a working store, writes the records once.
	resp, err = aggregatorwire.Handler(e.deps)(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %v %+v", err, resp)
	}
	if r = e.get(url.Values{"select": {"request_id"}}); r.status != 200 || r.doc.Records.Count != 1 || r.doc.Records.Result[0][0] != "f0" {
		t.Fatalf("after the redelivery: %s", r.raw)
	}

	// POST custom logs: the failure is the request's (5xx), nothing is kept.
	h := logswire.Handler(broken)
	e2 := *e
	e2.h = h
	one := fmt.Sprintf(`{"created":%q,"stream":"s","message":"m","address":"10.0.0.1","filename":"f","hostname":"h"}`, now.Add(-time.Minute).Format(time.RFC3339))
	if r := e2.call(e.op, "POST", "/v2/applications/"+e.app+"/logs", nil, one); r.status < 500 {
		t.Fatalf("POST with a failed chunk write: %d %s", r.status, r.raw)
	}
	if r := e.get(url.Values{"type": {"custom"}}); r.status != 200 || r.doc.Records.Count != 0 {
		t.Fatalf("custom logs after a failed POST: %s", r.raw)
	}
}
