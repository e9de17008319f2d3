package react

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/devicetest"
)

// The device is held to the float64 CPU solver, the reference: these tests
// run in every build and skip when no device is in use. bench/gpu.sh runs
// them on a GPU machine with REACT_TEST_BACKEND=cuda (docs/gpu.md).
//
// Tolerances. The device solves in float64 as the CPU does (the sums, the
// Cholesky factorisation and the triangular solves only run in a different
// order), then rounds W_p to float32 once, as Float32Matrix does: the
// device's W_p is within 1e-6 of the CPU's, relative, in the Frobenius
// norm, well above float32's rounding (6e-8) and far below any effect on
// a prediction. The correction is one SGEMM in float32 on either side,
// without TF32 (cuBLAS's default math mode), so each corrected value is
// within 1e-5 of the float64 product, relative to the sum of the
// magnitudes of its terms. The condition estimates are both lower bounds
// of the 1-norm condition number, so they agree within a small factor (10
// here), not to the digit.

// requireDevice skips the test when no device is in use.
func requireDevice(t *testing.T) Accelerator {
	t.Helper()
	acc := CurrentAccelerator()
	if acc == nil {
		t.Skipf("no device in use (backend %s); bench/gpu.sh runs this on a GPU", CurrentBackend())
	}
	return acc
}

// deviceSolver loads c onto the device in use, or skips the test.
func deviceSolver(t *testing.T, c *Components, opt Options) (*Solver, DeviceSolver) {
	t.Helper()
	acc := requireDevice(t)
	s := mustSolver(t, c, opt)
	ds, err := acc.Load(s)
	if err != nil {
		t.Fatalf("loading onto %s: %v", acc.Name(), err)
	}
	return s, ds
}

func TestDeviceSolveMatchesCPU(t *testing.T) {
	requireDevice(t)
	for _, tc := range []struct {
		name  string
		d     int
		n     []int
		beta  float64
		norm  Normalization
		specs []string
	}{
		{"small sum", 8, []int{40, 30, 50}, 0.1, NormSum, []string{"task0=1", "task0=1,task1=1,task2=1"}},
		{"mean", 48, []int{200, 150, 120}, 1e-3, NormMean, []string{"task1=1", "task0=0.2,task1=0.5,task2=0.3"}},
		{"fewer samples than D", 64, []int{40, 200, 90}, 0.5, NormSum, []string{"task0=1", "task0=0.7,task2=0.3"}},
		{"wide", 256, []int{600, 500, 700}, 0.1, NormSum, []string{"task2=1", "task0=1,task1=2,task2=3"}},
		// The two zoos' widths, on synthetic statistics (n nil): the
		// float64 reference costs seconds on a CPU, so a GPU run only.
		{"D=768", 768, nil, 0.1, NormSum, []string{"task1=1", "task0=0.6,task1=0.4", "task0=1,task1=1,task2=1,task3=1"}},
		{"D=1280", 1280, nil, 0.1, NormSum, []string{"task3=1", "task0=1,task2=3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c *Components
			if tc.n == nil {
				if !largeDeviceTests() {
					t.Skip("D > 256: on a GPU only (REACT_CUDA_EXPECT=gpu, bench/gpu.sh)")
				}
				c = syntheticComponents(tc.d, 4)
			} else {
				c = components(t, tc.beta, tc.norm, threeTasks(17, tc.d, tc.n[0], tc.n[1], tc.n[2])...)
			}
			s, ds := deviceSolver(t, c, Options{Beta: tc.beta, Normalization: tc.norm})
			for _, spec := range tc.specs {
				p := mustPref(t, spec, s.Tasks())
				want := mat.NewDense(tc.d, tc.d, nil)
				cst, err := s.SolveIntoStats(want, p)
				if err != nil {
					t.Fatal(err)
				}
				m, st, err := ds.Solve(p)
				if err != nil {
					t.Fatalf("%s: device: %v", spec, err)
				}
				got := mat.NewDense(tc.d, tc.d, nil)
				for i, v := range hostW(t, m) {
					got.RawMatrix().Data[i] = float64(v)
				}
				assertClose(t, spec+" W_p", got, want, 1e-6)
				checkCond(t, spec, st, cst)
				checkDeviceApply(t, m, got)
			}
		})
	}
}

