package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkHypervolume measures the exact hypervolume of 100 points on a
// concave 8-D front.
func BenchmarkHypervolume(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, d = 100, 8
	points := make([][]float64, n)
	for i := range points {
		points[i] = make([]float64, d)
		norm := 0.0
		for k := range points[i] {
			points[i][k] = 0.5 + 0.5*rng.Float64()
			norm += points[i][k] * points[i][k]
		}
		for k := range points[i] {
			points[i][k] /= math.Sqrt(norm)
		}
	}
	ref := make([]float64, d)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Hypervolume(points, ref); err != nil {
			b.Fatal(err)
		}
	}
}
