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
