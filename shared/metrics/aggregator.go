package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/valyala/fastjson"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/store"
)

// AggregatorStore is what the aggregator writes.
type AggregatorStore interface {
	Now() time.Time
	ApplyMetricStep(ctx context.Context, step store.MetricStep) error
	MetricProgress(ctx context.Context, kind store.MetricDedupKind, id string) (step int, done bool, err error)
}

// AddressSets is the address-set side of the pipeline the aggregator
// drives: the edge's additions to dynamic sets, the expiry sweep, and the
// clean-up of deleted sets.
type AddressSets interface {
	// AddDynamic applies address records to dynamic sets.
	AddDynamic(ctx context.Context, recs []AddressRecord) error
	// Sweep counts and removes expired entries (the outbox sweep sends
	// unsent events). force skips the rate limit (a wake-up is due); ran is false
	// when another sweep holds the lease or the rate limit applied.
	Sweep(ctx context.Context, force bool) (ran bool, err error)
	// Purge removes what is left of a deleted set's partition.
	Purge(ctx context.Context, set string) error
}

// Sender puts messages on the metrics queue.
type Sender interface {
	Send(ctx context.Context, bodies ...string) error
	SendAfter(ctx context.Context, body string, delay time.Duration) error
}

// LogSink stores the log records of ingest messages (shared/logs); the
// batch id makes a redelivered message rewrite the same records.
type LogSink interface {
	IngestLogs(ctx context.Context, msgs []LogMessage) error
}

// LogMessage is one ingest message for the LogSink.
type LogMessage struct{ Batch, Body string }

// Limits of one transaction: DynamoDB takes 100 actions, and an update
// expression of at most 4 KB, which maxAttrs ADD terms stay well inside.
const (
	maxTxItems = ddb.MaxTransactItems
	maxAttrs   = 200
	// maxWakeDelay is SQS' longest message delay.
	maxWakeDelay = 15 * time.Minute
	// sweepEvery is how often an aggregator instance runs the sweep
	// opportunistically, besides wake-ups.
	sweepEvery = 30 * time.Second
)

// Aggregator is the metrics queue's handler: it folds ingest batches and
// address-set events into the stored buckets, applies the edge's address
// records, and runs the expiry sweep when woken or when it is due.
type Aggregator struct {
	st   AggregatorStore
	sets AddressSets
	send Sender
	log  *slog.Logger
	// Logs, when set, also stores each ingest message's log records.
	Logs LogSink

	parsers fastjson.ParserPool
	// shard draws the write shard of an invocation's application chunks
	// (randomShard; tests pin it).
	shard func(n int) int

	mu        sync.Mutex
	lastSweep time.Time
}

// NewAggregator returns the aggregator; sets and send may be nil (no
// address sets wired, no queue to send to).
func NewAggregator(st AggregatorStore, sets AddressSets, send Sender, log *slog.Logger) *Aggregator {
	return &Aggregator{st: st, sets: sets, send: send, log: log, shard: randomShard}
}

// unit is one message's contribution and how it proves it was applied once.
type unit struct {
	msgID   string
	dedup   store.MetricDedup
	updates []store.MetricUpdate
	purge   string // set to purge once folded
}

