//go:build !cuda

package devicetest

import (
	"errors"
	"testing"
)

// errNoCUDA is why there is no device memory in a build without the cuda
// tag.
var errNoCUDA = errors.New("built without the cuda tag")

// Open reports whether device memory can be had: nil, or why not.
func Open() error { return errNoCUDA }

// Alloc skips tb: there is no device memory in this build.
func Alloc(tb testing.TB, n int, how Allocator) uintptr {
	tb.Helper()
	tb.Skip("devicetest: ", errNoCUDA)
	return 0
}

// Upload skips tb.
func Upload(tb testing.TB, p uintptr, v []float32) { tb.Helper(); tb.Skip("devicetest: ", errNoCUDA) }

// Download skips tb.
func Download(tb testing.TB, v []float32, p uintptr) { tb.Helper(); tb.Skip("devicetest: ", errNoCUDA) }

// Fill skips tb.
func Fill(tb testing.TB, p uintptr, n int, b byte) { tb.Helper(); tb.Skip("devicetest: ", errNoCUDA) }

// FreeMemory skips tb.
func FreeMemory(tb testing.TB) int { tb.Helper(); tb.Skip("devicetest: ", errNoCUDA); return 0 }
