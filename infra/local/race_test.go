//go:build race

package local_test

// raceEnabled: under the race detector every function runs five to ten
// times slower, so eight writers on one item can outlast a request's
// budget on a loaded machine (racingPatch says what the race pass checks).
const raceEnabled = true
