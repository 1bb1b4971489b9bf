package clock

import (
	"testing"
	"time"
)

func TestManualMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	m := NewManual(start)
	var c Clock = m.Now
	if got := c(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	if got := m.Advance(90 * time.Second); !got.Equal(start.Add(90*time.Second)) || !c().Equal(got) {
		t.Fatalf("Advance: %v, Now %v", got, c())
	}
	m.Set(start)
	if !c().Equal(start) {
		t.Fatalf("Set: Now = %v", c())
	}
	if loc := System().Location(); loc != time.UTC {
		t.Fatalf("System is in %v, want UTC", loc)
	}
}

func TestShiftedFlowsAndJumps(t *testing.T) {
	var s Shifted
	before := time.Now()
	s.Advance(time.Hour)
	got := s.Now()
	if got.Before(before.Add(time.Hour)) || got.After(time.Now().Add(time.Hour)) {
		t.Fatalf("Now after Advance(1h) = %v, want the wall clock plus an hour (from %v)", got, before)
	}
	if later := s.Now(); later.Before(got) {
		t.Fatalf("Shifted went back: %v then %v", got, later)
	}
}
