package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/domain"
	"cads/shared/retry"
)

// domain.ErrChanged is the one way the store says a write lost a race: its item
// changed (or went) between the read the write was based on and the write,
// whose condition then refused it. The caller reads again: a request that
// asked for its change on the current state re-applies it (Reapply); one
// that named the state it was based on (a precondition such as If-Match)
// gets the race as its answer.
//

// reapplyPolicy bounds Reapply. A lost race here is never contention
// without progress: some other writer's change landed. The window in
// which a writer can lose is its own attempt (the read and the
// conditional write), so after a loss it waits a uniformly random time
// up to one attempt's length (or Base, if longer) and tries again, with
// no exponential growth: waiting longer only lets writers that arrived
// later go first, and the writer that lost most often then waits longest.
// A simulation of eight writers patching one item four times each (read
// and write each one round trip) put the slowest request's time at about
// 0.7 of what waits doubling up to four attempts' lengths gave, at every
// round-trip time from 5 to 200 ms (TestLostRaceWaitsKeepTheTailShort). The load stays bounded: one attempt per attempt's length
// per writer, what a client retrying its own 429s would send. The
// request's deadline, not the count, is what normally ends the budget;
// the count bounds a caller without one.
var reapplyPolicy = retry.Policy{Retries: 60, Base: 5 * time.Millisecond}

// Reapply runs change, a read-modify-write of the current state, again
// whenever it returns domain.ErrChanged, after a full-jitter wait, until it
// returns anything else. When the budget is spent, or the next wait would
// outlast ctx's deadline, the answer is domain.Throttle (429 with
// Retry-After): the request was refused by contention, not by its content.
//
// Only a request without a precondition re-applies: a request with one
// (If-Match) calls its change once and answers domain.ErrChanged as a failed
// precondition.
func Reapply(ctx context.Context, change func(ctx context.Context) error) error {
	return reapply(ctx, reapplyPolicy, change)
}

// ReapplyIf is Reapply for a request without a precondition (pinned
// false). A pinned request (If-Match) names the state its change is based
// on: change runs once, and a lost race is domain.ErrStale, never a re-apply on a
// state the client has not seen.
func ReapplyIf(ctx context.Context, pinned bool, change func(ctx context.Context) error) error {
	if !pinned {
		return Reapply(ctx, change)
	}
	err := change(ctx)
	if errors.Is(err, domain.ErrChanged) {
		return &domain.Error{Code: domain.ErrStale.Code, Message: domain.ErrStale.Message, Err: err}
	}
	return err
}

// Precondition is what a request's If-Match asks of the state its change
// is based on (apigw.Precondition): whether it names one at all, and
// whether the resource whose current entity tag is etag is at it (nil) or
// not (the 412 answer).
type Precondition interface {
	Set() bool
	Check(etag string) error
}

// Edit is the one read-modify-write of a resource under a request's
// precondition (docs/api.md#conditional-requests): read reads the
// resource as it is, pre judges it by its entity tag (tag), and write
// writes the next state on condition that the item is still at the
// version read, returning domain.ErrChanged when it is not; the version check is
// that condition, with no round trip of its own. Without a precondition a
// lost race reads and applies again (Reapply); with one the change applies
// once, and a lost race is domain.ErrStale (ReapplyIf).
func Edit[T any](ctx context.Context, pre Precondition, read func(ctx context.Context) (T, error), tag func(T) string, write func(ctx context.Context, cur T) error) error {
	return ReapplyIf(ctx, pre.Set(), func(ctx context.Context) error {
		cur, err := read(ctx)
		if err != nil {
			return err
		}
		if err := pre.Check(tag(cur)); err != nil {
			return err
		}
		return write(ctx, cur)
	})
}

// Pinned is the versions a write conditions on when it is based on a read
// at version v, under pre (inside Edit): v when pre names a state, which
// the read has passed; none otherwise, the write's usual condition being
// all it needs.
func Pinned(pre Precondition, v int) []int {
	if !pre.Set() {
		return nil
	}
	return []int{v}
}

// lostRaceWait bounds the wait after a lost race whose attempt took took:
// one attempt's length, or p.Base if longer, however often the writer
// lost before (reapplyPolicy says why it does not grow).
func lostRaceWait(p retry.Policy, took time.Duration) time.Duration {
	return max(p.Base, took)
}

// answerReserve is the time a request keeps after its last attempt to
// answer. A function still running at its deadline has failed (Lambda's
// "Task timed out", a 500), so an attempt that contention or throttling
// slowed down is cut off that much earlier and answered as a 429.
// A second: on a busy host (a Lambda sharing its CPU share with the
// runtime's own work, a test machine running many suites) unwinding an
// attempt cut at its deadline and writing the answer took more than half.
const answerReserve = time.Second

func reapply(ctx context.Context, p retry.Policy, change func(ctx context.Context) error) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok {
			actx, cancel = context.WithDeadline(ctx, dl.Add(-min(answerReserve, time.Until(dl)/5)))
		}
		began := time.Now()
		err := change(actx)
		took := time.Since(began)
		cut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil && cut {
			return domain.Throttle(fmt.Errorf("no time left to answer after %d attempts: %w", attempt+1, err))
		}
		if !errors.Is(err, domain.ErrChanged) {
			return err
		}
		if attempt >= p.Retries {
			return domain.Throttle(fmt.Errorf("lost the race %d times: %w", attempt+1, err))
		}
		b := lostRaceWait(p, took)
		d := retry.Delay(1, b, b)
		// The next attempt must fit too: it takes about as long as this one.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d+took+min(answerReserve, time.Until(dl)/5) {
			return domain.Throttle(fmt.Errorf("no time left to re-apply after %d attempts: %w", attempt+1, err))
		}
		if werr := retry.Wait(ctx, d); werr != nil {
			werr = fmt.Errorf("re-apply after %d attempts: %w", attempt+1, werr)
			if errors.Is(werr, context.DeadlineExceeded) {
				return domain.Throttle(werr)
			}
			return werr
		}
	}
}

// bumpVersion is the SET clause that moves an item to its next version,
// for an update that does not read the item first; an item written before
// its kind had a version goes from 0 to 1. Its values: withBump.
const bumpVersion = "version = if_not_exists(version, :vzero) + :vone"

// withBump adds bumpVersion's values to vals.
func withBump(vals map[string]types.AttributeValue) map[string]types.AttributeValue {
	if vals == nil {
		vals = map[string]types.AttributeValue{}
	}
	vals[":vzero"], vals[":vone"] = avNum(0), avNum(1)
	return vals
}

// atVersions extends a write's condition cond (with its values vals) so
// that it holds only at one of versions, the ones a request's If-Match
// names; version 0 is also an item written before its kind had a
// version. No versions leaves cond as it is.
func atVersions(cond string, vals map[string]types.AttributeValue, versions []int) (string, map[string]types.AttributeValue) {
	if len(versions) == 0 {
		return cond, vals
	}
	if vals == nil {
		vals = map[string]types.AttributeValue{}
	}
	alts := make([]string, 0, len(versions))
	for i, v := range versions {
		name := fmt.Sprintf(":ifv%d", i)
		vals[name] = avNum(int64(v))
		alts = append(alts, "version = "+name)
		if v == 0 {
			alts = append(alts, "attribute_not_exists(version)")
		}
	}
	return cond + " AND (" + strings.Join(alts, " OR ") + ")", vals
}