// checkCond checks the device's report on the condition of C_p against
// the CPU's estimate, a lower bound of κ₁: an upper bound (Bounded) is at
// least that estimate and at most WarnCondition; an estimate is within a
// factor of ten of it.
func checkCond(t *testing.T, spec string, st, cpu SolveStats) {
	t.Helper()
	if st.Bounded {
		if !(st.Cond >= cpu.Cond && st.Cond <= WarnCondition) {
			t.Errorf("%s: device condition bound %.3g, want between the CPU's estimate %.3g and %.3g", spec, st.Cond, cpu.Cond, WarnCondition)
		}
		return
	}
	if r := st.Cond / cpu.Cond; !(r > 0.1 && r < 10) {
		t.Errorf("%s: device condition estimate %.3g, CPU's %.3g", spec, st.Cond, cpu.Cond)
	}
}

// largeDeviceTests reports whether the tests at the zoos' widths run: on
// a real GPU (REACT_CUDA_EXPECT=gpu), where their CPU references cost
// seconds, unless REACT_DEVICE_LARGE=0 (bench/gpu.sh under
// compute-sanitizer); the emulator and CI's CPUs skip them.
func largeDeviceTests() bool {
	return os.Getenv("REACT_CUDA_EXPECT") == "gpu" && os.Getenv("REACT_DEVICE_LARGE") != "0"
}

