//go:build race

package testenv

// RaceEnabled reports whether the test binary runs under the race
// detector. Tests that drive one goroutine through large volumes (a
// thousand held roles, a thousand tasks, multi-megabyte bodies) skip those
// volumes under it: their code paths run race-enabled on small data, and
// make test runs them in full without it (the Makefile's TEST_NO_RACE_RUN).
const RaceEnabled = true
