package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The wait is bounded by the exponential cap and by max, and it is spread
// over the whole range (full jitter), not only its upper half.
func TestDelayIsFullJitterUnderTheCap(t *testing.T) {
	const base, max = 10 * time.Millisecond, 80 * time.Millisecond
	for n, cap := range map[int]time.Duration{0: base, 1: base, 2: 2 * base, 3: 4 * base, 4: max, 10: max} {
		low := false
		for range 2000 {
			d := Delay(n, base, max)
			if d < 0 || d > cap {
				t.Fatalf("Delay(%d) = %v, outside [0, %v]", n, d, cap)
			}
			if d < cap/2 {
				low = true
			}
		}
		if !low {
			t.Errorf("Delay(%d) never fell below half its cap %v: equal jitter, not full", n, cap)
		}
	}
	if d := Delay(3, 0, max); d != 0 {
		t.Errorf("a zero base waits %v", d)
	}
}

func TestWaitStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Wait(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a done context: %v", err)
	}
	if err := Backoff(ctx, 5, time.Hour, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Backoff on a done context: %v", err)
	}
	if err := Wait(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// Do retries a retryable failure up to Retries times and returns the last
// error; a failure it may not retry, or a success, ends it at once.
func TestDoRetriesOnlyWhatItMay(t *testing.T) {
	busy, bad := errors.New("busy"), errors.New("bad")
	p := Policy{Retries: 3} // zero Base: no wait
	isBusy := func(err error) bool { return errors.Is(err, busy) }
	for _, c := range []struct {
		name  string
		fails []error // op's answers, in order; nil after the list
		calls int
		want  error
	}{
		{"success at once", nil, 1, nil},
		{"success on the second retry", []error{busy, busy}, 3, nil},
		{"retries exhausted", []error{busy, busy, busy, busy, busy}, 4, busy},
		{"not retryable", []error{busy, bad, busy}, 2, bad},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := Do(context.Background(), p, isBusy, func(attempt int) error {
				if attempt != calls {
					t.Fatalf("attempt %d on call %d", attempt, calls)
				}
				calls++
				if calls <= len(c.fails) {
					return c.fails[calls-1]
				}
				return nil
			})
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("Do = %v, want %v", err, c.want)
			}
			if calls != c.calls {
				t.Fatalf("%d calls, want %d", calls, c.calls)
			}
		})
	}
}

// A context that ends stops Do before the next attempt, with the
// context's error.
func TestDoStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	busy := errors.New("busy")
	calls := 0
	err := Do(ctx, Policy{Retries: 5, Base: time.Hour, Max: time.Hour}, func(error) bool { return true }, func(int) error {
		calls++
		cancel()
		return busy
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, busy) || calls != 1 {
		t.Fatalf("Do = %v after %d calls, want context.Canceled after 1", err, calls)
	}
}
