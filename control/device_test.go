package control

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	// The cuda backend, in a build with the cuda tag.
	_ "github.com/mergectl/react-triton/react/cudadevice"
	"github.com/mergectl/react-triton/react/devicetest"
)

// TestProfileOnDevice: with the cuda backend (a cuda build on a GPU;
// bench/gpu.sh runs it there), a profile solves its pinned and per-request
// W_p on the device, formed at once (no factored first answer), and
// corrects there, against the same float64 reference as on the CPU.
// Elsewhere it checks that no matrix claims to be on a device.
//
// With REACT_TEST_BACKEND=cuda (bench/gpu.sh, and CI under the emulator)
// the device is required: a GPU backend that cannot be used fails the test
// instead of letting it pass on the CPU.
func TestProfileOnDevice(t *testing.T) {
	onDevice := useCUDA(t)
	comps := testComponents(t, 12, 60, tasks3...)
	cache, _ := NewCache(4)
	obs := &countingObserver{}
	p := newTestProfile(t, ProfileSpec{Components: comps, Cache: cache, Default: "cars=1", Observer: obs})
	cpu, err := react.NewSolver(comps, react.DefaultOptions(comps))
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"cars=1", "cars=2,svhn=1"} {
		c, err := p.Resolve(header(spec))
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.Matrix(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if m.OnDevice() != onDevice {
			t.Fatalf("%s: OnDevice = %v with accelerator %v", spec, m.OnDevice(), react.CurrentAccelerator())
		}
		// A profile's solver proves the condition bound when it loads,
		// on the device as on the CPU, so each matrix carries an upper
		// bound (at least the estimate, a lower bound of the 1-norm
		// condition number, of a solver that did not prove it) where it
		// is at most WarnCondition, as here.
		st, err := cpu.SolveIntoStats(mat.NewDense(comps.D, comps.D, nil), c.Preference)
		if err != nil {
			t.Fatal(err)
		}
		if st.Bounded || !m.CondBounded || !(m.Cond >= st.Cond && m.Cond <= react.WarnCondition) {
			t.Errorf("%s: Cond = %.3g (bounded %v, on the device %v), the CPU solver's estimate %.3g (bounded %v)", spec, m.Cond, m.CondBounded, onDevice, st.Cond, st.Bounded)
		}
		if !onDevice {
			if err := m.ApplyDevice(1, 2, 1); !errors.Is(err, ErrNotOnDevice) {
				t.Errorf("%s: ApplyDevice on the CPU = %v, want ErrNotOnDevice", spec, err)
			}
			if err := m.ApplyDeviceToHost(make([]float32, comps.D), 2, 1); !errors.Is(err, ErrNotOnDevice) {
				t.Errorf("%s: ApplyDeviceToHost on the CPU = %v, want ErrNotOnDevice", spec, err)
			}
			continue
		}
		if !m.Formed() {
			t.Errorf("%s: not formed at once on the device", spec)
		}
		w := map[string]float64{"cars": 1}
		if spec != "cars=1" {
			w = map[string]float64{"cars": 2.0 / 3, "svhn": 1.0 / 3}
		}
		ref := referenceW(t, comps, comps.Beta, w)
		checkApply(t, spec, m, ref)
		checkApplyDevice(t, spec, m, ref)
		// Its host copy, made on first use, is W_p.
		host := m.Matrix()
		if len(host) != comps.D*comps.D {
			t.Fatalf("%s: Matrix() on the device = %d values, want %d", spec, len(host), comps.D*comps.D)
		}
		for i, v := range host {
			if want := ref.RawMatrix().Data[i]; math.Abs(float64(v)-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("%s: Matrix()[%d] = %v, want %v", spec, i, v, want)
			}
		}
	}
	// The default's W_p at the start, then the preference that missed
	// the cache: two solves, on the device as on the CPU.
	if n := obs.solves.Load(); n != 2 {
		t.Errorf("%d solves observed, want 2", n)
	}
}

