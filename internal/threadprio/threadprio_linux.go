// Package threadprio lowers the scheduling priority of one OS thread, the
// one a goroutine is locked to: background work in a server (forming a
// W_p, solving a new preference) gets the CPU that serving leaves.
package threadprio

import (
	"runtime"
	"syscall"
)

// Lower locks the calling goroutine to its OS thread, for good (the
// thread is discarded when the goroutine ends), and lowers the thread's
// scheduling priority by nice levels, to 19 at most. On Linux a priority
// set for a thread id applies to that thread alone. A failure leaves the
// priority as it was.
func Lower(nice int) {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	if prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil {
		// Getpriority returns 20 - nice.
		syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(19, 20-prio+nice))
	}
}
