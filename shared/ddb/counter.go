package ddb

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Call is one logical DynamoDB API call observed by a Counter.
type Call struct {
	Operation string    // API operation name, e.g. "GetItem", "BatchGetItem"
	Start     time.Time // when the call entered the middleware (before any delay)
	End       time.Time // when the call returned (after all retry attempts)
	Err       error     // final error, nil on success
	// Consumed capacity reported by the response, summed over all entries;
	// zero when the server does not report it (minidyn alone does not;
	// the local server adds it, see infra/localaws/capacity.go). When a response reports only
	// CapacityUnits, it is attributed to RCU for read operations (GetItem,
	// Query, Scan, BatchGetItem, TransactGetItems) and to WCU otherwise.
	ConsumedRCU, ConsumedWCU float64
	// Attempts is the number of HTTP attempts the SDK's retryer made for
	// this call (1 without retries; 0 if the call failed before sending).
	Attempts int
	// Caller is the name WithCaller put on the call's context ("" if none).
	Caller string
	// Eventual is set on a read that may miss a write that finished just
	// before it: a GetItem, Query or BatchGetItem without ConsistentRead,
	// or any Query of an index (which has no consistent read). Index names
	// the index such a Query read ("" for the base table).
	Eventual bool
	Index    string
}

type callerKey struct{}

// WithCaller names the function on whose behalf DynamoDB calls made with
// ctx run, so that one Counter shared by several functions (the local
// platform runs them all on one client) can tell their calls apart.
func WithCaller(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, callerKey{}, name)
}

// CallerOf returns the name WithCaller put on ctx, or "".
func CallerOf(ctx context.Context) string {
	s, _ := ctx.Value(callerKey{}).(string)
	return s
}

// Counter records every DynamoDB API call made by the clients it is installed
// on. It is safe for concurrent use.
//
// It asks every call for its consumed capacity (ReturnConsumedCapacity
// TOTAL, unless the caller set a mode): asking costs nothing, and the
// answer is the cost a request is billed for.
//
// The middleware sits in the Initialize step, outside the SDK's retry loop,
// so each logical API call is counted once however many attempts it took
// (Call.Attempts has the attempt count). Calls rejected by the SDK's own
// client-side input validation are not counted: they never reach the
// middleware and make no round trip.
type Counter struct {
	mu    sync.Mutex
	calls []Call
	delay atomic.Int64 // time.Duration
	id    string
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter {
	c := &Counter{}
	c.id = fmt.Sprintf("cads/ddb.Counter/%p", c)
	return c
}

// Option returns a client option that installs the counting middleware, for
// dynamodb.New/NewFromConfig/NewClient or per operation. Installing the same
// Counter twice on one client counts each call once.
func (c *Counter) Option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(slices.Clip(o.APIOptions), c.addMiddleware)
	}
}

func (c *Counter) addMiddleware(stack *middleware.Stack) error {
	if _, ok := stack.Initialize.Get(c.id); ok {
		return nil
	}
	op := stack.ID()
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(c.id,
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
			middleware.InitializeOutput, middleware.Metadata, error,
		) {
			call := Call{Operation: op, Start: time.Now(), Caller: CallerOf(ctx)}
			call.Eventual, call.Index = readConsistency(in.Parameters)
			in.Parameters = askCapacity(in.Parameters)
			var (
				out middleware.InitializeOutput
				md  middleware.Metadata
				err error
			)
			if d := time.Duration(c.delay.Load()); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					err = ctx.Err()
				}
			}
			if err == nil {
				out, md, err = next.HandleInitialize(ctx, in)
			}
			call.End = time.Now()
			call.Err = err
			if ar, ok := retry.GetAttemptResults(md); ok {
				call.Attempts = len(ar.Results)
			}
			if err == nil {
				call.ConsumedRCU, call.ConsumedWCU = consumedUnits(op, out.Result)
			}
			c.mu.Lock()
			c.calls = append(c.calls, call)
			c.mu.Unlock()
			return out, md, err
		}), middleware.After)
}

// SetDelay sets a delay that is added to every call while it is in flight
// (between Call.Start and the request being sent), so that calls made in
// parallel overlap reliably and Sequential() is deterministic in tests. Zero
// (the default, and the only sensible production value) disables it. The
// delay honours context cancellation.
func (c *Counter) SetDelay(d time.Duration) { c.delay.Store(int64(d)) }

// Calls returns a copy of the recorded calls, ordered by Start.
func (c *Counter) Calls() []Call {
	c.mu.Lock()
	calls := slices.Clone(c.calls)
	c.mu.Unlock()
	slices.SortStableFunc(calls, func(a, b Call) int { return a.Start.Compare(b.Start) })
	return calls
}

// Total is the number of calls recorded.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// ByOperation returns the number of calls per operation name.
func (c *Counter) ByOperation() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int)
	for _, call := range c.calls {
		m[call.Operation]++
	}
	return m
}

// Sequential returns the length of the longest chain of recorded calls in
// which each call started at or after the previous one ended: the number of
// sequential round trips, i.e. the latency a request pays in DynamoDB
// latencies. Calls still in flight are not recorded yet and not counted.
func (c *Counter) Sequential() int {
	c.mu.Lock()
	spans := make([]span, len(c.calls))
	if len(c.calls) > 0 {
		base := c.calls[0].Start
		for i, call := range c.calls {
			spans[i] = span{start: call.Start.Sub(base), end: call.End.Sub(base)}
		}
	}
	c.mu.Unlock()
	return longestChain(spans)
}

// Only returns a new Counter holding copies of the calls made on behalf of
// caller (see WithCaller), so that Sequential, Total and friends can be
// read for one function of several sharing a client. It records nothing
// itself.
func (c *Counter) Only(caller string) *Counter {
	out := NewCounter()
	c.mu.Lock()
	for _, call := range c.calls {
		if call.Caller == caller {
			out.calls = append(out.calls, call)
		}
	}
	c.mu.Unlock()
	return out
}

