package sequential

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMeanInversion: inside [0, 1], the bounds are where the mixture
// likelihood ratio of one sample, √(v/(v+τ²)) exp(τ² (x̄ − μ)² / (2v
// (v+τ²))), reaches 1/α (computed from the ratio, not the bounds); a
// bound clipped to 0 or 1 lies inside.
func TestMeanInversion(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	opt := Options{Alpha: 0.05, Tau: 0.05}
	for i := range 200 {
		s := bernoulli(rng, 20+rng.IntN(5000), rng.Float64())
		lo, hi := MeanInterval(s, opt)
		v := max(s.Variance()/s.N, 1/(4*s.N*s.N))
		t2 := opt.Tau * opt.Tau
		lambda := func(mu float64) float64 {
			d := s.Mean() - mu
			return math.Sqrt(v/(v+t2)) * math.Exp(t2*d*d/(2*v*(v+t2)))
		}
		for _, b := range []float64{lo, hi} {
			if b == 0 || b == 1 {
				// Clipped: the sequence reaches past it, so it is inside.
				if l := lambda(b); l*opt.Alpha > 1+1e-9 {
					t.Fatalf("case %d: clipped bound %v, but Λ there is %v > 1/α", i, b, l)
				}
				continue
			}
			if l := lambda(b); math.Abs(l*opt.Alpha-1) > 1e-9 {
				t.Fatalf("case %d: Λ at the bound %v is %v, want 1/α", i, b, l)
			}
		}
		if !(lo <= s.Mean() && s.Mean() <= hi) {
			t.Fatalf("case %d: mean %v outside [%v, %v]", i, s.Mean(), lo, hi)
		}
	}
	if lo, hi := MeanInterval(Sample{1, 1, 1}, Options{}); lo != 0 || hi != 1 {
		t.Errorf("one outcome: [%v, %v]", lo, hi)
	}
}

// TestMeanCoverage: of 1,000 arms of success 0.3, each interval read after
// every 50 outcomes up to 5,000, the true mean ever falls outside in at
// most α of them.
func TestMeanCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulation of 1,000 arms")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const runs, p = 1000, 0.3
	missed := 0
	for range runs {
		var s Sample
		for n := 50; n <= 5000; n += 50 {
			s = add(s, bernoulli(rng, 50, p))
			if lo, hi := MeanInterval(s, Options{}); p < lo || p > hi {
				missed++
				break
			}
		}
	}
	t.Logf("%d arms of success %v, the interval read every 50 outcomes up to 5,000: the mean fell outside in %d (α = 5%%)", runs, p, missed)
	if missed > runs/20 {
		t.Errorf("missed in %d of %d: above α", missed, runs)
	}
}
