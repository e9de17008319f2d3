//go:build cuda

package cudadevice

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/cuda"
	"github.com/mergectl/react-triton/react/internal/linalg"
	"github.com/mergectl/react-triton/react/internal/reacttest"
)

// The GPU benchmarks bench/gpu.sh runs on a GPU machine, beside PyTorch's
// (bench/gpu_torch.py), each side measured the same way:
//
//   - wall-p50-ms/op: the median wall time of one call, as a caller sees
//     it (ns/op is the mean);
//   - span-p50-ms/op: the median GPU time between two CUDA events recorded
//     before and after one call. For a solve this is a span, not GPU work:
//     it includes the host round trips inside the call (the condition
//     estimate's, and W_p's rounding to float32 on the host);
//   - gpu-ms/op (the correction of a batch already on the device only):
//     the GPU time of the work alone, 100 corrections queued back to back
//     between two events, divided by 100.
//
// They skip without a device.

// timed runs f b.N times and reports the medians of its wall time and of
// the GPU time between events recorded on the device's stream before and
// after it.
func timed(b *testing.B, dev *cuda.Device, f func() error) {
	b.Helper()
	t, err := dev.NewTimer()
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	var wall, span []float64
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
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
		wall = append(wall, float64(time.Since(start))/1e6)
		span = append(span, ms)
	}
	b.ReportMetric(median(wall), "wall-p50-ms/op")
	b.ReportMetric(median(span), "span-p50-ms/op")
}

