//go:build !unix

package testenv

import "testing"

// Exclusive is a no-op where flock is not available: tests that race
// clients then share the machine with the others.
func Exclusive(t testing.TB, name string) {}
