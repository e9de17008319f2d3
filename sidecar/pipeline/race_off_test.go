//go:build !race

package pipeline

// raceEnabled reports whether the race detector is on. It makes sync.Pool
// drop items at random, so allocation counts are meaningless under it.
const raceEnabled = false
