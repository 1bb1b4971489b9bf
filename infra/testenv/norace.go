//go:build !race

package testenv

// RaceEnabled: see race.go.
const RaceEnabled = false