// Handle is the SQS handler: it reports the messages it could not apply
// as batch item failures, so only they come back.
func (a *Aggregator) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	now := a.st.Now()
	// One shard for the whole invocation: its transactions touch one item
	// per application chunk, as before sharding, and a concurrent
	// invocation most likely another.
	shard := a.shard(AppShards)
	var (
		failed  = map[string]bool{}
		units   []*unit
		seen    = map[string]bool{}
		wakes   []Wake
		wakeIDs []string
		addrs   []AddressRecord
		addrIDs []string
		logMsgs []LogMessage
		logIDs  []string
		skipped int
	)
	p := a.parsers.Get()
	defer a.parsers.Put(p)
	for _, m := range ev.Records {
		f := NewFold(now)
		msg, err := decode(p, m.Body, f.record)
		if err != nil {
			// Kept in the queue until it moves to the DLQ, for a person
			// to look at: no retry can make it valid.
			a.log.ErrorContext(ctx, "metrics message refused", "message_id", m.MessageId, "error", err.Error())
			failed[m.MessageId] = true
			continue
		}
		switch msg.kind {
		case kindWake:
			wakes, wakeIDs = append(wakes, Wake{At: msg.wake}), append(wakeIDs, m.MessageId)
		case kindEvent:
			env := msg.event
			for _, c := range env.Changes {
				cnt := eventCounters[c.Metric]
				f.Count(ScopeSet(env.Set), cnt, c.Time, c.N)
				f.Count(ScopeSetsOf(env.Account), cnt, c.Time, c.N)
			}
			u := &unit{msgID: m.MessageId, dedup: store.MetricDedup{Kind: store.MetricOutbox, ID: env.ID}, updates: toStore(f.Updates(), shard)}
			if env.Purge {
				u.purge = env.Set
			}
			if !seen["e"+env.ID] {
				seen["e"+env.ID] = true
				units = append(units, u)
			}
		case kindIngest:
			id := msg.batch
			if id == "" {
				id = "sqs-" + m.MessageId
			}
			if seen["m"+id] {
				continue // the same batch twice in one delivery: once is enough
			}
			seen["m"+id] = true
			logMsgs, logIDs = append(logMsgs, LogMessage{Batch: id, Body: m.Body}), append(logIDs, m.MessageId)
			skipped += f.Skipped
			if len(f.Addresses) > 0 {
				addrs = append(addrs, f.Addresses...)
				addrIDs = append(addrIDs, m.MessageId)
			}
			if !f.Empty() {
				units = append(units, &unit{msgID: m.MessageId, dedup: store.MetricDedup{Kind: store.MetricMarker, ID: id}, updates: toStore(f.Updates(), shard)})
			}
		}
	}
	if skipped > 0 {
		a.log.WarnContext(ctx, "invalid ingest records skipped", "count", skipped)
	}

	// Log records, metric folds and dynamic addresses touch different
	// items and none waits for another: they run in parallel, so a batch
	// costs the slowest of them rather than their sum. Each reports the
	// messages to retry.
	var (
		g                               errgroup.Group // each reports its failed messages, not an error
		logFailed, foldFailed, addrFail []string
	)
	if a.Logs != nil && len(logMsgs) > 0 {
		g.Go(func() error {
			if err := a.Logs.IngestLogs(ctx, logMsgs); err != nil {
				// Retried: the records are rewritten as they were, the
				// fold is deduped by the batch id.
				a.log.ErrorContext(ctx, "log records not stored", "messages", len(logMsgs), "error", err.Error())
				logFailed = logIDs
			}
			return nil
		})
	}
	g.Go(func() error {
		bad := map[string]bool{}
		for _, u := range a.applyAll(ctx, units) {
			bad[u.msgID] = true
			foldFailed = append(foldFailed, u.msgID)
		}
		for _, u := range units {
			if u.purge != "" && !bad[u.msgID] && a.sets != nil {
				if err := a.sets.Purge(ctx, u.purge); err != nil {
					a.log.WarnContext(ctx, "purge of a deleted set failed; its next event or the sweep retries", "set", u.purge, "error", err.Error())
				}
			}
		}
		return nil
	})
	if len(addrs) > 0 {
		if a.sets == nil {
			a.log.WarnContext(ctx, "address records dropped: no address sets wired", "count", len(addrs))
		} else {
			g.Go(func() error {
				if err := a.sets.AddDynamic(ctx, addrs); err != nil {
					// Re-applying an address is idempotent (a re-add with
					// the same expiry changes nothing), and the fold of the
					// rest is deduped.
					a.log.ErrorContext(ctx, "address records not applied", "error", err.Error())
					addrFail = addrIDs
				}
				return nil
			})
		}
	}
	_ = g.Wait()
	for _, ids := range [][]string{logFailed, foldFailed, addrFail} {
		for _, id := range ids {
			failed[id] = true
		}
	}
	if len(wakes) > 0 {
		for _, id := range a.wake(ctx, wakes, wakeIDs, now) {
			failed[id] = true
		}
	} else {
		a.maybeSweep(ctx, now)
	}

	var resp events.SQSEventResponse
	for _, m := range ev.Records {
		if failed[m.MessageId] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

// wake handles the wake-ups of a batch: those not due yet are sent on
// (SQS delays at most 15 minutes); if any is due, the sweep runs once. It
// returns the messages to retry.
func (a *Aggregator) wake(ctx context.Context, wakes []Wake, msgIDs []string, now time.Time) []string {
	if a.sets == nil {
		return nil
	}
	var failed, due []string
	var earliest time.Time
	for i, w := range wakes {
		if wait := w.At.Sub(now); wait > time.Second {
			if err := a.sendAfter(ctx, EncodeWake(w.At), min(wait, maxWakeDelay)); err != nil {
				a.log.ErrorContext(ctx, "wake-up not sent on", "error", err.Error())
				failed = append(failed, msgIDs[i])
			}
			continue
		}
		if len(due) == 0 || w.At.Before(earliest) {
			earliest = w.At
		}
		due = append(due, msgIDs[i])
	}
	if len(due) == 0 {
		return failed
	}
	ran, err := a.sets.Sweep(ctx, true)
	if err != nil {
		a.log.ErrorContext(ctx, "expiry sweep failed", "error", err.Error())
		return append(failed, due...)
	}
	if !ran {
		// Another sweep is running and may have started before these
		// wake-ups were due: look again shortly (one message for all).
		if err := a.sendAfter(ctx, EncodeWake(earliest), 10*time.Second); err != nil {
			return append(failed, due...)
		}
		return failed
	}
	a.mu.Lock()
	a.lastSweep = now
	a.mu.Unlock()
	return failed
}

func (a *Aggregator) sendAfter(ctx context.Context, body string, d time.Duration) error {
	if a.send == nil {
		return errors.New("no metrics queue to send a wake-up to")
	}
	return a.send.SendAfter(ctx, body, d)
}

// maybeSweep runs the sweep at most every sweepEvery per instance, so that
// expiries are handled even when a wake-up was lost.
func (a *Aggregator) maybeSweep(ctx context.Context, now time.Time) {
	if a.sets == nil {
		return
	}
	a.mu.Lock()
	due := now.Sub(a.lastSweep) >= sweepEvery
	if due {
		a.lastSweep = now
	}
	a.mu.Unlock()
	if !due {
		return
	}
	if _, err := a.sets.Sweep(ctx, false); err != nil {
		a.log.WarnContext(ctx, "expiry sweep failed; the next one retries", "error", err.Error())
	}
}

// toStore converts a fold's updates, writing sharded scopes to shard
// (modulo their shard count).
func toStore(us []Update, shard int) []store.MetricUpdate {
	out := make([]store.MetricUpdate, len(us))
	for i, u := range us {
		attrs := make([]store.MetricAttr, len(u.Attrs))
		for j, a := range u.Attrs {
			attrs[j] = store.MetricAttr{Name: a.Name, Value: a.Value}
		}
		key := store.MetricChunkKey{Scope: u.Key.Scope, Tier: u.Key.Tier, Start: u.Key.Start, Shard: shard % shardsOf(u.Key.Scope)}
		out[i] = store.MetricUpdate{Key: key, Attrs: attrs, Expires: u.Expires}
	}
	return out
}

// fitsOneStep reports whether a unit can be applied in one transaction.
func fitsOneStep(u *unit) bool {
	if len(u.updates)+1 > maxTxItems {
		return false
	}
	for _, up := range u.updates {
		if len(up.Attrs) > maxAttrs {
			return false
		}
	}
	return true
}

// applyAll applies units, packing the small ones into shared transactions;
// it returns the units that could not be applied.
func (a *Aggregator) applyAll(ctx context.Context, units []*unit) []*unit {
	var failed []*unit
	var group []*unit
	merged := map[store.MetricChunkKey]int{} // attrs per chunk in the group
	flush := func() {
		if len(group) > 0 {
			failed = append(failed, a.applyGroup(ctx, group)...)
		}
		group, merged = nil, map[store.MetricChunkKey]int{}
	}
	for _, u := range units {
		if !fitsOneStep(u) {
			if err := a.applySteps(ctx, u, 0); err != nil {
				a.log.ErrorContext(ctx, "metrics unit failed", "message_id", u.msgID, "error", err.Error())
				failed = append(failed, u)
			}
			continue
		}
		keys, fits := len(merged), true
		for _, up := range u.updates {
			n, ok := merged[up.Key]
			if !ok {
				keys++
			}
			if n+len(up.Attrs) > maxAttrs {
				fits = false
			}
		}
		if !fits || len(group)+1+keys > maxTxItems {
			flush()
		}
		group = append(group, u)
		for _, up := range u.updates {
			merged[up.Key] += len(up.Attrs)
		}
	}
	flush()
	return failed
}

// applyGroup applies single-step units in one transaction; duplicates are
// dropped, partially applied units continue step by step, and a group that
// fails for another reason is retried unit by unit so that one bad unit
// does not hold back the others.
func (a *Aggregator) applyGroup(ctx context.Context, group []*unit) []*unit {
	if len(group) == 0 {
		return nil
	}
	step := store.MetricStep{}
	merged := map[store.MetricChunkKey]map[string]int64{}
	var order []store.MetricChunkKey
	expires := map[store.MetricChunkKey]int64{}
	for _, u := range group {
		d := u.dedup
		d.Step, d.Steps = 0, 1
		step.Dedup = append(step.Dedup, d)
		for _, up := range u.updates {
			m := merged[up.Key]
			if m == nil {
				m = map[string]int64{}
				merged[up.Key] = m
				order = append(order, up.Key)
				expires[up.Key] = up.Expires
			}
			for _, at := range up.Attrs {
				m[at.Name] += at.Value
			}
		}
	}
	for _, k := range order {
		step.Updates = append(step.Updates, store.MetricUpdate{Key: k, Attrs: sortedAttrs(merged[k]), Expires: expires[k]})
	}
	err := a.st.ApplyMetricStep(ctx, step)
	if err == nil {
		return nil
	}
	var dup *store.MetricDuplicateError
	if errors.As(err, &dup) {
		var failed []*unit
		drop := map[int]bool{}
		for _, i := range dup.Dedup {
			drop[i] = true
			if ferr := a.resume(ctx, group[i]); ferr != nil {
				failed = append(failed, group[i])
			}
		}
		rest := group[:0:0]
		for i, u := range group {
			if !drop[i] {
				rest = append(rest, u)
			}
		}
		return append(failed, a.applyGroup(ctx, rest)...)
	}
	if ctx.Err() != nil {
		return group // no unit can be applied any more
	}
	if len(group) == 1 {
		a.log.ErrorContext(ctx, "metrics unit failed", "message_id", group[0].msgID, "error", err.Error())
		return group
	}
	var failed []*unit
	for _, u := range group {
		failed = append(failed, a.applyGroup(ctx, []*unit{u})...)
	}
	return failed
}

// resume finishes a unit whose first step was already applied: a
// duplicate is done; one cut off midway (possible only for multi-step
// units) continues from where it stopped.
func (a *Aggregator) resume(ctx context.Context, u *unit) error {
	step, done, err := a.st.MetricProgress(ctx, u.dedup.Kind, u.dedup.ID)
	if err != nil || done {
		return err
	}
	if fitsOneStep(u) && step == 0 {
		return fmt.Errorf("unit %s: dedup condition failed but no progress is recorded", u.dedup.ID)
	}
	return a.applySteps(ctx, u, step)
}

// applySteps applies a unit too large for one transaction in several, in a
// deterministic split, from step `from` on; the dedup item records each
// completed step, so a redelivery resumes instead of adding twice.
func (a *Aggregator) applySteps(ctx context.Context, u *unit, from int) error {
	steps := split(u.updates)
	for k := from; k < len(steps); k++ {
		d := u.dedup
		d.Step, d.Steps = k, len(steps)
		st := store.MetricStep{Dedup: []store.MetricDedup{d}, Updates: steps[k]}
		err := a.st.ApplyMetricStep(ctx, st)
		var dup *store.MetricDuplicateError
		if errors.As(err, &dup) {
			next, perr := a.progressed(ctx, u, k)
			if perr != nil {
				return perr
			}
			if next < 0 {
				return nil
			}
			k = next - 1 // the loop's k++ continues at the recorded step
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// progressed returns the step to continue from after a dedup condition
// failed at step k, or -1 when the unit is complete.
func (a *Aggregator) progressed(ctx context.Context, u *unit, k int) (int, error) {
	step, done, err := a.st.MetricProgress(ctx, u.dedup.Kind, u.dedup.ID)
	if err != nil {
		return 0, err
	}
	if done {
		return -1, nil
	}
	if step <= k {
		return 0, fmt.Errorf("unit %s: step %d refused but only %d steps are recorded", u.dedup.ID, k, step)
	}
	return step, nil
}

// split cuts updates into transactions of at most maxTxItems-1 chunk
// updates (one action is the dedup item's) with at most maxAttrs terms
// each; an item never appears twice in one step.
func split(updates []store.MetricUpdate) [][]store.MetricUpdate {
	var pieces []store.MetricUpdate
	for _, up := range updates {
		for i := 0; i < len(up.Attrs); i += maxAttrs {
			pieces = append(pieces, store.MetricUpdate{Key: up.Key, Attrs: up.Attrs[i:min(i+maxAttrs, len(up.Attrs))], Expires: up.Expires})
		}
	}
	var steps [][]store.MetricUpdate
	for len(pieces) > 0 {
		var step []store.MetricUpdate
		in := map[store.MetricChunkKey]bool{}
		var rest []store.MetricUpdate
		for _, p := range pieces {
			if len(step) < maxTxItems-1 && !in[p.Key] {
				step = append(step, p)
				in[p.Key] = true
			} else {
				rest = append(rest, p)
			}
		}
		steps = append(steps, step)
		pieces = rest
	}
	return steps
}

func sortedAttrs(m map[string]int64) []store.MetricAttr {
	out := make([]store.MetricAttr, 0, len(m))
	for k, v := range m {
		out = append(out, store.MetricAttr{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b store.MetricAttr) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SQSHandler is the Lambda signature of the aggregator.
type SQSHandler = func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)
