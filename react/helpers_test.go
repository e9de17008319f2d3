package react

import (
	"fmt"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/internal/mattest"
)

// The raw samples and the reference values built from them, independently
// of the code under test, are mattest's, shared with the packages under
// react (react/baseline); these are their names in react's tests.
type sample = mattest.Sample

var (
	randomSample     = mattest.RandomSample
	threeTasks       = mattest.Samples
	names            = mattest.Names
	orthRef          = mattest.OrthRef
	randomOrthogonal = mattest.RandomOrthogonal
	assertOrthogonal = mattest.AssertOrthogonal
	// relErr and assertClose compare matrices by the relative Frobenius error.
	relErr      = mattest.RelErr
	assertClose = mattest.AssertClose
)

// components accumulates the samples into Components (through the code under
// test, the Accumulator; reference values never come from here): for
// react's own tests, the components reacttest.FromSamples gives the
// packages that import react.
func components(t testing.TB, beta float64, norm Normalization, samples ...sample) *Components {
	t.Helper()
	c := &Components{D: samples[0].D, Beta: beta, Normalization: norm}
	for _, s := range samples {
		acc := NewAccumulator(s.D)
		if err := acc.AddFloat64(s.MTL, s.Ind); err != nil {
			t.Fatal(err)
		}
		st, err := acc.Stats(s.Name, ModelRef{Name: "expert_" + s.Name})
		if err != nil {
			t.Fatal(err)
		}
		c.Tasks = append(c.Tasks, st)
	}
	return c
}

// refSystem is mattest.RefSystem with react's normalisation.
func refSystem(t testing.TB, beta float64, norm Normalization, p []float64, samples ...sample) (ap, cp *mat.Dense) {
	t.Helper()
	return mattest.RefSystem(t, beta, norm == NormMean, p, samples...)
}

func mustPref(t testing.TB, spec string, tasks []string) Preference {
	t.Helper()
	p, err := ParsePreference(spec, tasks)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustSolver(t testing.TB, c *Components, opt Options) *Solver {
	t.Helper()
	s, err := NewSolver(c, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func taskName(i int) string { return fmt.Sprintf("task%d", i) }

// syntheticComponents are T tasks of dimension d whose values only need
// to be generic (mattest.Synthetic), named task0, task1, ..., with
// N_t = 10 D: for react's own tests, the components reacttest.Synthetic
// gives the packages that import react.
func syntheticComponents(d, tasks int) *Components {
	c := &Components{D: d, Beta: 0.1, Normalization: NormSum}
	for k, st := range mattest.Synthetic(d, tasks) {
		c.Tasks = append(c.Tasks, &TaskStats{Name: taskName(k), N: int64(10 * d), S: st.S, G: st.G, WOrth: st.WOrth})
	}
	return c
}
