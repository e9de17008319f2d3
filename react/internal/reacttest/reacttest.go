// Package reacttest holds what the tests of react's packages share and
// cannot define in react's own test files, which packages that import
// react cannot use: valid components built the way a calibration builds
// them, and the components with a statistic missing that everything
// which validates them must refuse without panicking.
package reacttest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/mattest"
)

// Components returns valid components with the given tasks, built from
// random features through a react.Accumulator so that every matrix is
// what a calibration would give: D = d, β = 0.1, the sum normalisation,
// backbone "merged" version 3 output "features", and task i with
// N = 2d + 5i samples and expert "<task>-expert" version 1 output "emb".
// The same seed gives the same components.
func Components(t testing.TB, d int, seed uint64, tasks ...string) *react.Components {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	c := &react.Components{
		D: d, Beta: 0.1, Normalization: react.NormSum,
		Backbone: react.ModelRef{Name: "merged", Version: "3", Output: "features"},
	}
	for i, name := range tasks {
		n := 2*d + 5*i
		mtl := make([]float64, n*d)
		ind := make([]float64, n*d)
		for k := range mtl {
			mtl[k] = rng.NormFloat64()
			ind[k] = 0.5*mtl[k] + rng.NormFloat64()
		}
		acc := react.NewAccumulator(d)
		if err := acc.AddFloat64(mtl, ind); err != nil {
			t.Fatal(err)
		}
		st, err := acc.Stats(name, react.ModelRef{Name: name + "-expert", Version: "1", Output: "emb"})
		if err != nil {
			t.Fatal(err)
		}
		c.Tasks = append(c.Tasks, st)
	}
	return c
}

// Synthetic returns components of T tasks of dimension d whose values
// only need to be generic (mattest.Synthetic), built in O(T·D²) where
// Components' calibration costs O(N·D²): D = d, β = 0.1, the sum
// normalisation, and tasks task0, task1, ... with N_t = 10 D. The same d
// and tasks give the same components, those of react's own tests.
func Synthetic(d, tasks int) *react.Components {
	c := &react.Components{D: d, Beta: 0.1, Normalization: react.NormSum}
	for k, st := range mattest.Synthetic(d, tasks) {
		c.Tasks = append(c.Tasks, &react.TaskStats{Name: fmt.Sprintf("task%d", k), N: int64(10 * d), S: st.S, G: st.G, WOrth: st.WOrth})
	}
	return c
}

// Solver returns react.NewSolver(c, opt), or fails t.
func Solver(t testing.TB, c *react.Components, opt react.Options) *react.Solver {
	t.Helper()
	s, err := react.NewSolver(c, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Preference returns react.ParsePreference(spec, tasks), or fails t.
func Preference(t testing.TB, spec string, tasks []string) react.Preference {
	t.Helper()
	p, err := react.ParsePreference(spec, tasks)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// NilField is a field of Components(t, d, seed, "a", "b") set to nil, and
// what the error it causes must say. A nil *mat.Dense boxed in mat.Matrix
// is not a nil interface, so these once slipped past Validate's nil
// check.
type NilField struct {
	Name string
	Edit func(c *react.Components)
	Want string
}

// NilFields are every statistic missing, one at a time.
var NilFields = []NilField{
	{"nil task", func(c *react.Components) { c.Tasks[1] = nil }, "task 2: nil statistics"},
	{"nil S", func(c *react.Components) { c.Tasks[0].S = nil }, `task "a": missing S`},
	{"nil G", func(c *react.Components) { c.Tasks[0].G = nil }, `task "a": missing G`},
	{"nil W_orth", func(c *react.Components) { c.Tasks[1].WOrth = nil }, `task "b": missing W_orth`},
}

// Refuses fails t when f, named what, panics, or returns no error or one
// that does not contain want.
func Refuses(t testing.TB, what string, f func() error, want string) {
	t.Helper()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s panicked: %v", what, r)
			}
		}()
		err = f()
	}()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s = %v, want an error containing %q", what, err, want)
	}
}
