package control

import (
	"math/rand/v2"
	"testing"

	"github.com/mergectl/react-triton/react"
)

// testComponents returns components over the given tasks at dimension d,
// accumulated from n seeded random feature pairs per task, where each
// task's expert feature is a different linear map of the merged one plus
// noise.
func testComponents(t testing.TB, d, n int, tasks ...string) *react.Components {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	c := &react.Components{D: d, Beta: 0.1, Normalization: react.NormSum,
		Backbone: react.ModelRef{Name: "backbone", Output: "feature"}}
	for _, name := range tasks {
		m := make([]float64, d*d)
		for i := range m {
			m[i] = rng.NormFloat64() / float64(d)
		}
		for i := 0; i < d; i++ {
			m[i*d+i] += 1
		}
		acc := react.NewAccumulator(d)
		mtl := make([]float64, n*d)
		ind := make([]float64, n*d)
		for r := 0; r < n; r++ {
			for i := 0; i < d; i++ {
				mtl[r*d+i] = rng.NormFloat64()
			}
			for i := 0; i < d; i++ {
				v := 0.01 * rng.NormFloat64()
				for j := 0; j < d; j++ {
					v += m[i*d+j] * mtl[r*d+j]
				}
				ind[r*d+i] = v
			}
		}
		if err := acc.AddFloat64(mtl, ind); err != nil {
			t.Fatal(err)
		}
		st, err := acc.Stats(name, react.ModelRef{Name: "expert_" + name, Output: "feature"})
		if err != nil {
			t.Fatal(err)
		}
		c.Tasks = append(c.Tasks, st)
	}
	return c
}
