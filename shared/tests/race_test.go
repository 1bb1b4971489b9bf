//go:build race

package tests_test

// raceEnabled: bzip2 compression is some 40 times slower under the race
// detector, so fixtures that must be compressed are kept small then.
const raceEnabled = true