// hostW returns m's host copy of W_p.
func hostW(t *testing.T, m DeviceMatrix) []float32 {
	t.Helper()
	w, err := m.Host()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// checkDeviceApply corrects batches on the device against the float64
// product with w (W_p as the device rounded it).
func checkDeviceApply(t *testing.T, m DeviceMatrix, w *mat.Dense) {
	t.Helper()
	d := m.D()
	rng := rand.New(rand.NewPCG(uint64(d), 9))
	for _, rows := range []int{1, 5, 130} {
		z := make([]float32, rows*d)
		for i := range z {
			z[i] = float32(rng.NormFloat64())
		}
		got := make([]float32, len(z))
		if err := m.Apply(got, z); err != nil {
			t.Fatal(err)
		}
		for r := range rows {
			for i := range d {
				want, scale := 0.0, 0.0
				for j := range d {
					want += w.At(i, j) * float64(z[r*d+j])
					scale += math.Abs(w.At(i, j) * float64(z[r*d+j]))
				}
				if e := math.Abs(float64(got[r*d+i]) - want); e > 1e-5*scale+1e-30 {
					t.Fatalf("%d rows: row %d [%d] = %v, want %v (error %.3g of %.3g)", rows, r, i, got[r*d+i], want, e, scale)
				}
			}
		}
	}
	if err := m.Apply(make([]float32, d), make([]float32, 2*d)); err == nil {
		t.Error("Apply into a short destination succeeded")
	}
}

func TestDeviceRefusesLikeCPU(t *testing.T) {
	requireDevice(t)
	samples := threeTasks(5, 16, 4, 40, 40) // task0 has N=4 < D=16
	c := components(t, 0, NormSum, samples...)
	s, ds := deviceSolver(t, c, Options{Beta: 0, Normalization: NormSum})
	p := mustPref(t, "task0=1", s.Tasks())
	_, _, err := ds.Solve(p)
	var se *SolveError
	if !errors.As(err, &se) {
		t.Fatalf("device solve of a singular C_p = %v, want a *SolveError", err)
	}
	// Both refuse; the message may differ in whether the factorisation
	// failed or the condition estimate was too large.
	if _, cpuErr := s.Solve(p); !errors.As(cpuErr, new(*SolveError)) {
		t.Errorf("device refused with %q, the CPU with %v", se, cpuErr)
	}
	if _, _, err := ds.Solve(Preference{}); err == nil {
		t.Error("device solve of the empty preference succeeded")
	}
}

// applyError compares dst, z's rows corrected on the device, with the
// float64 product with w (W_p as the device rounded it, row-major), as
// checkDeviceApply does, and returns the first value out of tolerance.
func applyError(dst, z []float32, w []float32, d int) error {
	for r := range len(z) / d {
		for i := range d {
			want, scale := 0.0, 0.0
			for j := range d {
				x := float64(w[i*d+j]) * float64(z[r*d+j])
				want += x
				scale += math.Abs(x)
			}
			if e := math.Abs(float64(dst[r*d+i]) - want); !(e <= 1e-5*scale+1e-30) {
				return fmt.Errorf("row %d [%d] = %v, want %v (error %.3g of %.3g)", r, i, dst[r*d+i], want, e, scale)
			}
		}
	}
	return nil
}

// TestDeviceConcurrent solves and corrects from 16 goroutines at once, on
// host batches and on batches in device memory (from cuMemAlloc and from
// cudaMalloc), while the garbage collector runs without pause and frees
// dropped W_p's from other goroutines: each goroutine's answers must be its
// own preference's. A lost runtime.LockOSThread or context push, a shared
// scratch buffer used outside the device's lock, or a W_p freed while in
// use shows here.
func TestDeviceConcurrent(t *testing.T) {
	acc := requireDevice(t)
	const d, goroutines, rounds, rows = 96, 16, 12, 7
	c := syntheticComponents(d, 4)
	s := mustSolver(t, c, DefaultOptions(c))
	ds, err := acc.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	specs := []string{"task0=1", "task1=1", "task2=1", "task3=1", "task0=1,task1=1",
		"task1=2,task3=1", "task0=1,task1=1,task2=1,task3=1", "task2=3,task0=1"}
	prefs := make([]Preference, len(specs))
	want := make([]*mat.Dense, len(specs))
	for k, spec := range specs {
		prefs[k] = mustPref(t, spec, s.Tasks())
		want[k] = mat.NewDense(d, d, nil)
		if _, err := s.SolveIntoStats(want[k], prefs[k]); err != nil {
			t.Fatal(err)
		}
	}
	// Each goroutine's device batches, allocated here (Alloc may skip).
	type buffers struct{ in, out uintptr }
	bufs := make([]buffers, goroutines)
	for g := range bufs {
		how := devicetest.Allocator(g % 2)
		bufs[g] = buffers{devicetest.Alloc(t, 4*rows*d, how), devicetest.Alloc(t, 4*rows*d, how)}
	}

	stop := make(chan struct{})
	var gc sync.WaitGroup
	gc.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			z := make([]float32, rows*d)
			for i := range z {
				z[i] = float32(rng.NormFloat64())
			}
			got := make([]float32, len(z))
			for r := range rounds {
				k := (g + r) % len(specs)
				m, _, err := ds.Solve(prefs[k])
				if err != nil {
					t.Errorf("goroutine %d, %s: %v", g, specs[k], err)
					return
				}
				host, err := m.Host()
				if err != nil {
					t.Errorf("goroutine %d, %s: %v", g, specs[k], err)
					return
				}
				w := mat.NewDense(d, d, nil)
				for i, v := range host {
					w.RawMatrix().Data[i] = float64(v)
				}
				if e := relErr(w, want[k]); !(e <= 1e-6) {
					t.Errorf("goroutine %d, %s: W_p off the CPU's by %.3g", g, specs[k], e)
					return
				}
				if err := m.Apply(got, z); err != nil {
					t.Errorf("goroutine %d, %s: Apply: %v", g, specs[k], err)
					return
				}
				if err := applyError(got, z, host, d); err != nil {
					t.Errorf("goroutine %d, %s: Apply: %v", g, specs[k], err)
					return
				}
				clear(got)
				b := bufs[g]
				devicetest.Upload(t, b.in, z)
				if err := m.ApplyDevice(b.out, b.in, rows); err != nil {
					t.Errorf("goroutine %d, %s: ApplyDevice: %v", g, specs[k], err)
					return
				}
				devicetest.Download(t, got, b.out)
				if err := applyError(got, z, host, d); err != nil {
					t.Errorf("goroutine %d, %s: ApplyDevice (%s): %v", g, specs[k], devicetest.Allocator(g%2), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	gc.Wait()
}

// TestDeviceApplyAllocatedMemory corrects batches in device memory from
// both allocators (Triton's buffers come from cudaMalloc), against the
// float64 product; a none-like device copy; and refuses addresses that are
// not whole buffers of this device's memory without touching them (a
// kernel that did would be a sticky error of the whole context), after
// which the device still works.
func TestDeviceApplyAllocatedMemory(t *testing.T) {
	acc := requireDevice(t)
	const d, rows = 64, 33
	c := syntheticComponents(d, 3)
	s := mustSolver(t, c, DefaultOptions(c))
	ds, err := acc.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := ds.Solve(mustPref(t, "task0=1,task2=3", s.Tasks()))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 3))
	z := make([]float32, rows*d)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	n := 4 * len(z)
	got := make([]float32, len(z))
	for _, how := range []devicetest.Allocator{devicetest.Driver, devicetest.Runtime} {
		t.Run(how.String(), func(t *testing.T) {
			in, out := devicetest.Alloc(t, n, how), devicetest.Alloc(t, n, how)
			devicetest.Upload(t, in, z)
			devicetest.Fill(t, out, n, 0xFF) // NaN: every value must be written
			if err := m.ApplyDevice(out, in, rows); err != nil {
				t.Fatal(err)
			}
			devicetest.Download(t, got, out)
			if err := applyError(got, z, hostW(t, m), d); err != nil {
				t.Fatal(err)
			}
			clear(got)
			if err := m.ApplyDeviceToHost(got, in, rows); err != nil {
				t.Fatal(err)
			}
			if err := applyError(got, z, hostW(t, m), d); err != nil {
				t.Fatalf("ApplyDeviceToHost: %v", err)
			}
			if err := m.ApplyDeviceToHost(got[:len(got)-1], in, rows); err == nil {
				t.Error("ApplyDeviceToHost into a short destination succeeded")
			}
			raw := make([]byte, n)
			if err := acc.CopyDeviceToHost(raw, in); err != nil {
				t.Fatal(err)
			}
			if v := unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), len(z)); v[0] != z[0] || v[len(z)-1] != z[len(z)-1] {
				t.Errorf("CopyDeviceToHost: %v ... %v, want %v ... %v", v[0], v[len(z)-1], z[0], z[len(z)-1])
			}
			devicetest.Fill(t, out, n, 0xFF)
			if err := acc.CopyDevice(out, in, n); err != nil {
				t.Fatal(err)
			}
			devicetest.Download(t, got, out)
			for i := range got {
				if got[i] != z[i] {
					t.Fatalf("CopyDevice [%d] = %v, want %v", i, got[i], z[i])
				}
			}

			host := uintptr(unsafe.Pointer(&z[0]))
			for _, bad := range []struct {
				name          string
				dst, src      uintptr
				rows          int
				wantSubstring string
			}{
				{"host input", out, host, rows, "input"},
				{"host output", host, in, rows, "output"},
				{"input past its buffer", out, in + 4, rows, "input"},
				{"one row too many", out, in, rows + 1, "input"},
				{"no address", out, 0, rows, "input"},
			} {
				devicetest.Fill(t, out, n, 0xFF)
				err := m.ApplyDevice(bad.dst, bad.src, bad.rows)
				if err == nil || !strings.Contains(err.Error(), bad.wantSubstring) {
					t.Errorf("ApplyDevice with %s = %v, want an error about the %s", bad.name, err, bad.wantSubstring)
				}
				// Refused by the address check, not left to the driver
				// (which on a GPU may fault later, for the whole context).
				if err := acc.CopyDevice(bad.dst, bad.src, 4*bad.rows*d); err == nil || !strings.Contains(err.Error(), bad.wantSubstring+": ") {
					t.Errorf("CopyDevice with %s = %v, want the address check's error about the %s", bad.name, err, bad.wantSubstring)
				}
				if bad.wantSubstring != "input" {
					continue
				}
				// Into host memory: the input is checked as well, and the
				// destination left as it was.
				hostDst := make([]float32, bad.rows*d)
				for i := range hostDst {
					hostDst[i] = float32(math.NaN())
				}
				if err := m.ApplyDeviceToHost(hostDst, bad.src, bad.rows); err == nil || !strings.Contains(err.Error(), "input: ") {
					t.Errorf("ApplyDeviceToHost with %s = %v, want the address check's error about the input", bad.name, err)
				}
				raw := make([]byte, 4*bad.rows*d)
				if err := acc.CopyDeviceToHost(raw, bad.src); err == nil || !strings.Contains(err.Error(), "input: ") {
					t.Errorf("CopyDeviceToHost with %s = %v, want the address check's error about the input", bad.name, err)
				}
				for i, v := range hostDst {
					if !math.IsNaN(float64(v)) {
						t.Fatalf("ApplyDeviceToHost with %s wrote [%d] = %v", bad.name, i, v)
					}
				}
				for i, v := range raw {
					if v != 0 {
						t.Fatalf("CopyDeviceToHost with %s wrote [%d] = %#x", bad.name, i, v)
					}
				}
			}
			// No rows: nothing to check or touch, whatever the addresses
			// (Triton may give no buffer for an empty output).
			if err := m.ApplyDevice(0, 0, 0); err != nil {
				t.Errorf("ApplyDevice of 0 rows: %v", err)
			}
			if err := m.ApplyDeviceToHost(nil, 0, 0); err != nil {
				t.Errorf("ApplyDeviceToHost of 0 rows: %v", err)
			}
			if err := acc.CopyDevice(0, 0, 0); err != nil {
				t.Errorf("CopyDevice of 0 bytes: %v", err)
			}
			if err := acc.CopyDeviceToHost(nil, 0); err != nil {
				t.Errorf("CopyDeviceToHost of 0 bytes: %v", err)
			}
			// A row count whose byte count overflows, or beyond cuBLAS's int:
			// wrapped, 4·(2⁵⁶+1)·64 bytes are 256, one row, which the
			// checks would pass and the SGEMM (its n truncated to a C int)
			// would correct alone, reporting success.
			for _, huge := range []int{1<<56 + 1, 1<<58 + 1, 1<<32 + 1, math.MaxInt32 + 1} {
				devicetest.Fill(t, out, n, 0xFF)
				if err := m.ApplyDevice(out, in, huge); err == nil {
					t.Errorf("ApplyDevice of %d rows succeeded", huge)
				}
				if huge*d == d { // the destination's length wraps to one row's
					if err := m.ApplyDeviceToHost(make([]float32, d), in, huge); err == nil {
						t.Errorf("ApplyDeviceToHost of %d rows into %d values succeeded", huge, d)
					}
				}
			}
			runtime.KeepAlive(z)
			// Nothing was written, and the device still works.
			devicetest.Download(t, got, out)
			for i, v := range got {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("a refused call wrote [%d] = %v", i, v)
				}
			}
			if err := m.ApplyDevice(out, in, rows); err != nil {
				t.Fatalf("after the refusals: %v", err)
			}
		})
	}
}

