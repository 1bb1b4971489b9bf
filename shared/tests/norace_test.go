//go:build !race

package tests_test

const raceEnabled = false
