//go:build !race

package authz

const raceEnabled = false
