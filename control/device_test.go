package control

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"

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
	required := os.Getenv("REACT_TEST_BACKEND") == react.BackendCUDA
	if prev := react.CurrentBackend(); prev != react.BackendCUDA {
		if _, err := react.UseBackend(react.BackendCUDA); err != nil {
			if required {
				t.Fatalf("REACT_TEST_BACKEND=cuda, but the cuda backend cannot be used: %v", err)
			}
			t.Logf("no device: %v", err) // and nothing switched
		} else {
			defer react.UseBackend(prev)
		}
	}
	if required && react.CurrentAccelerator() == nil {
		t.Fatalf("REACT_TEST_BACKEND=cuda, but no device is in use (backend %s)", react.CurrentBackend())
	}

	comps := testComponents(t, 12, 60, tasks3...)
	cache, _ := NewCache(4)
	obs := &countingObserver{}
	p := newTestProfile(t, ProfileSpec{Components: comps, Cache: cache, Default: "cars=1", Observer: obs})
	cpu, err := react.NewSolver(comps, react.DefaultOptions(comps))
	if err != nil {
		t.Fatal(err)
	}
	onDevice := react.CurrentAccelerator() != nil
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
