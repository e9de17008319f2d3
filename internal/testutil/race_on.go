//go:build race

package testutil

// RaceEnabled reports whether the race detector is on. It makes sync.Pool
// drop items at random and allocates beside the code under test, so
// allocation counts mean nothing under it.
const RaceEnabled = true
