//go:build race

package authz

// raceEnabled: the property tests run a tenth of their role sets under the
// race detector (propSets).
const raceEnabled = true
