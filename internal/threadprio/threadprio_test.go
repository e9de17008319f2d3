//go:build linux

package threadprio_test

import (
	"syscall"
	"testing"

	"github.com/mergectl/react-triton/internal/threadprio"
)

// TestLower: the thread of the goroutine that called Lower runs at its
// former nice plus the levels asked for (19 at most); another thread of
// the process keeps its own.
func TestLower(t *testing.T) {
	before, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Skip("getpriority:", err)
	}
	nice := 20 - before // Getpriority returns 20 - nice
	for _, levels := range []int{3, 40} {
		got := make(chan int, 1)
		go func() {
			threadprio.Lower(levels)
			p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
			if err != nil {
				got <- -100
				return
			}
			got <- 20 - p
		}()
		if g, want := <-got, min(19, nice+levels); g != want {
			t.Errorf("Lower(%d): the thread's nice is %d, want %d", levels, g, want)
		}
	}
	if p, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid()); 20-p != nice {
		t.Errorf("the test's own thread: nice %d, want %d", 20-p, nice)
	}
}
