package schedule

import (
	"context"
	"sync"
	"time"
)

// Clock is the time source of a Scheduler. Tests use a ManualClock so that
// a schedule of one minute runs when the test says, not after a minute.
type Clock interface {
	Now() time.Time
	// At returns a channel that receives once the clock reaches t, and a
	// function that releases it early.
	At(t time.Time) (<-chan time.Time, func())
}

// RealClock is the wall clock.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) At(t time.Time) (<-chan time.Time, func()) {
	tm := time.NewTimer(time.Until(t))
	return tm.C, func() { tm.Stop() }
}

// ManualClock only moves when Advance is called. It is safe for
// concurrent use.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters map[*waiter]bool
	changed chan struct{} // closed (and replaced) whenever waiters change
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewManualClock starts at start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, waiters: map[*waiter]bool{}, changed: make(chan struct{})}
}

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ManualClock) At(t time.Time) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &waiter{at: t, ch: make(chan time.Time, 1)}
	if !t.After(c.now) {
		w.ch <- c.now
		return w.ch, func() {}
	}
	c.waiters[w] = true
	c.notify()
	return w.ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.waiters[w] {
			delete(c.waiters, w)
			c.notify()
		}
	}
}

// Advance moves the clock by d and fires every waiter due by then.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
			delete(c.waiters, w)
		}
	}
	c.notify()
}

// WaitForWaiters blocks until at least n waiters are pending (every
// schedule is armed again), or ctx ends.
func (c *ManualClock) WaitForWaiters(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, changed := len(c.waiters), c.changed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// notify wakes WaitForWaiters; c.mu is held.
func (c *ManualClock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}
