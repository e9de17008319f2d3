// Package reacttest holds what the tests of react's packages share and
// cannot define in react's own test files, which packages that import
// react cannot use: valid components built the way a calibration builds
// them.
package reacttest

import (
	"math/rand/v2"
	"testing"

	"github.com/mergectl/react-triton/react"
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
