package ddb

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

func getItem(e *env, pk string) error {
	_, err := e.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(testTable), Key: key(pk, "x")})
	return err
}

func TestCounterSequentialVsParallel(t *testing.T) {
	e := newEnv(t)
	e.count.SetDelay(50 * time.Millisecond)

	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, pk := range []string{"a", "b"} {
		wg.Go(func() {
			<-start
			if err := getItem(e, pk); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if err := getItem(e, "c"); err != nil {
		t.Fatal(err)
	}

	if got := e.count.Total(); got != 3 {
		t.Errorf("Total = %d, want 3", got)
	}
	if got := e.count.Sequential(); got != 2 {
		t.Errorf("Sequential = %d, want 2", got)
	}
	if got := e.count.ByOperation(); len(got) != 1 || got["GetItem"] != 3 {
		t.Errorf("ByOperation = %v, want map[GetItem:3]", got)
	}
	calls := e.count.Calls()
	for i, c := range calls {
		if c.Operation != "GetItem" || c.Err != nil || c.Attempts != 1 || c.End.Sub(c.Start) < 50*time.Millisecond {
			t.Errorf("call %d = %+v", i, c)
		}
		if i > 0 && calls[i-1].Start.After(c.Start) {
			t.Errorf("Calls not ordered by Start")
		}
	}

	e.count.Reset()
	if e.count.Total() != 0 || e.count.Sequential() != 0 || len(e.count.Calls()) != 0 {
		t.Errorf("Reset left calls behind")
	}
}

func TestCounterDelayHonoursContext(t *testing.T) {
	e := newEnv(t)
	e.count.SetDelay(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(testTable), Key: key("a", "b")})
	if err == nil {
		t.Fatal("expected a context error")
	}
	calls := e.count.Calls()
	if len(calls) != 1 || calls[0].Err == nil || calls[0].Attempts != 0 {
		t.Fatalf("calls = %+v", calls)
	}
}

// A call the SDK retries is one logical call; Attempts has the attempt count.
func TestCounterCountsRetriedCallOnce(t *testing.T) {
	e := newEnv(t)
	e.srv.EmulateFailure(server.FailureConditionInternalServerError)
	err := getItem(e, "a")
	e.srv.EmulateFailure(server.FailureConditionNone)
	if err == nil {
		t.Fatal("expected the emulated failure")
	}
	calls := e.count.Calls()
	if len(calls) != 1 {
		t.Fatalf("Total = %d, want 1 (retries must not be counted): %+v", len(calls), calls)
	}
	if calls[0].Attempts != 3 || calls[0].Err == nil {
		t.Errorf("call = %+v, want 3 attempts and an error", calls[0])
	}
}

func TestCounterInstalledTwiceCountsOnce(t *testing.T) {
	e := newEnv(t)
	_, err := e.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(testTable), Key: key("a", "b")}, e.count.Option())
	if err != nil {
		t.Fatal(err)
	}
	if got := e.count.Total(); got != 1 {
		t.Errorf("Total = %d, want 1", got)
	}
}

// A stub server returns canned responses carrying consumed capacity (the
// local server's meter is tested in infra/localaws), and records whether
// each request asked for it.
func TestCounterRecordsConsumedCapacity(t *testing.T) {
	var asked []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ ReturnConsumedCapacity string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		asked = append(asked, in.ReturnConsumedCapacity)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		switch r.Header.Get("X-Amz-Target") {
		case "DynamoDB_20120810.GetItem":
			w.Write([]byte(`{"Item":{"pk":{"S":"a"}},"ConsumedCapacity":{"TableName":"t","CapacityUnits":0.5}}`))
		default:
			w.Write([]byte(`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":2,"ReadCapacityUnits":1,"WriteCapacityUnits":1}]}`))
		}
	}))
	defer hs.Close()
	c := NewCounter()
	client, err := NewClient(context.Background(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(hs.URL) }, c.Option())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a", "b"), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: aws.String("t"), Key: key("a", "b")}},
	}}); err != nil {
		t.Fatal(err)
	}
	calls := c.Calls()
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	if calls[0].ConsumedRCU != 0.5 || calls[0].ConsumedWCU != 0 {
		t.Errorf("GetItem capacity = %v/%v, want 0.5/0", calls[0].ConsumedRCU, calls[0].ConsumedWCU)
	}
	if calls[1].ConsumedRCU != 1 || calls[1].ConsumedWCU != 1 {
		t.Errorf("TransactWriteItems capacity = %v/%v, want 1/1", calls[1].ConsumedRCU, calls[1].ConsumedWCU)
	}
	// The GetItem set its own mode; the transaction left it unset and the
	// counter asked for TOTAL.
	if !slices.Equal(asked, []string{"TOTAL", "TOTAL"}) {
		t.Errorf("ReturnConsumedCapacity sent = %q, want TOTAL twice", asked)
	}
	if rcu, wcu := c.Consumed(); rcu != 1.5 || wcu != 1 {
		t.Errorf("Consumed = %v/%v, want 1.5/1", rcu, wcu)
	}
}

