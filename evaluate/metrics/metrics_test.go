package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestNormalizedAccuracy(t *testing.T) {
	a, err := NormalizedAccuracy([]float64{0.45, 0.9, 0}, []float64{0.9, 0.9, 0.5})
	if err != nil || !slices.Equal(a, []float64{0.5, 1, 0}) {
		t.Errorf("got %v, %v", a, err)
	}
	for _, tc := range []struct {
		acc, expert []float64
		want        string
	}{
		{[]float64{0.5}, []float64{0.5, 0.6}, "1 accuracies but 2"},
		{[]float64{0.5}, []float64{0}, "expert accuracy 0"},
		{[]float64{-0.1}, []float64{1}, "accuracy -0.1"},
		{[]float64{math.NaN()}, []float64{1}, "accuracy NaN"},
	} {
		if _, err := NormalizedAccuracy(tc.acc, tc.expert); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NormalizedAccuracy(%v, %v) = %v, want %q", tc.acc, tc.expert, err, tc.want)
		}
	}
}

func TestHypervolumeHand(t *testing.T) {
	origin := func(d int) []float64 { return make([]float64, d) }
	for _, tc := range []struct {
		name   string
		points [][]float64
		ref    []float64
		want   float64
	}{
		{"empty", nil, origin(3), 0},
		{"one point", [][]float64{{0.5, 0.4, 0.2}}, origin(3), 0.5 * 0.4 * 0.2},
		{"one point, shifted reference", [][]float64{{0.5, 0.4}}, []float64{0.1, 0.1}, 0.4 * 0.3},
		// Union of [0,3]×[0,1] and [0,1]×[0,2]: 3 + 2 − 1.
		{"two points 2-D", [][]float64{{3, 1}, {1, 2}}, origin(2), 4},
		{"dominated point", [][]float64{{3, 1}, {1, 2}, {0.5, 0.5}, {3, 1}}, origin(2), 4},
		{"point below the reference", [][]float64{{0.5, 0.5}, {2, -1}}, origin(2), 0.25},
		// Three unit-thick slabs along the axes of the cube [0,2]³ plus the
		// corner: [0,2]×[0,2]×[0,1] ∪ [0,2]×[0,1]×[0,2] ∪ [0,1]×[0,2]×[0,2]
		// is the cube minus the box [1,2]³: 8 − 1.
		{"three slabs 3-D", [][]float64{{2, 2, 1}, {2, 1, 2}, {1, 2, 2}}, origin(3), 7},
		// Adding a dominated point and the point (1,1,1) changes nothing.
		{"three slabs plus dominated", [][]float64{{2, 2, 1}, {1, 1, 1}, {2, 1, 2}, {1, 2, 2}, {0.5, 2, 0.5}}, origin(3), 7},
		{"1-D", [][]float64{{0.3}, {0.7}, {0.5}}, origin(1), 0.7},
		{"4-D staircase", [][]float64{{1, 1, 1, 2}, {1, 1, 2, 1}}, origin(4), 2 + 2 - 1},
	} {
		got, err := Hypervolume(tc.points, tc.ref)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: HV = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// hvInclusionExclusion is the hypervolume by inclusion–exclusion over all
// non-empty subsets: Σ (−1)^(|S|+1) Π_k min_{i∈S} (a_ik − r_k)⁺.
func hvInclusionExclusion(points [][]float64, ref []float64) float64 {
	n, d := len(points), len(ref)
	total := 0.0
	for mask := 1; mask < 1<<n; mask++ {
		vol, size := 1.0, 0
		for k := 0; k < d; k++ {
			m := math.Inf(1)
			for i := 0; i < n; i++ {
				if mask&(1<<i) != 0 {
					m = math.Min(m, points[i][k])
				}
			}
			vol *= math.Max(0, m-ref[k])
		}
		for i := 0; i < n; i++ {
			if mask&(1<<i) != 0 {
				size++
			}
		}
		if size%2 == 1 {
			total += vol
		} else {
			total -= vol
		}
	}
	return total
}

// hvGrid is the hypervolume by cutting space at every coordinate and summing
// the volumes of the covered cells, for d ≤ 3.
func hvGrid(points [][]float64, ref []float64) float64 {
	d := len(ref)
	cuts := make([][]float64, d)
	for k := 0; k < d; k++ {
		cuts[k] = []float64{ref[k]}
		for _, p := range points {
			if p[k] > ref[k] {
				cuts[k] = append(cuts[k], p[k])
			}
		}
		slices.Sort(cuts[k])
		cuts[k] = slices.Compact(cuts[k])
	}
	total := 0.0
	idx := make([]int, d)
	var walk func(k int)
	walk = func(k int) {
		if k == d {
			covered := false
			for _, p := range points {
				in := true
				for j := 0; j < d; j++ {
					if p[j] < cuts[j][idx[j]+1] { // cell's upper corner must be dominated
						in = false
						break
					}
				}
				if in {
					covered = true
					break
				}
			}
			if covered {
				v := 1.0
				for j := 0; j < d; j++ {
					v *= cuts[j][idx[j]+1] - cuts[j][idx[j]]
				}
				total += v
			}
			return
		}
		for i := 0; i+1 < len(cuts[k]); i++ {
			idx[k] = i
			walk(k + 1)
		}
	}
	walk(0)
	return total
}

// TestHypervolumeRandom compares the exact algorithm with two brute-force
// computations on random sets, including ties and dominated points.
func TestHypervolumeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 1))
	for trial := 0; trial < 200; trial++ {
		d := 1 + rng.IntN(6)
		n := 1 + rng.IntN(10)
		ref := make([]float64, d)
		if trial%3 == 0 {
			for k := range ref {
				ref[k] = 0.1 * rng.Float64()
			}
		}
		points := make([][]float64, n)
		for i := range points {
			points[i] = make([]float64, d)
			for k := range points[i] {
				// Coarse values make ties and dominated points common.
				points[i][k] = float64(rng.IntN(6)) / 5
				if trial%2 == 0 {
					points[i][k] = rng.Float64()
				}
			}
		}
		got, err := Hypervolume(points, ref)
		if err != nil {
			t.Fatal(err)
		}
		want := hvInclusionExclusion(points, ref)
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("d=%d n=%d: HV = %v, inclusion–exclusion %v\npoints %v", d, n, got, want, points)
		}
		if d <= 3 {
			if g := hvGrid(points, ref); math.Abs(got-g) > 1e-12 {
				t.Fatalf("d=%d n=%d: HV = %v, grid %v", d, n, got, g)
			}
		}
	}
}

