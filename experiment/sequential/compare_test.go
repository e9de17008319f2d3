package sequential

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bernoulli returns the sample of n outcomes of success probability p.
func bernoulli(rng *rand.Rand, n int, p float64) Sample {
	var s Sample
	for range n {
		s.N++
		if rng.Float64() < p {
			s.Sum++
			s.SumSq++
		}
	}
	return s
}

func add(a, b Sample) Sample { return Sample{a.N + b.N, a.Sum + b.Sum, a.SumSq + b.SumSq} }

// TestCompareInversion: the bounds are where the mixture likelihood ratio
// of the difference they bound reaches 1/α (computed here from the ratio's
// formula, not the bounds'), and the p-value is below α exactly when the
// bounds exclude 0.
func TestCompareInversion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	opt := Options{Alpha: 0.05, Tau: 0.05}
	for i := range 200 {
		c := bernoulli(rng, 50+rng.IntN(5000), 0.6)
		a := bernoulli(rng, 50+rng.IntN(5000), 0.6+0.1*rng.Float64())
		got := Compare(c, a, opt)
		v := c.Variance()/c.N + a.Variance()/a.N
		t2 := opt.Tau * opt.Tau
		lambda := func(delta0 float64) float64 {
			d := got.Diff - delta0
			return math.Sqrt(v/(v+t2)) * math.Exp(t2*d*d/(2*v*(v+t2)))
		}
		for _, bound := range []float64{got.Lower, got.Upper} {
			if l := lambda(bound); math.Abs(l*opt.Alpha-1) > 1e-9 {
				t.Fatalf("case %d: Λ at the bound %v is %v, want 1/α = %v", i, bound, l, 1/opt.Alpha)
			}
		}
		if p := math.Min(1, 1/lambda(0)); math.Abs(p-got.PValue) > 1e-12*math.Max(p, 1e-300) {
			t.Fatalf("case %d: p-value %v, 1/Λ(0) = %v", i, got.PValue, p)
		}
		if excl := got.Lower > 0 || got.Upper < 0; excl != (got.PValue < opt.Alpha) {
			t.Fatalf("case %d: bounds [%v, %v] and p-value %v disagree", i, got.Lower, got.Upper, got.PValue)
		}
	}
}

// TestCompareDecision: the decisions, the minimum count, and no outcomes.
func TestCompareDecision(t *testing.T) {
	for _, tc := range []struct {
		name       string
		control, a Sample
		want       Decision
	}{
		{"better", Sample{2000, 1200, 1200}, Sample{2000, 1500, 1500}, Better},
		{"worse", Sample{2000, 1500, 1500}, Sample{2000, 1200, 1200}, Worse},
		{"alike", Sample{2000, 1200, 1200}, Sample{2000, 1210, 1210}, Undecided},
		{"too few", Sample{99, 10, 10}, Sample{99, 90, 90}, Undecided},
		{"none", Sample{}, Sample{}, Undecided},
		{"rewards", Sample{3000, 1500, 900}, Sample{3000, 1800, 1200}, Better},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(tc.control, tc.a, Options{})
			if got.Decision != tc.want {
				t.Errorf("%+v: decision %v, want %v", got, got.Decision, tc.want)
			}
		})
	}
	if c := Compare(Sample{}, Sample{}, Options{}); !math.IsInf(c.Lower, -1) || !math.IsInf(c.Upper, 1) || c.PValue != 1 {
		t.Errorf("no outcomes: %+v", c)
	}
}

// peek runs one experiment of two arms with success probabilities pc and
// pa, consulting Compare after every batch of outcomes, up to maxPerArm
// per arm; it returns the decision and the outcomes per arm when it was
// made (maxPerArm when none was), and whether the fixed-sample z-test
// (|z| > 1.96), consulted the same way, would ever have declared one.
func peek(rng *rand.Rand, pc, pa float64, batch, maxPerArm int, opt Options) (Decision, int, bool) {
	var c, a Sample
	naive := false
	for n := batch; n <= maxPerArm; n += batch {
		c, a = add(c, bernoulli(rng, batch, pc)), add(a, bernoulli(rng, batch, pa))
		if v := c.Variance()/c.N + a.Variance()/a.N; v > 0 && math.Abs(a.Mean()-c.Mean())/math.Sqrt(v) > 1.96 {
			naive = true
		}
		if d := Compare(c, a, opt).Decision; d != Undecided {
			return d, n, naive
		}
	}
	return Undecided, maxPerArm, naive
}

// TestNullPeeking: of 1,000 experiments whose arms do not differ, each
// consulted after every 50 outcomes per arm up to 5,000, at most α ever
// decide; the fixed-sample z-test consulted the same way decides far more
// often (what the sequential test is for).
func TestNullPeeking(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulation of 1,000 experiments")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	const runs = 1000
	opt := Options{Alpha: 0.05}
	decided, naive := 0, 0
	for range runs {
		d, _, nv := peek(rng, 0.7, 0.7, 50, 5000, opt)
		if d != Undecided {
			decided++
		}
		if nv {
			naive++
		}
	}
	t.Logf("no true difference, %d experiments, a look every 50 outcomes per arm up to 5,000: %d decided (%.1f%%, α = %.0f%%); the z-test at 1.96 would have declared %d (%.1f%%)",
		runs, decided, 100*float64(decided)/runs, 100*opt.Alpha, naive, 100*float64(naive)/runs)
	if float64(decided) > opt.Alpha*runs {
		t.Errorf("%d of %d experiments without a difference decided: above α = %v", decided, runs, opt.Alpha)
	}
	if naive < 2*decided || float64(naive) < 2*opt.Alpha*runs {
		t.Errorf("the peeking z-test declared %d of %d: the simulation shows no inflation to guard against", naive, runs)
	}
}

// TestPowerPeeking: with a true difference of 5 points (0.70 against
// 0.75), the share of 1,000 experiments that find it (Better) within
// 20,000 outcomes per arm, and the median number of outcomes needed.
func TestPowerPeeking(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulation of 1,000 experiments")
	}
	rng := rand.New(rand.NewPCG(8, 8))
	const runs = 1000
	var found, wrong int
	var needed []float64
	for range runs {
		d, n, _ := peek(rng, 0.70, 0.75, 100, 20000, Options{})
		switch d {
		case Better:
			found++
			needed = append(needed, float64(n))
		case Worse:
			wrong++
		}
	}
	slices.Sort(needed)
	median := math.NaN()
	if len(needed) > 0 {
		median = needed[len(needed)/2]
	}
	t.Logf("0.70 against 0.75, %d experiments, a look every 100 outcomes per arm up to 20,000: found by %d (%.1f%%), the wrong way by %d; median outcomes per arm when found %.0f",
		runs, found, 100*float64(found)/runs, wrong, median)
	if found < 900 || wrong > 0 {
		t.Errorf("found by %d of %d, the wrong way by %d", found, runs, wrong)
	}
}

// TestSampleCheck: samples that no outcomes in [0, 1] give are refused.
func TestSampleCheck(t *testing.T) {
	for _, tc := range []struct {
		s  Sample
		ok bool
	}{
		{Sample{10, 4, 4}, true},
		{Sample{10, 4, 2.5}, true},
		{Sample{}, true},
		{Sample{-1, 0, 0}, false},
		{Sample{10, 11, 11}, false},
		{Sample{10, 4, 5}, false},
		{Sample{math.NaN(), 0, 0}, false},
	} {
		if err := tc.s.Check(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.s, err)
		}
	}
}
