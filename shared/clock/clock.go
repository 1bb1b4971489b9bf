// Package clock is the project's one source of the current time. Code that
// needs "now" for what it stores or decides takes a Clock, injected from
// the wiring (wire.Deps.Clock): the store's Now reads it, the families take
// their time from the store, and access decides freshness with it. Tests
// pass a Manual clock and advance it instead of sleeping.
//
// Durations measured for their own sake (a request's time budget, a load
// test's run, a deadline for polling) use the wall clock directly: a
// Manual clock that does not move would never end them.
package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock returns the current time.
type Clock func() time.Time

// System is the wall clock, in UTC.
func System() time.Time { return time.Now().UTC() }

// Manual is a clock that moves only when told. It is safe for concurrent
// use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a Manual clock standing at start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now is the clock's time; m.Now is a Clock.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d and returns the new time.
func (m *Manual) Advance(d time.Duration) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	return m.now
}

// Set puts the clock at t.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = t
}

// Shifted is the wall clock (UTC) moved forward by what Advance added:
// time flows as usual, and a test jumps past a due time or a lease instead
// of sleeping through it. It is safe for concurrent use.
type Shifted struct{ off atomic.Int64 }

// Now is the wall clock plus the shift; s.Now is a Clock.
func (s *Shifted) Now() time.Time { return System().Add(time.Duration(s.off.Load())) }

// Advance moves the clock d further ahead of the wall clock.
func (s *Shifted) Advance(d time.Duration) { s.off.Add(int64(d)) }
