package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cads/shared/domain"
	"cads/shared/retry"
)

func TestReapply(t *testing.T) {
	quick := retry.Policy{Retries: 5, Base: time.Millisecond, Max: 2 * time.Millisecond}
	ctx := context.Background()

	t.Run("lost races are re-applied", func(t *testing.T) {
		calls := 0
		err := reapply(ctx, quick, func(context.Context) error {
			if calls++; calls < 4 {
				return fmt.Errorf("put role: %w", domain.ErrChanged)
			}
			return nil
		})
		if err != nil || calls != 4 {
			t.Fatalf("err %v after %d calls, want success on the 4th", err, calls)
		}
	})
	t.Run("other answers are final", func(t *testing.T) {
		calls := 0
		nf := domain.Errorf(domain.NotFound, "no role")
		err := reapply(ctx, quick, func(context.Context) error { calls++; return nf })
		if !errors.Is(err, nf) || calls != 1 {
			t.Fatalf("err %v after %d calls, want the not-found at once", err, calls)
		}
	})
	t.Run("a spent budget is a 429, not a 409", func(t *testing.T) {
		calls := 0
		err := reapply(ctx, quick, func(context.Context) error { calls++; return domain.ErrChanged })
		if domain.ErrorCode(err) != domain.Throttled || calls != quick.Retries+1 {
			t.Fatalf("err %v (code %s) after %d calls, want throttled after %d", err, domain.ErrorCode(err), calls, quick.Retries+1)
		}
	})
	t.Run("no wait past the deadline", func(t *testing.T) {
		slow := retry.Policy{Retries: 1000, Base: 20 * time.Millisecond, Max: 40 * time.Millisecond}
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := reapply(dctx, slow, func(context.Context) error { return domain.ErrChanged })
		if domain.ErrorCode(err) != domain.Throttled || time.Since(start) > 300*time.Millisecond {
			t.Fatalf("err %v after %v, want throttled before the 300ms deadline", err, time.Since(start))
		}
	})
	t.Run("an attempt slowed past the deadline is a 429 before it", func(t *testing.T) {
		// A function still running at its deadline has failed (a 500):
		// the attempt is cut off early enough to answer.
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		start := time.Now()
		err := reapply(dctx, quick, func(actx context.Context) error {
			<-actx.Done()
			return fmt.Errorf("put role: %w", actx.Err())
		})
		if domain.ErrorCode(err) != domain.Throttled || dctx.Err() != nil {
			t.Fatalf("err %v (code %s) after %v, want throttled before the 1s deadline", err, domain.ErrorCode(err), time.Since(start))
		}
	})
	t.Run("an unhandled lost race is a conflict", func(t *testing.T) {
		if domain.ErrorCode(fmt.Errorf("x: %w", domain.ErrChanged)) != domain.Conflict {
			t.Fatal("domain.ErrChanged is not conflict-coded")
		}
	})
}
