package react

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples := threeTasks(17, tc.d, tc.n[0], tc.n[1], tc.n[2])
			c := components(t, tc.beta, tc.norm, samples...)
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
				for i, v := range m.Host() {
					got.RawMatrix().Data[i] = float64(v)
				}
				assertClose(t, spec+" W_p", got, want, 1e-6)
				if r := st.Cond / cst.Cond; !(r > 0.1 && r < 10) {
					t.Errorf("%s: device condition estimate %.3g, CPU's %.3g", spec, st.Cond, cst.Cond)
				}
				checkDeviceApply(t, m, got)
			}
		})
	}
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
