//go:build !race

package apptests_test

const raceEnabled = false
