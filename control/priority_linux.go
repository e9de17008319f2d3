package control

import (
	"runtime"
	"syscall"
)

// solveNiceness is how much lower than the rest of the process a solve
// runs, in nice levels: a flood of new preferences gets the CPU that
// serving leaves, not the other way round.
const solveNiceness = 10

// lowerPriority locks the calling goroutine to its OS thread, for good
// (the thread is discarded when the goroutine ends), and lowers the
// thread's scheduling priority by solveNiceness. On Linux a priority set
// for a thread id applies to that thread alone. A failure leaves the
// priority as it was.
func lowerPriority() {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	if prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil {
		// Getpriority returns 20 - nice.
		syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(19, 20-prio+solveNiceness))
	}
}