// TestHypervolumeLarge runs 100 random points in 8 dimensions, on a box and
// on a concave front where few points are dominated, and checks the result
// lies between the largest single box and the bounding box.
func TestHypervolumeLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	const n, d = 100, 8
	for _, front := range []string{"box", "sphere"} {
		points := make([][]float64, n)
		maxBox := 0.0
		bound := make([]float64, d)
		for i := range points {
			points[i] = make([]float64, d)
			norm := 0.0
			for k := range points[i] {
				points[i][k] = 0.5 + 0.5*rng.Float64()
				norm += points[i][k] * points[i][k]
			}
			v := 1.0
			for k := range points[i] {
				if front == "sphere" {
					points[i][k] /= math.Sqrt(norm)
				}
				v *= points[i][k]
				bound[k] = math.Max(bound[k], points[i][k])
			}
			maxBox = math.Max(maxBox, v)
		}
		got, err := Hypervolume(points, make([]float64, d))
		if err != nil {
			t.Fatal(err)
		}
		if hi := boxVolume(bound); !(got > maxBox && got < hi) {
			t.Errorf("%s: HV = %v, want in (%v, %v)", front, got, maxBox, hi)
		}
	}
}

func TestHypervolumeErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		points [][]float64
		ref    []float64
	}{
		{"empty reference", [][]float64{{1}}, nil},
		{"dimension mismatch", [][]float64{{1, 2}, {1}}, []float64{0, 0}},
		{"NaN point", [][]float64{{1, math.NaN()}}, []float64{0, 0}},
		{"Inf reference", [][]float64{{1, 1}}, []float64{0, math.Inf(-1)}},
	} {
		if _, err := Hypervolume(tc.points, tc.ref); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestUniformity(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, p []float64
		want float64
	}{
		// p_t s_t constant: s = (0.2, 0.4, 0.1), p ∝ (2, 1, 4).
		{"aligned", []float64{0.8, 0.6, 0.9}, []float64{2, 1, 4}, 1},
		{"aligned, normalised p", []float64{0.8, 0.6, 0.9}, []float64{2.0 / 7, 1.0 / 7, 4.0 / 7}, 1},
		// s = (0.1, 0.3), p = (0.5, 0.5): ŝ = (1/4, 3/4),
		// KL = 1/4 log(2/4) + 3/4 log(6/4).
		{"two tasks", []float64{0.9, 0.7}, []float64{0.5, 0.5}, 1 - (0.25*math.Log(0.5) + 0.75*math.Log(1.5))},
		// One weighted task carries all the shortfall: ŝ = (1, 0), KL = log 2.
		{"all shortfall on one task", []float64{0.5, 1}, []float64{1, 1}, 1 - math.Log(2)},
		{"zero weight ignored", []float64{0.5, 0.2}, []float64{1, 0}, 1 - math.Log(2)},
		// a_t ≥ 1 clamps the shortfall to 0.
		{"beats expert", []float64{1.1, 0.8}, []float64{0.5, 0.5}, 1 - math.Log(2)},
		{"no shortfall", []float64{1, 1.2}, []float64{0.3, 0.7}, 1},
		{"single task", []float64{0.4}, []float64{1}, 1},
	} {
		got, err := Uniformity(tc.a, tc.p)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: U = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		a, p []float64
	}{
		{"length mismatch", []float64{0.5, 0.5}, []float64{1}},
		{"empty", nil, nil},
		{"negative weight", []float64{0.5}, []float64{-1}},
		{"zero weights", []float64{0.5, 0.5}, []float64{0, 0}},
		{"NaN accuracy", []float64{math.NaN()}, []float64{1}},
	} {
		if _, err := Uniformity(tc.a, tc.p); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
