package faketriton

import (
	"math"
	"testing"

	"github.com/mergectl/react-triton/react"
)

// TestReferenceAgreesWithSolver cross-checks the two computations of W_p:
// the tests' float64 reference (sums over the samples, Newton's polar
// factor, LU) and package react's (Accumulator, SVD, Cholesky), so that a
// disagreement in the sidecar's tests points at the sidecar.
func TestReferenceAgreesWithSolver(t *testing.T) {
	s := NewScenario(1, 4, "a", "b", "c")
	c, err := s.Components()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		opt     react.Options
		weights []float64
	}{
		{react.Options{Beta: 20, Normalization: react.NormSum}, []float64{0.2, 0.3, 0.5}},
		{react.Options{Beta: 20, Normalization: react.NormSum}, []float64{0, 1, 0}},
		{react.Options{Beta: 0.5, Normalization: react.NormMean}, []float64{0.5, 0, 0.5}},
	}
	for _, tt := range tests {
		sv, err := react.NewSolver(c, tt.opt)
		if err != nil {
			t.Fatal(err)
		}
		p, err := react.NewPreference(s.Tasks, tt.weights)
		if err != nil {
			t.Fatal(err)
		}
		w, err := sv.Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		ref := s.Reference(tt.weights, tt.opt.Beta, tt.opt.Normalization == react.NormMean)
		for i := range ref {
			for j := range ref[i] {
				if d := math.Abs(w.At(i, j) - ref[i][j]); d > 1e-12 {
					t.Fatalf("%+v %v: W[%d][%d] = %v, reference %v", tt.opt, tt.weights, i, j, w.At(i, j), ref[i][j])
				}
			}
		}
	}
}

func TestRoundAndCodec(t *testing.T) {
	tests := []struct {
		dt   string
		in   float64
		want float64
	}{
		{"FP32", 1.0 / 3, float64(float32(1.0 / 3))},
		{"FP16", 1 + 0x1p-11, 1},            // a tie rounds to even
		{"FP16", 1 + 3*0x1p-11, 1 + 0x1p-9}, // a tie rounds to even (up)
		{"FP16", 1 + 0x1p-11 + 0x1p-20, 1 + 0x1p-10},
		{"BF16", 1 + 0x1p-8, 1},            // a tie rounds to even
		{"BF16", 1 + 3*0x1p-8, 1 + 0x1p-6}, // a tie rounds to even (up)
		{"BF16", -(1 + 0x1p-8 + 0x1p-20), -(1 + 0x1p-7)},
	}
	for _, tt := range tests {
		if got := Round(tt.dt, tt.in); got != tt.want {
			t.Errorf("Round(%s, %v) = %v, want %v", tt.dt, tt.in, got, tt.want)
		}
		got, err := Decode(tt.dt, Encode(tt.dt, []float64{tt.in}))
		if err != nil || got[0] != tt.want {
			t.Errorf("Decode(Encode(%s, %v)) = %v, %v; want %v", tt.dt, tt.in, got, err, tt.want)
		}
	}
}
