// Package retry is how the service waits between attempts: exponential
// backoff with full jitter, always cut short by the request's context, so
// that no retry loop sleeps past a deadline or a client that went away.
// Do is the retry loop; Delay, Wait and Backoff are its parts, for loops
// that are not one operation retried (a poller backing off between
// receives).
//
// Full jitter (a uniformly random wait between zero and the exponential
// cap) spreads the retries of writers that failed together better than
// equal jitter does, for the same expected wait (AWS Architecture Blog,
// "Exponential Backoff And Jitter").
package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Delay is the wait before retry n (1 for the first retry): uniformly
// random in [0, min(max, base·2^(n-1))]. n below 1 counts as 1.
func Delay(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	if d <= 0 {
		return 0
	}
	return rand.N(d + 1)
}

// Wait waits d, or returns the context's error as soon as it is done.
func Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff waits Delay(n, base, max), cut short by ctx.
func Backoff(ctx context.Context, n int, base, max time.Duration) error {
	return Wait(ctx, Delay(n, base, max))
}

// Policy bounds a retry loop: at most Retries retries after the first
// attempt, retry n (1 for the first) after a full-jitter wait of
// Delay(n, Base, Max). A zero Base retries at once.
type Policy struct {
	Retries   int
	Base, Max time.Duration
}

// Do runs op (attempt 0 first) until it returns nil, returns an error that
// retryable rejects, or has been retried p.Retries times, and returns op's
// last error. Before retry n it waits uniformly at random between zero and
// min(p.Max, p.Base·2^(n-1)) (full jitter). If ctx ends before a retry,
// Do stops and returns ctx's error (errors.Is matches it; op's last error
// is only in the message).
func Do(ctx context.Context, p Policy, retryable func(error) bool, op func(attempt int) error) error {
	for attempt := 0; ; attempt++ {
		err := op(attempt)
		if err == nil || attempt >= p.Retries || !retryable(err) {
			return err
		}
		if werr := Backoff(ctx, attempt+1, p.Base, p.Max); werr != nil {
			return fmt.Errorf("%w (after %d attempts, the last: %v)", werr, attempt+1, err)
		}
	}
}
