package react_test

import (
	"fmt"
	"log"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
)

// Calibrate two tasks from paired features, then solve the correction for a
// preference and apply it.
func Example() {
	const d = 2
	// Task "rot": the expert's features are the merged ones rotated by 90°.
	// Task "scale": the expert's features are the merged ones doubled.
	mtl := []float64{1, 0, 0, 1, 1, 1, 2, -1}
	rot := []float64{0, 1, -1, 0, -1, 1, 1, 2}
	scale := []float64{2, 0, 0, 2, 2, 2, 4, -2}

	c := &react.Components{D: d, Beta: 0, Normalization: react.NormSum}
	for _, task := range []struct {
		name string
		ind  []float64
	}{{"rot", rot}, {"scale", scale}} {
		acc := react.NewAccumulator(d)
		if err := acc.AddFloat64(mtl, task.ind); err != nil {
			log.Fatal(err)
		}
		stats, err := acc.Stats(task.name, react.ModelRef{Name: "expert_" + task.name})
		if err != nil {
			log.Fatal(err)
		}
		c.Tasks = append(c.Tasks, stats)
	}

	solver, err := react.NewSolver(c, react.DefaultOptions(c))
	if err != nil {
		log.Fatal(err)
	}
	p, err := react.ParsePreference("scale=1,rot=3", solver.Tasks())
	if err != nil {
		log.Fatal(err)
	}
	w, err := solver.Solve(p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("preference:", p)
	fmt.Printf("W_p = %.3f\n", mat.Formatted(w, mat.Prefix("      ")))

	// The sidecar's hot path: correct a batch of float32 features.
	z := []float32{1, 0}
	zHat := make([]float32, len(z))
	w32, err := react.Float32Matrix(w)
	if err != nil {
		log.Fatal(err)
	}
	if err := react.Correct(zHat, z, w32, d); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ẑ = %.3f\n", zHat)
	// Output:
	// preference: rot=0.75,scale=0.25
	// W_p = ⎡ 0.500  -0.750⎤
	//       ⎣ 0.750   0.500⎦
	// ẑ = [0.500 0.750]
}

func ExampleParsePreference() {
	tasks := []string{"cars", "dtd", "eurosat"}
	p, err := react.ParsePreference("dtd=1, cars=3", tasks)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.String())
	fmt.Println(p.Weights())

	_, err = react.ParsePreference("cars=0.6,foo=1", tasks)
	fmt.Println(err)
	// Output:
	// cars=0.75,dtd=0.25
	// [0.75 0.25 0]
	// preference "cars=0.6,foo=1": unknown task "foo" (known: cars, dtd, eurosat)
}

func ExampleSolveError() {
	// One sample in two dimensions cannot determine W without β.
	acc := react.NewAccumulator(2)
	if err := acc.AddFloat64([]float64{1, 2}, []float64{2, 1}); err != nil {
		log.Fatal(err)
	}
	stats, err := acc.Stats("tiny", react.ModelRef{})
	if err != nil {
		log.Fatal(err)
	}
	c := &react.Components{D: 2, Beta: 0, Normalization: react.NormSum, Tasks: []*react.TaskStats{stats}}
	solver, err := react.NewSolver(c, react.DefaultOptions(c))
	if err != nil {
		log.Fatal(err)
	}
	_, err = solver.Single("tiny")
	fmt.Println(err)
	// Output:
	// solve: preference "tiny=1": C_p = Σ p_t C_t is not positive definite (Cholesky factorisation failed); β=0 needs N ≥ D linearly independent samples per task (task tiny has N=1, D=2); use β > 0
}
