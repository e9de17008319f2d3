//go:build !linux

// Package threadprio lowers the scheduling priority of one OS thread, the
// one a goroutine is locked to: background work in a server (forming a
// W_p, solving a new preference) gets the CPU that serving leaves.
package threadprio

// Lower does nothing where threads have no priority of their own that Go
// can set.
func Lower(nice int) {}