// TestDeviceRefusesBeyondFloat32: a W_p whose entries leave float32's
// range when rounded on the device is refused as Float32MatrixTo refuses
// it on the host, naming the entry; one just inside the range is not.
func TestDeviceRefusesBeyondFloat32(t *testing.T) {
	acc := requireDevice(t)
	const d = 16
	for _, tc := range []struct {
		scale float64
		ok    bool
	}{{1e30, true}, {1e40, false}} {
		c := syntheticComponents(d, 2)
		c.Beta = 0 // W_orth adds nothing: W_p = scale·S_0 G_0⁻¹
		c.Tasks[0].S.Scale(tc.scale, c.Tasks[0].S)
		s := mustSolver(t, c, Options{Beta: 0, Normalization: NormSum})
		ds, err := acc.Load(s)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = ds.Solve(mustPref(t, "task0=1", s.Tasks()))
		if tc.ok && err != nil {
			t.Errorf("scale %g: %v", tc.scale, err)
		}
		if !tc.ok && (!errors.Is(err, ErrFloat32Range) || !strings.Contains(err.Error(), "entry [")) {
			t.Errorf("scale %g: Solve = %v, want ErrFloat32Range naming the entry", tc.scale, err)
		}
	}
}

// TestDeviceApplyDeviceOverlap: a destination that overlaps the batch in
// device memory is refused, on either side and when they coincide, even
// inside one allocation (where the address checks pass); a destination
// that only touches the batch, before or after it, is not, and gets the
// product.
func TestDeviceApplyDeviceOverlap(t *testing.T) {
	acc := requireDevice(t)
	const d, rows = 32, 3
	c := syntheticComponents(d, 2)
	s := mustSolver(t, c, DefaultOptions(c))
	ds, err := acc.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := ds.Solve(mustPref(t, "task0=1,task1=1", s.Tasks()))
	if err != nil {
		t.Fatal(err)
	}
	w := hostW(t, m)
	rng := rand.New(rand.NewPCG(5, 8))
	z := make([]float32, rows*d)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	n := uintptr(4 * len(z))
	base := devicetest.Alloc(t, int(2*n+8), devicetest.Driver)
	got := make([]float32, len(z))
	for _, tc := range []struct {
		name   string
		dst, z uintptr
		ok     bool
	}{
		{"destination 4 bytes after the batch's start", base + 4, base, false},
		{"destination 4 bytes before the batch's start", base, base + 4, false},
		{"destination ending 4 bytes into the batch", base, base + n - 4, false},
		{"destination the batch", base, base, false},
		{"destination right after the batch", base + n, base, true},
		{"destination right before the batch", base, base + n, true},
	} {
		devicetest.Fill(t, base, int(2*n+8), 0xFF)
		devicetest.Upload(t, tc.z, z)
		err := m.ApplyDevice(tc.dst, tc.z, rows)
		if !tc.ok {
			if err == nil || !strings.Contains(err.Error(), "overlap") {
				t.Errorf("%s: ApplyDevice = %v, want an error about the overlap", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		devicetest.Download(t, got, tc.dst)
		if err := applyError(got, z, w, d); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestDeviceRefusesIllConditioned: a C_p that factorises but whose
// condition estimate exceeds MaxCondition is refused as on the CPU, with
// the finite estimate (a C_p that does not factorise reports +Inf).
func TestDeviceRefusesIllConditioned(t *testing.T) {
	requireDevice(t)
	const d = 12
	c := syntheticComponents(d, 2)
	c.Beta = 0
	// G_0 = diag(1, ..., 1, 1e-15): positive definite, condition 1e15.
	g := mat.NewSymDense(d, nil)
	for i := range d {
		g.SetSym(i, i, 1)
	}
	g.SetSym(d-1, d-1, 1e-15)
	c.Tasks[0].G = g
	s, ds := deviceSolver(t, c, Options{Beta: 0, Normalization: NormSum})
	p := mustPref(t, "task0=1", s.Tasks())
	cst, cpuErr := s.SolveIntoStats(mat.NewDense(d, d, nil), p)
	if !errors.As(cpuErr, new(*SolveError)) {
		t.Fatalf("the CPU solved an ill-conditioned C_p: %v", cpuErr)
	}
	m, st, err := ds.Solve(p)
	var se *SolveError
	if !errors.As(err, &se) || m != nil {
		t.Fatalf("device solve of a C_p of condition 1e15 = %v, %v, want a *SolveError", m, err)
	}
	if math.IsInf(st.Cond, 0) || !(st.Cond > MaxCondition) {
		t.Errorf("device condition estimate %g, want finite and above %g (the CPU's %g)", st.Cond, MaxCondition, cst.Cond)
	}
	if r := st.Cond / cst.Cond; !(r > 0.1 && r < 10) {
		t.Errorf("device condition estimate %.3g, CPU's %.3g", st.Cond, cst.Cond)
	}
	// The other task still solves on the same solver.
	if _, _, err := ds.Solve(mustPref(t, "task1=1", s.Tasks())); err != nil {
		t.Errorf("after the refusal: %v", err)
	}
}

// TestDeviceOneShotSolver: a solver that precomputed no A_t (NewOneShotSolver)
// gets them computed at Load, S'_t + β W_orth_t, and solves as the CPU.
func TestDeviceOneShotSolver(t *testing.T) {
	acc := requireDevice(t)
	const d = 24
	c := components(t, 0.3, NormMean, threeTasks(9, d, 60, 80, 70)...)
	opt := Options{Beta: 0.3, Normalization: NormMean}
	s, err := NewOneShotSolver(c, opt)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := acc.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"task0=1", "task0=0.2,task1=0.5,task2=0.3"} {
		p := mustPref(t, spec, s.Tasks())
		want := mat.NewDense(d, d, nil)
		if _, err := mustSolver(t, c, opt).SolveIntoStats(want, p); err != nil {
			t.Fatal(err)
		}
		m, _, err := ds.Solve(p)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		got := mat.NewDense(d, d, nil)
		for i, v := range hostW(t, m) {
			got.RawMatrix().Data[i] = float64(v)
		}
		assertClose(t, spec+" W_p (one-shot solver)", got, want, 1e-6)
	}
}

// TestDeviceCondBound: the device solver reports the a-priori bound when
// every G_t is shown positive semi-definite and the bound is at most
// WarnCondition, the CPU solver's bound to the bit (each G_t weighed by
// its normalisation's factor), and estimates otherwise: with a G_t that
// is not (then within a factor of ten of the CPU's estimate), and where β
// is so small that the bound exceeds WarnCondition.
func TestDeviceCondBound(t *testing.T) {
	requireDevice(t)
	indefinite := syntheticComponents(32, 2)
	indefinite.Tasks[1].G.SetSym(0, 0, -1) // C_p stays positive definite: G_0's diagonal is above 2
	for _, tc := range []struct {
		name    string
		c       *Components
		beta    float64
		norm    Normalization
		bounded bool
	}{
		{"positive semi-definite", syntheticComponents(32, 2), 0.1, NormSum, true},
		{"mean", syntheticComponents(32, 2), 0.1, NormMean, true},
		{"a G_t indefinite", indefinite, 0.1, NormSum, false},
		{"bound above WarnCondition", syntheticComponents(32, 2), 1e-9, NormSum, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ds := deviceSolver(t, tc.c, Options{Beta: tc.beta, Normalization: tc.norm})
			p := mustPref(t, "task0=1,task1=1", s.Tasks())
			cst, err := s.SolveIntoStats(mat.NewDense(32, 32, nil), p)
			if err != nil {
				t.Fatal(err)
			}
			_, st, err := ds.Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Bounded != tc.bounded {
				t.Fatalf("Bounded = %v, want %v (Cond %.3g)", st.Bounded, tc.bounded, st.Cond)
			}
			if tc.bounded {
				if want := newGramBounds(s).Cond([]float64{1, 1}); st.Cond != want {
					t.Errorf("Cond %.6g, the bound %.6g", st.Cond, want)
				}
			}
			checkCond(t, tc.name, st, cst)
		})
	}
}