// useCUDA puts the process on the cuda backend for the rest of the test
// where that backend can be used, and reports whether a device is in use.
// With REACT_TEST_BACKEND=cuda (bench/gpu.sh, and CI under the emulator)
// the device is required: a GPU backend that cannot be used fails the test
// instead of letting it pass on the CPU.
func useCUDA(t *testing.T) bool {
	t.Helper()
	required := os.Getenv("REACT_TEST_BACKEND") == react.BackendCUDA
	if prev := react.CurrentBackend(); prev != react.BackendCUDA {
		if _, err := react.UseBackend(react.BackendCUDA); err != nil {
			if required {
				t.Fatalf("REACT_TEST_BACKEND=cuda, but the cuda backend cannot be used: %v", err)
			}
			t.Logf("no device: %v", err) // and nothing switched
		} else {
			t.Cleanup(func() { react.UseBackend(prev) })
		}
	}
	if required && react.CurrentAccelerator() == nil {
		t.Fatalf("REACT_TEST_BACKEND=cuda, but no device is in use (backend %s)", react.CurrentBackend())
	}
	return react.CurrentAccelerator() != nil
}

// TestProfileOnDeviceSolveShare: on the device a new preference's solve
// (formed at once) goes through the cache's admission and pays its time
// as one on the CPU does: served while time is left, paying the solve's
// time and no formation, and shed for solve_share once it is spent.
// Without a device it is skipped (CI runs it under the emulator).
func TestProfileOnDeviceSolveShare(t *testing.T) {
	if !useCUDA(t) {
		t.Skip("no device")
	}
	cache, clock := newBudgetCache(CacheOptions{SolveShare: 1e-12, SolveShareBurst: time.Hour, MaxEntries: 4})
	p := newTestProfile(t, ProfileSpec{Components: testComponents(t, 6, 40, tasks3...), Cache: cache})
	// A clock that moves a second at every reading: the solve's start and
	// end, one second apart.
	clock.step = time.Second
	m := get(t, p, "cars=1,svhn=3")
	if !m.OnDevice() || !m.Formed() {
		t.Fatalf("on the device %v, formed %v; want both", m.OnDevice(), m.Formed())
	}
	if spent := spentTime(cache); math.Abs(spent-1) > 1e-6 {
		t.Errorf("solvers' time spent %.9f s, want 1 (the solve's, no formation)", spent)
	}
	cache.paid(2 * time.Hour)
	c, err := p.Resolve(header("cars=2,svhn=1"))
	if err != nil {
		t.Fatal(err)
	}
	var oe *OverloadError
	if _, err := p.Matrix(context.Background(), c); !errors.As(err, &oe) || oe.Reason != ShedSolveShare {
		t.Errorf("a new preference on the device with the solvers' time spent: %v, want shed for solve_share", err)
	}
}

// checkApplyDevice corrects a batch in device memory (cudaMalloc'd, as
// Triton's) with m.ApplyDevice, against ref's float64 product.
func checkApplyDevice(t *testing.T, what string, m *Matrix, ref *mat.Dense) {
	t.Helper()
	d, _ := ref.Dims()
	z := []float32{1, 2, 3, 4, 5, 6, -1, 0, 0.5, 0, 0, 2, 7, -3, 0.25, 1, 1, 1, 2, -2, 0, 3, 1, -1}
	rows := len(z) / d
	in := devicetest.Alloc(t, 4*len(z), devicetest.Runtime)
	out := devicetest.Alloc(t, 4*len(z), devicetest.Runtime)
	devicetest.Upload(t, in, z)
	if err := m.ApplyDevice(out, in, rows); err != nil {
		t.Fatalf("%s: ApplyDevice: %v", what, err)
	}
	dst := make([]float32, len(z))
	devicetest.Download(t, dst, out)
	for r := range rows {
		for i := range d {
			want := 0.0
			for j := range d {
				want += ref.At(i, j) * float64(z[r*d+j])
			}
			if diff := float64(dst[r*d+i]) - want; diff > 1e-4 || diff < -1e-4 {
				t.Fatalf("%s: corrected on the device [%d][%d] = %v, want %v", what, r, i, dst[r*d+i], want)
			}
		}
	}
}
