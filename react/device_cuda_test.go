//go:build cuda

package react

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/mergectl/react-triton/react/devicetest"
)

// cudaInUse returns the CUDA accelerator in use, or skips.
func cudaInUse(tb testing.TB) *cudaAccelerator {
	tb.Helper()
	acc, ok := CurrentAccelerator().(*cudaAccelerator)
	if !ok {
		tb.Skipf("no CUDA device in use (backend %s)", CurrentBackend())
	}
	return acc
}

// settledFreeMemory collects garbage until the cleanups that free device
// memory have run, and returns the device's free memory.
func settledFreeMemory(t *testing.T) int {
	t.Helper()
	free := 0
	for range 10 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		free = devicetest.FreeMemory(t)
	}
	return free
}

// TestDeviceNoLeak solves 2,000 new preferences and corrects a batch with
// each, then drops them and the solver: the device's free memory comes
// back to what it was, but for the buffers the spare pool keeps for the
// next W_p's; and the W_p's reuse buffers instead of allocating one each,
// with no help from the test (the pool asks the collector to run).
func TestDeviceNoLeak(t *testing.T) {
	acc := cudaInUse(t)
	const d, solves, rows = 64, 2000, 4
	run := func(solves int) (allocs, reuses int) {
		c := syntheticComponents(d, 3)
		s := mustSolver(t, c, DefaultOptions(c))
		ds, err := acc.Load(s)
		if err != nil {
			t.Fatal(err)
		}
		allocs0, reuses0 := acc.spareCounts()
		rng := rand.New(rand.NewPCG(1, 2))
		z := make([]float32, rows*d)
		for i := range z {
			z[i] = float32(rng.NormFloat64())
		}
		dst := make([]float32, len(z))
		for i := range solves {
			p, err := NewPreference(s.Tasks(), []float64{1 + float64(i%7), 1 + float64(i%5), 1 + float64(i%3)})
			if err != nil {
				t.Fatal(err)
			}
			m, _, err := ds.Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Apply(dst, z); err != nil {
				t.Fatal(err)
			}
		}
		allocs, reuses = acc.spareCounts()
		return allocs - allocs0, reuses - reuses0
	}
	run(10) // cuBLAS's and cuSOLVER's own workspaces, the batch scratch
	before := settledFreeMemory(t)
	allocs, reuses := run(solves)
	after := settledFreeMemory(t)
	kept := acc.spareBytes()
	t.Logf("%d solves: %d W_p buffers allocated, %d reused; free memory %d -> %d bytes (%d kept spare)", solves, allocs, reuses, before, after, kept)
	if allocs+reuses != solves {
		t.Errorf("%d allocated + %d reused W_p buffers for %d solves", allocs, reuses, solves)
	}
	if allocs > solves/2 {
		t.Errorf("%d of %d W_p buffers newly allocated: the spare pool is not reused", allocs, solves)
	}
	// The driver hands out memory in pages of up to 2 MiB.
	if lost := before - after - kept; lost > 4<<20 {
		t.Errorf("%d bytes of device memory not returned after %d solves (free %d -> %d, %d kept spare)", lost, solves, before, after, kept)
	}
}

// spareCounts returns the spare pool's counts of W_p buffers allocated
// and reused.
func (a *cudaAccelerator) spareCounts() (allocs, reuses int) {
	_ = a.dev.Do(func() error { allocs, reuses = a.spare.allocs, a.spare.reuses; return nil })
	return allocs, reuses
}

// spareBytes returns the bytes the spare pool keeps.
func (a *cudaAccelerator) spareBytes() (n int) {
	_ = a.dev.Do(func() error { n = a.spare.bytes; return nil })
	return n
}

// TestDeviceApplyResident checks ApplyDevice, on device memory, against
// Apply on host memory.
func TestDeviceApplyResident(t *testing.T) {
	acc := cudaInUse(t)
	const d, rows = 64, 9
	c := syntheticComponents(d, 3)
	s := mustSolver(t, c, DefaultOptions(c))
	ds, err := acc.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	dm, _, err := ds.Solve(mustPref(t, "task0=1,task2=3", s.Tasks()))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	z := make([]float32, rows*d)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	want := make([]float32, len(z))
	if err := dm.Apply(want, z); err != nil {
		t.Fatal(err)
	}
	in, out := deviceBatch(t, acc.dev, z)
	got := make([]float32, len(z))
	if err := dm.ApplyDevice(uintptr(out), uintptr(in), rows); err != nil {
		t.Fatal(err)
	}
	if err := dm.ApplyDevice(uintptr(in)+4, uintptr(in), rows); err == nil {
		t.Error("ApplyDevice onto an overlapping destination succeeded")
	}
	if err := acc.dev.Do(func() error { return acc.dev.Download32(got, out) }); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("ApplyDevice [%d] = %v, Apply %v", i, got[i], want[i])
		}
	}
	if err := acc.CopyDevice(uintptr(out), uintptr(in), 4*len(z)); err != nil {
		t.Fatal(err)
	}
	if err := acc.dev.Do(func() error { return acc.dev.Download32(got, out) }); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != z[i] {
			t.Fatalf("CopyDevice [%d] = %v, want %v", i, got[i], z[i])
		}
	}
}
