package metrics_test

import (
	"fmt"
	"log"

	"github.com/mergectl/react-triton/evaluate/metrics"
)

func ExampleHypervolume() {
	// Normalised accuracies of two models on two tasks. The union of the
	// rectangles [0,0.9]×[0,0.5] and [0,0.6]×[0,0.8] has area
	// 0.45 + 0.48 − 0.30.
	hv, err := metrics.Hypervolume([][]float64{{0.9, 0.5}, {0.6, 0.8}}, []float64{0, 0})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.2f\n", hv)
	// Output: 0.63
}

func ExampleUniformity() {
	// Shortfalls 0.2 and 0.1 with preference (1/3, 2/3): the weighted
	// shortfalls are equal, so the model follows the preference exactly.
	u, err := metrics.Uniformity([]float64{0.8, 0.9}, []float64{1.0 / 3, 2.0 / 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.3f\n", u)
	// Output: 1.000
}