// gpuTime returns the GPU time of one of reps calls of enqueue queued back
// to back between two events, in milliseconds: the work alone.
func gpuTime(b *testing.B, dev *cuda.Device, reps int, enqueue func() error) float64 {
	b.Helper()
	t, err := dev.NewTimer()
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	var ms float64
	if err := dev.Do(func() error {
		if err := enqueue(); err != nil { // warm
			return err
		}
		if err := t.Start(); err != nil {
			return err
		}
		for range reps {
			if err := enqueue(); err != nil {
				return err
			}
		}
		if err := t.Stop(); err != nil {
			return err
		}
		ms, err = t.Milliseconds()
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return ms / float64(reps)
}

// median returns the median of v (which it sorts).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if n := len(v); n%2 == 1 {
		return v[n/2]
	} else {
		return (v[n/2-1] + v[n/2]) / 2
	}
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

// cachedComponents is reacttest.Synthetic(d, tasks), made once for all the
// -count runs of a benchmark (seconds at D = 1280, T = 20).
func cachedComponents(d, tasks int) *react.Components {
	benchCache.Lock()
	defer benchCache.Unlock()
	key := [2]int{d, tasks}
	if c, ok := benchCache.m[key]; ok {
		return c
	}
	if benchCache.m == nil {
		benchCache.m = make(map[[2]int]*react.Components)
	}
	c := reacttest.Synthetic(d, tasks)
	benchCache.m[key] = c
	return c
}

var benchCache struct {
	sync.Mutex
	m map[[2]int]*react.Components
}

// BenchmarkDeviceSolve is W_p for the equal preference over T tasks: the
// weighted sums, the condition estimates, the Cholesky factorisation and
// the solve in float64 on the device, the rounding to float32 (through
// the host) and the upload of W_p.
func BenchmarkDeviceSolve(b *testing.B) {
	acc := inUse(b)
	for _, d := range []int{512, 768, 1024, 1280} {
		for _, tasks := range []int{2, 8, 20} {
			b.Run(fmt.Sprintf("D=%d/T=%d", d, tasks), func(b *testing.B) {
				c := cachedComponents(d, tasks)
				s := reacttest.Solver(b, c, react.DefaultOptions(c))
				ds, err := acc.Load(s)
				if err != nil {
					b.Fatal(err)
				}
				w := make([]float64, tasks)
				for i := range w {
					w[i] = 1
				}
				p, err := react.NewPreference(s.Tasks(), w)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := ds.Solve(p); err != nil { // warm
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

// BenchmarkDeviceSolveSteps is BenchmarkDeviceSolve's solve step by step:
// the median wall time of each (the device waited for after each, so
// their sum exceeds one solve's time a little).
func BenchmarkDeviceSolveSteps(b *testing.B) {
	acc := inUse(b)
	for _, d := range []int{768, 1280} {
		b.Run(fmt.Sprintf("D=%d/T=8", d), func(b *testing.B) {
			c := cachedComponents(d, 8)
			s := reacttest.Solver(b, c, react.DefaultOptions(c))
			dsi, err := acc.Load(s)
			if err != nil {
				b.Fatal(err)
			}
			ds := dsi.(*solver)
			p := reacttest.Preference(b, "task0=1,task1=1,task2=1,task3=1,task4=1,task5=1,task6=1,task7=1", s.Tasks())
			steps := map[string][]float64{}
			var order []string
			last := time.Now()
			ds.trace = func(step string) {
				now := time.Now()
				if _, ok := steps[step]; !ok {
					order = append(order, step)
				}
				steps[step] = append(steps[step], float64(now.Sub(last))/1e6)
				last = now
			}
			for b.Loop() {
				last = time.Now()
				if _, _, err := ds.Solve(p); err != nil {
					b.Fatal(err)
				}
			}
			for _, step := range order {
				b.ReportMetric(median(steps[step]), step+"-ms")
			}
		})
	}
}

// BenchmarkDeviceApply is the correction of a batch of B rows at D = 768
// and 1280: "host" copies the batch to the device and back (the sidecar's
// case), "resident" corrects a batch already in device memory (the Triton
// backend's case for a backbone on the GPU): one SGEMM, after checking the
// two addresses.
func BenchmarkDeviceApply(b *testing.B) {
	acc := inUse(b)
	for _, d := range []int{768, 1280} {
		c := reacttest.Synthetic(d, 2)
		s := reacttest.Solver(b, c, react.DefaultOptions(c))
		ds, err := acc.Load(s)
		if err != nil {
			b.Fatal(err)
		}
		dm, _, err := ds.Solve(reacttest.Preference(b, "task0=1,task1=1", s.Tasks()))
		if err != nil {
			b.Fatal(err)
		}
		m := dm.(*matrix)
		rng := rand.New(rand.NewPCG(7, 7))
		for _, rows := range []int{1, 64, 256, 1024} {
			z := make([]float32, rows*d)
			for i := range z {
				z[i] = float32(rng.NormFloat64())
			}
			dst := make([]float32, len(z))
			b.Run(fmt.Sprintf("host/D=%d/B=%d", d, rows), func(b *testing.B) {
				timed(b, acc.dev, func() error { return m.Apply(dst, z) })
			})
			b.Run(fmt.Sprintf("resident/D=%d/B=%d", d, rows), func(b *testing.B) {
				in, out := deviceBatch(b, acc.dev, z)
				gpu := gpuTime(b, acc.dev, 100, func() error { return m.gemm(out, in, rows) })
				timed(b, acc.dev, func() error { return m.ApplyDevice(uintptr(out), uintptr(in), rows) })
				b.ReportMetric(gpu, "gpu-ms/op")
			})
		}
	}
}

// BenchmarkDeviceSolveParts times the parts of one solve alone, each
// waited for, at D = 768 and 1280, T = 8: the factorisation (from a copy
// of C_p), the solve for W_p (DPOTRS with D right-hand sides), one
// one-vector solve of the ‖C_p⁻¹‖₁ estimate (upload, two DTRSVs,
// download), the whole ‖C_p⁻¹‖₁ estimate and the ‖C_p‖₁ estimate: which
// of the two lanes bounds the solve.
func BenchmarkDeviceSolveParts(b *testing.B) {
	acc := inUse(b)
	for _, d := range []int{768, 1280} {
		c := cachedComponents(d, 8)
		s := reacttest.Solver(b, c, react.DefaultOptions(c))
		dsi, err := acc.Load(s)
		if err != nil {
			b.Fatal(err)
		}
		ds := dsi.(*solver)
		p := reacttest.Preference(b, "task0=1,task1=1,task2=1,task3=1,task4=1,task5=1,task6=1,task7=1", s.Tasks())
		if _, _, err := ds.Solve(p); err != nil { // leaves the factor in cp, C_p in cn
			b.Fatal(err)
		}
		x, y, sign := make([]float64, d), make([]float64, d), make([]float64, d)
		for i := range x {
			x[i] = 1 / float64(d)
		}
		dev := acc.dev
		parts := []struct {
			name string
			f    func() error
		}{
			{"copy+potrf", func() error {
				if err := dev.CopyDtoD(ds.cp, ds.cn, f64*d*d); err != nil {
					return err
				}
				return dev.Dpotrf(d, ds.cp, ds.work, ds.lwork, ds.info)
			}},
			{"potrs", func() error { return dev.Dpotrs(d, d, ds.cp, ds.ap, ds.info) }},
			{"one-solve", func() error { return ds.solve(y, x) }},
			{"inverse-norm", func() error { _, err := linalg.EstimateOneNorm(d, ds.solve, x, y, sign); return err }},
			{"norm", func() error { _, err := linalg.EstimateOneNorm(d, ds.symv, x, y, sign); return err }},
		}
		for _, part := range parts {
			b.Run(fmt.Sprintf("D=%d/T=8/%s", d, part.name), func(b *testing.B) {
				var wall []float64
				for b.Loop() {
					start := time.Now()
					if err := dev.Do(part.f); err != nil {
						b.Fatal(err)
					}
					wall = append(wall, float64(time.Since(start))/1e6)
				}
				b.ReportMetric(median(wall), "wall-p50-ms/op")
			})
		}
	}
}
