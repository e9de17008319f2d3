package testutil

import (
	"runtime"
	"time"
)

// PeakGoroutines runs f while a goroutine samples runtime.NumGoroutine,
// and returns the largest count it saw, itself included: whether f, or
// what it waits for, starts goroutines of its own.
func PeakGoroutines(f func()) int {
	stop, peak, started := make(chan struct{}), make(chan int), make(chan struct{})
	go func() {
		m := 0
		close(started)
		for {
			select {
			case <-stop:
				peak <- m
				return
			default:
			}
			m = max(m, runtime.NumGoroutine())
			runtime.Gosched()
		}
	}()
	<-started
	f()
	close(stop)
	return <-peak
}

// SettleGoroutines waits, up to a second, until no more than n goroutines
// are left (goroutines that have signalled their end may still be alive),
// and returns how many there are.
func SettleGoroutines(n int) int {
	for i := 0; i < 1000 && runtime.NumGoroutine() > n; i++ {
		time.Sleep(time.Millisecond)
	}
	return runtime.NumGoroutine()
}
