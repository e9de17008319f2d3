//go:build cuda

package cudadevice

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/devicetest"
	"github.com/mergectl/react-triton/react/internal/cuda"
	"github.com/mergectl/react-triton/react/internal/reacttest"
)

// inUse returns the CUDA accelerator in use, or skips.
func inUse(tb testing.TB) *accelerator {
	tb.Helper()
	acc, ok := react.CurrentAccelerator().(*accelerator)
	if !ok {
		tb.Skipf("no CUDA device in use (backend %s)", react.CurrentBackend())
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
	acc := inUse(t)
	const d, solves, rows = 64, 2000, 4
	run := func(solves int) (allocs, reuses int) {
		c := reacttest.Synthetic(d, 3)
		s := reacttest.Solver(t, c, react.DefaultOptions(c))
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
			p, err := react.NewPreference(s.Tasks(), []float64{1 + float64(i%7), 1 + float64(i%5), 1 + float64(i%3)})
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
func (a *accelerator) spareCounts() (allocs, reuses int) {
	_ = a.dev.Do(func() error { allocs, reuses = a.spare.allocs, a.spare.reuses; return nil })
	return allocs, reuses
}

// spareBytes returns the bytes the spare pool keeps.
func (a *accelerator) spareBytes() (n int) {
	_ = a.dev.Do(func() error { n = a.spare.bytes; return nil })
	return n
}

// TestDeviceApplyResident checks ApplyDevice, on device memory, against
// Apply on host memory.
func TestDeviceApplyResident(t *testing.T) {
	acc := inUse(t)
	const d, rows = 64, 9
	c := reacttest.Synthetic(d, 3)
	s := reacttest.Solver(t, c, react.DefaultOptions(c))
	ds, err := acc.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	dm, _, err := ds.Solve(reacttest.Preference(t, "task0=1,task2=3", s.Tasks()))
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

// TestDeviceRefusalsReturnTheBuffer: a solve refused after W_p's buffer was
// taken from the spare pool (a condition estimate above MaxCondition, a
// W_p beyond float32's range) puts it back: refused again and again, the
// same preference allocates no new buffer.
func TestDeviceRefusalsReturnTheBuffer(t *testing.T) {
	acc := inUse(t)
	const d = 19 // a size no other test's W_p has
	illConditioned := func() *react.Components {
		c := reacttest.Synthetic(d, 2)
		g := mat.NewSymDense(d, nil)
		for i := range d {
			g.SetSym(i, i, 1)
		}
		g.SetSym(0, 0, 1e-15)
		c.Tasks[0].G = g
		return c
	}
	beyondFloat32 := func() *react.Components {
		c := reacttest.Synthetic(d, 2)
		c.Tasks[0].S.Scale(1e40, c.Tasks[0].S)
		return c
	}
	for _, tc := range []struct {
		name string
		c    *react.Components
		want func(error) bool
	}{
		{"ill-conditioned", illConditioned(), func(err error) bool { return errors.As(err, new(*react.SolveError)) }},
		{"beyond float32", beyondFloat32(), func(err error) bool { return errors.Is(err, react.ErrFloat32Range) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := reacttest.Solver(t, tc.c, react.Options{Beta: 0, Normalization: react.NormSum})
			ds, err := acc.Load(s)
			if err != nil {
				t.Fatal(err)
			}
			p := reacttest.Preference(t, "task0=1", s.Tasks())
			solve := func() {
				t.Helper()
				if m, _, err := ds.Solve(p); m != nil || !tc.want(err) {
					t.Fatalf("Solve = %v, %v: want refused", m, err)
				}
			}
			solve()
			allocs0, reuses0 := acc.spareCounts()
			for range 5 {
				solve()
			}
			allocs, reuses := acc.spareCounts()
			if allocs != allocs0 || reuses != reuses0+5 {
				t.Errorf("5 refused solves: %d buffers allocated, %d reused; want 0 and 5", allocs-allocs0, reuses-reuses0)
			}
		})
	}
}

// TestSparePool: the pool keeps dropped buffers up to maxSpareBytes, that
// bound included, and frees what does not fit; a buffer taken from it
// leaves its count; and the collector is asked to run once every
// gcEveryBuffers (or gcEveryBytes) of new buffers, not at every buffer
// after that.
func TestSparePool(t *testing.T) {
	acc := inUse(t)
	dev := acc.dev
	var p sparePool // not the accelerator's
	const half = maxSpareBytes / 2
	var bufs []cuda.Ptr
	do := func(f func() error) {
		t.Helper()
		if err := dev.Do(f); err != nil {
			t.Fatal(err)
		}
	}
	defer do(func() error {
		for _, l := range p.free {
			for _, b := range l {
				dev.FreeLocked(b)
			}
		}
		return nil
	})
	do(func() error {
		for range 3 {
			b, err := p.get(dev, half)
			if err != nil {
				return err
			}
			bufs = append(bufs, b)
		}
		p.put(dev, spareBuffer{bufs[0], half})
		p.put(dev, spareBuffer{bufs[1], half})
		return nil
	})
	if p.bytes != maxSpareBytes || len(p.free[half]) != 2 {
		t.Fatalf("two buffers of half the bound put: pool holds %d bytes, %d buffers; want both kept", p.bytes, len(p.free[half]))
	}
	before := devicetest.FreeMemory(t)
	do(func() error { p.put(dev, spareBuffer{bufs[2], half}); return nil })
	after := devicetest.FreeMemory(t)
	if p.bytes != maxSpareBytes || len(p.free[half]) != 2 {
		t.Errorf("a third buffer put into a full pool: pool holds %d bytes, %d buffers", p.bytes, len(p.free[half]))
	}
	// The driver frees in pages of up to 2 MiB.
	if freed := after - before; freed < half-(2<<20) {
		t.Errorf("a buffer of %d bytes that did not fit in the pool: %d bytes freed", half, freed)
	}
	do(func() error {
		b, err := p.get(dev, half)
		if err == nil && b != bufs[0] && b != bufs[1] {
			err = fmt.Errorf("got %#x, not a buffer of the pool", b)
		}
		return err
	})
	if p.bytes != half || len(p.free[half]) != 1 || p.reuses != 1 || p.allocs != 3 {
		t.Errorf("after one taken: pool holds %d bytes, %d buffers; %d allocated, %d reused; want %d, 1, 3, 1",
			p.bytes, len(p.free[half]), p.allocs, p.reuses, half)
	}
	// That buffer is the test's again: freed, as the third was.
	do(func() error {
		dev.FreeLocked(bufs[0])
		dev.FreeLocked(bufs[1])
		p.free[half] = nil
		p.bytes = 0
		return nil
	})

	// The collector: asked after each of the three new buffers of half =
	// gcEveryBytes, then after every gcEveryBuffers new buffers.
	if half != gcEveryBytes || p.gcs != 3 {
		t.Errorf("after 3 new buffers of %d bytes, the collector was asked %d times, want 3 (every %d bytes)", half, p.gcs, gcEveryBytes)
	}
	var small []cuda.Ptr
	do(func() error {
		for range 3*gcEveryBuffers + 5 {
			b, err := p.get(dev, 8)
			if err != nil {
				return err
			}
			small = append(small, b)
		}
		for _, b := range small {
			dev.FreeLocked(b)
		}
		return nil
	})
	if p.gcs != 3+3 {
		t.Errorf("after %d new buffers, the collector was asked %d times, want 3 (every %d buffers)", 3*gcEveryBuffers+5, p.gcs-3, gcEveryBuffers)
	}
}

// TestDeviceScratchGrowthFreesOld: when a host batch outgrows the
// accelerator's scratch, the old scratch is freed, not kept beside the new.
func TestDeviceScratchGrowthFreesOld(t *testing.T) {
	acc := inUse(t)
	const d = 16
	c := reacttest.Synthetic(d, 2)
	s := reacttest.Solver(t, c, react.DefaultOptions(c))
	ds, err := acc.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := ds.Solve(reacttest.Preference(t, "task0=1", s.Tasks()))
	if err != nil {
		t.Fatal(err)
	}
	scratch := func() (n int) {
		_ = acc.dev.Do(func() error { n = acc.cap; return nil })
		return n
	}
	apply := func(values int) {
		t.Helper()
		rows := (values + d - 1) / d
		z := make([]float32, rows*d)
		for i := range z {
			z[i] = float32(i%13) - 6
		}
		dst := make([]float32, len(z))
		if err := m.Apply(dst, z); err != nil {
			t.Fatal(err)
		}
	}
	// Scratch of at least 8 MiB a buffer, so that a leak (16 MiB) shows
	// on a GPU, whose driver rounds each allocation up to a page of up to
	// 2 MiB (4 MiB for the two new buffers).
	apply(max(scratch()+1, 1<<21))
	old := scratch()
	before := settledFreeMemory(t)
	apply(2*old + 1)
	grown := scratch()
	after := devicetest.FreeMemory(t)
	want := 2 * f32 * (grown - old) // the new in and out, less the old
	if used := before - after; used > want+(4<<20) {
		t.Errorf("scratch grown from %d to %d values: %d bytes of device memory used, want %d", old, grown, used, want)
	}
}

// TestDeviceLoadFailureFreesMemory: a Load that runs out of device memory
// part of the way through the tasks fails, and frees what it had
// allocated; the device still works. Under the emulator, in a child whose
// device has 8 MiB (REACT_EMU_MEMORY_MB); elsewhere it skips.
func TestDeviceLoadFailureFreesMemory(t *testing.T) {
	if os.Getenv("REACT_CUDA_EXPECT") != "emulator" {
		t.Skip("under the emulator only (a device of 8 MiB)")
	}
	if os.Getenv("REACT_EMU_MEMORY_MB") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "REACT_EMU_MEMORY_MB=8")
		if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
			t.Fatalf("child with REACT_EMU_MEMORY_MB=8: %v\n%s", err, out)
		}
		return
	}
	acc := inUse(t)
	const d = 128 // 128 KiB a matrix: 40 tasks need 10 MiB
	big := reacttest.Synthetic(d, 40)
	small := reacttest.Synthetic(d, 2)
	// Warm-up: the batch scratch and the libraries' own memory.
	s := reacttest.Solver(t, small, react.DefaultOptions(small))
	if ds, err := acc.Load(s); err != nil {
		t.Fatal(err)
	} else if _, _, err := ds.Solve(reacttest.Preference(t, "task0=1", s.Tasks())); err != nil {
		t.Fatal(err)
	}
	before := settledFreeMemory(t)
	if _, err := acc.Load(reacttest.Solver(t, big, react.DefaultOptions(big))); err == nil {
		t.Fatal("40 tasks of D=128 loaded onto 8 MiB")
	} else {
		t.Logf("as expected: %v", err)
	}
	if after := settledFreeMemory(t); after != before {
		t.Errorf("a failed Load left %d bytes of device memory allocated (free %d -> %d)", before-after, before, after)
	}
	ds, err := acc.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ds.Solve(reacttest.Preference(t, "task1=1", s.Tasks())); err != nil {
		t.Fatalf("after the failed Load: %v", err)
	}
}

// TestDeviceProvesBounds: Load shows every G_t positive semi-definite
// within the condition bound's slack, whatever β, and shows none when a
// G_t is indefinite; react's TestDeviceCondBound holds the solves'
// reports to the CPU's.
func TestDeviceProvesBounds(t *testing.T) {
	acc := inUse(t)
	indefinite := reacttest.Synthetic(32, 2)
	indefinite.Tasks[1].G.SetSym(0, 0, -1)
	// G_1 = diag(1, …, 1, λ): ‖G_1‖₁ = 1, so e_1 = 8 D² ε, and the proof
	// (a Cholesky factorisation of G_1 + e_1/2 I) holds for λ > −e_1/2.
	lowest := func(lambda float64) *react.Components {
		c := reacttest.Synthetic(32, 2)
		g := mat.NewSymDense(32, nil)
		for i := range 32 {
			g.SetSym(i, i, 1)
		}
		g.SetSym(31, 31, lambda)
		c.Tasks[1].G = g
		return c
	}
	const e = 8 * 32 * 32 * 0x1p-52
	for _, tc := range []struct {
		name   string
		c      *react.Components
		beta   float64
		proven bool
	}{
		{"positive semi-definite", reacttest.Synthetic(32, 2), 0.1, true},
		{"a G_t indefinite", indefinite, 0.1, false},
		{"λ_min(G_t) = −e_t/4", lowest(-e / 4), 0.1, true},
		{"λ_min(G_t) = −2 e_t", lowest(-2 * e), 0.1, false},
		{"bound above WarnCondition", reacttest.Synthetic(32, 2), 1e-9, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := acc.Load(reacttest.Solver(t, tc.c, react.Options{Beta: tc.beta, Normalization: react.NormSum}))
			if err != nil {
				t.Fatal(err)
			}
			if got := ds.(*solver).bounds != nil; got != tc.proven {
				t.Errorf("bounds shown = %v, want %v", got, tc.proven)
			}
		})
	}
}