// Without returns a new Counter holding copies of the calls other than
// those of operation (say, a write whose timing depends on the clock
// rather than on the request being measured). It records nothing itself.
func (c *Counter) Without(operation string) *Counter {
	out := NewCounter()
	c.mu.Lock()
	for _, call := range c.calls {
		if call.Operation != operation {
			out.calls = append(out.calls, call)
		}
	}
	c.mu.Unlock()
	return out
}

// Consumed sums the capacity units the recorded calls reported.
func (c *Counter) Consumed() (rcu, wcu float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.calls {
		rcu += call.ConsumedRCU
		wcu += call.ConsumedWCU
	}
	return rcu, wcu
}

// Reset forgets all recorded calls (the delay is kept).
func (c *Counter) Reset() {
	c.mu.Lock()
	c.calls = nil
	c.mu.Unlock()
}

type span struct{ start, end time.Duration }

// longestChain computes the longest chain of spans where each starts at or
// after the previous one's end, in O(n log n).
func longestChain(spans []span) int {
	n := len(spans)
	if n == 0 {
		return 0
	}
	// Order by (start, end), so that a zero-length span precedes a span
	// starting at the same instant that may chain after it.
	slices.SortFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		return cmp.Compare(a.end, b.end)
	})
	byEnd := make([]int, n)
	for i := range byEnd {
		byEnd[i] = i
	}
	// Ties on end are broken by start rank, so a span never becomes a
	// predecessor before it has been processed itself.
	slices.SortFunc(byEnd, func(a, b int) int {
		if spans[a].end != spans[b].end {
			return cmp.Compare(spans[a].end, spans[b].end)
		}
		return a - b
	})
	chain := make([]int, n)
	best, finished, j := 0, 0, 0
	for i := range spans {
		// Every span ending by spans[i].start started no later, so it has
		// been processed already (or is i itself, zero-length).
		for j < n && spans[byEnd[j]].end <= spans[i].start && byEnd[j] < i {
			finished = max(finished, chain[byEnd[j]])
			j++
		}
		chain[i] = finished + 1
		best = max(best, chain[i])
	}
	return best
}

// readConsistency tells whether params is a read that may be stale, and
// which index it reads.
func readConsistency(params any) (eventual bool, index string) {
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return !aws.ToBool(in.ConsistentRead), ""
	case *dynamodb.QueryInput:
		return in.IndexName != nil || !aws.ToBool(in.ConsistentRead), aws.ToString(in.IndexName)
	case *dynamodb.ScanInput:
		return in.IndexName != nil || !aws.ToBool(in.ConsistentRead), aws.ToString(in.IndexName)
	case *dynamodb.BatchGetItemInput:
		for _, ka := range in.RequestItems {
			if !aws.ToBool(ka.ConsistentRead) {
				return true, ""
			}
		}
	}
	return false, ""
}

// Eventual returns the calls that were reads which may be stale
// (Call.Eventual).
func (c *Counter) Eventual() []Call {
	var out []Call
	for _, call := range c.Calls() {
		if call.Eventual {
			out = append(out, call)
		}
	}
	return out
}

func isReadOperation(op string) bool {
	switch op {
	case "GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems":
		return true
	}
	return false
}

// askCapacity returns params with ReturnConsumedCapacity set to TOTAL when
// the caller left it unset. It copies the input rather than writing to the
// caller's struct, which the caller may share.
func askCapacity(params any) any {
	const total = types.ReturnConsumedCapacityTotal
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	case *dynamodb.PutItemInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	case *dynamodb.UpdateItemInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	case *dynamodb.DeleteItemInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	case *dynamodb.QueryInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	case *dynamodb.ScanInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	case *dynamodb.BatchGetItemInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	case *dynamodb.BatchWriteItemInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	case *dynamodb.TransactGetItemsInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	case *dynamodb.TransactWriteItemsInput:
		if in.ReturnConsumedCapacity == "" {
			cp := *in
			cp.ReturnConsumedCapacity = total
			return &cp
		}
	}
	return params
}

// consumedUnits sums the consumed capacity reported in an operation output.
func consumedUnits(op string, result any) (rcu, wcu float64) {
	var ccs []types.ConsumedCapacity
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		ccs = one(out.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		ccs = one(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		ccs = one(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		ccs = one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		ccs = one(out.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		ccs = one(out.ConsumedCapacity)
	case *dynamodb.ExecuteStatementOutput:
		ccs = one(out.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		ccs = out.ConsumedCapacity
	case *dynamodb.BatchWriteItemOutput:
		ccs = out.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		ccs = out.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		ccs = out.ConsumedCapacity
	case *dynamodb.BatchExecuteStatementOutput:
		ccs = out.ConsumedCapacity
	case *dynamodb.ExecuteTransactionOutput:
		ccs = out.ConsumedCapacity
	}
	read := isReadOperation(op)
	for _, cc := range ccs {
		switch {
		case cc.ReadCapacityUnits != nil || cc.WriteCapacityUnits != nil:
			if cc.ReadCapacityUnits != nil {
				rcu += *cc.ReadCapacityUnits
			}
			if cc.WriteCapacityUnits != nil {
				wcu += *cc.WriteCapacityUnits
			}
		case cc.CapacityUnits != nil && read:
			rcu += *cc.CapacityUnits
		case cc.CapacityUnits != nil:
			wcu += *cc.CapacityUnits
		}
	}
	return rcu, wcu
}

func one(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
	if cc == nil {
		return nil
	}
	return []types.ConsumedCapacity{*cc}
}