func TestCounterOnlyKeepsOneCallersCalls(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, who := range []string{"authorizer", "accounts", "authorizer", ""} {
		if _, err := e.client.GetItem(WithCaller(ctx, who), &dynamodb.GetItemInput{TableName: aws.String(testTable), Key: key("a", who)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.count.Only("authorizer").Total(); got != 2 {
		t.Errorf("authorizer calls = %d, want 2", got)
	}
	if got := e.count.Only("accounts").Total(); got != 1 {
		t.Errorf("accounts calls = %d, want 1", got)
	}
	if got := e.count.Total(); got != 4 {
		t.Errorf("all calls = %d, want 4", got)
	}
}

func TestLongestChain(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(a, b int) Call {
		return Call{Start: t0.Add(time.Duration(a) * time.Millisecond), End: t0.Add(time.Duration(b) * time.Millisecond)}
	}
	cases := []struct {
		name  string
		calls []Call
		want  int
	}{
		{"zero-length at same instant", []Call{at(5, 5), at(5, 5), at(0, 5), at(5, 9)}, 4},
		{"empty", nil, 0},
		{"one", []Call{at(0, 10)}, 1},
		{"all parallel", []Call{at(0, 10), at(1, 11), at(2, 12)}, 1},
		{"chain", []Call{at(0, 10), at(10, 20), at(20, 30)}, 3},
		{"2 parallel then 1", []Call{at(0, 10), at(0, 12), at(13, 20)}, 2},
		{"long call beside a chain", []Call{at(0, 100), at(0, 10), at(11, 20), at(21, 30), at(101, 110)}, 4},
		{"unsorted", []Call{at(21, 30), at(0, 10), at(11, 20)}, 3},
		{"overlap breaks chain", []Call{at(0, 10), at(9, 20), at(19, 30)}, 2},
	}
	for _, tc := range cases {
		c := NewCounter()
		c.calls = tc.calls
		if got := c.Sequential(); got != tc.want {
			t.Errorf("%s: longestChain = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// stubHTTP answers every request in-process with an empty GetItem response,
// so the benchmarks measure the SDK stack and the middleware, not a server.
type stubHTTP struct{}

func (stubHTTP) Do(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/x-amz-json-1.0")
	rec.WriteString(`{}`)
	return rec.Result(), nil
}

func benchClient(b *testing.B, opts ...func(*dynamodb.Options)) *dynamodb.Client {
	opts = append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String("http://127.0.0.1:1")
		o.HTTPClient = stubHTTP{}
	}}, opts...)
	client, err := NewClient(context.Background(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

func benchGet(b *testing.B, client *dynamodb.Client) {
	in := &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a", "b")}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.GetItem(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCounterOverhead compares a GetItem through the full SDK stack
// (stubbed transport) with and without the counting middleware.
func BenchmarkCounterOverhead(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchGet(b, benchClient(b)) })
	b.Run("counted", func(b *testing.B) {
		c := NewCounter()
		client := benchClient(b, c.Option())
		benchGet(b, client)
		b.StopTimer()
		c.Reset()
	})
}

func BenchmarkSequential(b *testing.B) {
	c := NewCounter()
	t0 := time.Now()
	for i := range 1000 {
		st := t0.Add(time.Duration(i%97) * time.Millisecond)
		c.calls = append(c.calls, Call{Start: st, End: st.Add(time.Duration(i%13+1) * time.Millisecond)})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Sequential()
	}
}

// Requests the SDK refuses client-side (input validation) make no round trip
// and are not counted.
func TestCounterSkipsClientSideValidationErrors(t *testing.T) {
	e := newEnv(t)
	if _, err := e.client.GetItem(context.Background(), &dynamodb.GetItemInput{Key: key("a", "b")}); err == nil {
		t.Fatal("GetItem without TableName succeeded")
	}
	if got := e.count.Total(); got != 0 {
		t.Errorf("Total = %d, want 0", got)
	}
}

// The Counter tells reads that may be stale from strongly consistent ones.
func TestCounterMarksEventualReads(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := getItem(e, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(testTable), Key: key("b", "x"), ConsistentRead: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := BatchGetConsistent(ctx, e.client, testTable, []map[string]types.AttributeValue{key("c", "x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := BatchGet(ctx, e.client, testTable, []map[string]types.AttributeValue{key("d", "x")}); err != nil {
		t.Fatal(err)
	}
	calls := e.count.Calls()
	if len(calls) != 4 {
		t.Fatalf("%d calls, want 4", len(calls))
	}
	for i, want := range []bool{true, false, false, true} {
		if calls[i].Eventual != want {
			t.Errorf("call %d (%s): Eventual %v, want %v", i, calls[i].Operation, calls[i].Eventual, want)
		}
	}
	if got := len(e.count.Eventual()); got != 2 {
		t.Errorf("Eventual() = %d calls, want 2", got)
	}
}
