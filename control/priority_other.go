//go:build !linux

package control

// lowerPriority does nothing where threads have no priority of their own
// that Go can set.
func lowerPriority() {}
