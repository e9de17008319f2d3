//go:build cuda

package react

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/internal/cuda"
)

// The GPU benchmarks bench/gpu.sh runs on a GPU machine, beside PyTorch's
// (bench/gpu_torch.py): each reports its wall time per operation (ns/op)
// and the GPU time between two CUDA events around it (gpu-ms/op). They
// skip without a device.

// benchDevice returns the device in use, or skips.
func benchDevice(b *testing.B) *cudaAccelerator {
	b.Helper()
	acc, ok := CurrentAccelerator().(*cudaAccelerator)
	if !ok {
		b.Skipf("no CUDA device in use (backend %s)", CurrentBackend())
	}
	return acc
}

// syntheticComponents are T tasks of dimension d whose values only need
// to be generic: S_t random, W_orth_t a permutation, G_t symmetric and
// strictly diagonally dominant (so positive definite), built in O(T·D²).
func syntheticComponents(d, tasks int) *Components {
	rng := rand.New(rand.NewPCG(uint64(d), uint64(tasks)))
	c := &Components{D: d, Beta: 0.1, Normalization: NormSum}
	for k := range tasks {
		s, w, g := mat.NewDense(d, d, nil), mat.NewDense(d, d, nil), mat.NewSymDense(d, nil)
		perm := rng.Perm(d)
		for i := range d {
			w.Set(i, perm[i], 1)
			for j := range d {
				s.Set(i, j, rng.NormFloat64())
			}
			for j := i + 1; j < d; j++ {
				g.SetSym(i, j, (rng.Float64()-0.5)/float64(d))
			}
			g.SetSym(i, i, 2+rng.Float64())
		}
		c.Tasks = append(c.Tasks, &TaskStats{Name: taskName(k), N: int64(10 * d), S: s, G: g, WOrth: w})
	}
	return c
}

// timed runs f b.N times and reports the GPU time per run between events
// recorded on the device's stream before and after.
func timed(b *testing.B, dev *cuda.Device, f func() error) {
	b.Helper()
	t, err := dev.NewTimer()
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	gpu := 0.0
	b.ResetTimer()
	for b.Loop() {
		if err := dev.Do(t.Start); err != nil {
			b.Fatal(err)
		}
		if err := f(); err != nil {
			b.Fatal(err)
		}
		var ms float64
		if err := dev.Do(func() error {
			if err := t.Stop(); err != nil {
				return err
			}
			ms, err = t.Milliseconds()
			return err
		}); err != nil {
			b.Fatal(err)
		}
		gpu += ms
	}
	b.ReportMetric(gpu/float64(b.N), "gpu-ms/op")
}

// deviceBatch copies z to new device memory, and allocates as much for
// the output; both are freed when the test ends.
func deviceBatch(tb testing.TB, dev *cuda.Device, z []float32) (in, out cuda.Ptr) {
	tb.Helper()
	err := dev.Do(func() error {
		var err error
		if in, err = dev.Alloc(f32 * len(z)); err != nil {
			return err
		}
		if out, err = dev.Alloc(f32 * len(z)); err != nil {
			return err
		}
		return dev.Upload32(in, z)
	})
	tb.Cleanup(func() { dev.Free(in); dev.Free(out) })
	if err != nil {
		tb.Fatal(err)
	}
	return in, out
}

// BenchmarkDeviceSolve is W_p for the equal preference over T tasks: the
// weighted sums, the condition estimates, the Cholesky factorisation and
// the solve in float64 on the device, the rounding to float32 (through
// the host) and the upload of W_p.
func BenchmarkDeviceSolve(b *testing.B) {
	acc := benchDevice(b)
	for _, d := range []int{512, 768, 1024} {
		for _, tasks := range []int{2, 8, 20} {
			b.Run(fmt.Sprintf("D=%d/T=%d", d, tasks), func(b *testing.B) {
				c := syntheticComponents(d, tasks)
				s := mustSolver(b, c, DefaultOptions(c))
				ds, err := acc.Load(s)
				if err != nil {
					b.Fatal(err)
				}
				w := make([]float64, tasks)
				for i := range w {
					w[i] = 1
				}
				p, err := NewPreference(s.Tasks(), w)
				if err != nil {
					b.Fatal(err)
				}
				timed(b, acc.dev, func() error {
					_, _, err := ds.Solve(p)
					return err
				})
			})
		}
	}
}

// BenchmarkDeviceApply is the correction of a batch of B rows at D = 768:
// "host" copies the batch to the device and back (the sidecar's case),
// "resident" corrects a batch already in device memory (the Triton
// backend's case for a backbone on the GPU): one SGEMM.
func BenchmarkDeviceApply(b *testing.B) {
	acc := benchDevice(b)
	const d = 768
	c := syntheticComponents(d, 2)
	s := mustSolver(b, c, DefaultOptions(c))
	ds, err := acc.Load(s)
	if err != nil {
		b.Fatal(err)
	}
	dm, _, err := ds.Solve(mustPref(b, "task0=1,task1=1", s.Tasks()))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, rows := range []int{1, 64, 256, 1024} {
		z := make([]float32, rows*d)
		for i := range z {
			z[i] = float32(rng.NormFloat64())
		}
		dst := make([]float32, len(z))
		b.Run(fmt.Sprintf("host/B=%d", rows), func(b *testing.B) {
			timed(b, acc.dev, func() error { return dm.Apply(dst, z) })
		})
		b.Run(fmt.Sprintf("resident/B=%d", rows), func(b *testing.B) {
			in, out := deviceBatch(b, acc.dev, z)
			timed(b, acc.dev, func() error { return dm.ApplyDevice(uintptr(out), uintptr(in), rows) })
		})
	}
}

// TestDeviceApplyResident checks ApplyDevice, on device memory, against
// Apply on host memory.
func TestDeviceApplyResident(t *testing.T) {
	acc, ok := CurrentAccelerator().(*cudaAccelerator)
	if !ok {
		t.Skipf("no CUDA device in use (backend %s)", CurrentBackend())
	}
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
