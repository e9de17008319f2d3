package react

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestTaskSystem: task k's system as the solver reads it, for a device to
// upload: A_t = s_t S_t + β W_orth_t and G_t's rows as the components
// hold them, below the diagonal included; s_t is 1 under NormSum and
// 1/N_t under NormMean; the same with the A_t precomputed (NewSolver) or
// not (NewOneShotSolver).
func TestTaskSystem(t *testing.T) {
	const d, beta = 8, 0.1
	c := syntheticComponents(d, 2)
	c.Tasks[1].N = 40
	for _, norm := range []Normalization{NormSum, NormMean} {
		for _, precompute := range []bool{true, false} {
			s, err := newSolver(c, Options{Beta: beta, Normalization: norm}, precompute)
			if err != nil {
				t.Fatal(err)
			}
			for k, task := range c.Tasks {
				a, g := make([]float64, d*d), make([]float64, d*d)
				for i := range g {
					a[i], g[i] = math.NaN(), math.NaN()
				}
				scale := s.TaskSystem(k, a, g)
				want := 1.0
				if norm == NormMean {
					want = 1 / float64(task.N)
				}
				if scale != want {
					t.Errorf("%v, precomputed %v, task %d: s_t = %v, want %v", norm, precompute, k, scale, want)
				}
				raw := task.G.RawSymmetric()
				for i := range d {
					for j := range d {
						wa := want*task.S.At(i, j) + beta*task.WOrth.At(i, j)
						if math.Abs(a[i*d+j]-wa) > 1e-15*math.Abs(wa) {
							t.Fatalf("%v, precomputed %v, task %d: A_t[%d,%d] = %v, want %v", norm, precompute, k, i, j, a[i*d+j], wa)
						}
						if wg := raw.Data[i*raw.Stride+j]; g[i*d+j] != wg {
							t.Fatalf("%v, precomputed %v, task %d: G_t[%d,%d] = %v, want %v as held", norm, precompute, k, i, j, g[i*d+j], wg)
						}
					}
				}
			}
		}
	}
}

// TestWeights: the weights of a preference, aligned with the solver's
// tasks; a task it names with weight 0 weighs nothing, known or not; an
// unknown task it weighs, and the empty preference, are errors.
func TestWeights(t *testing.T) {
	s := mustSolver(t, syntheticComponents(8, 3), Options{Beta: 0.1, Normalization: NormSum})
	w := []float64{9, 9, 9}
	p, err := NewPreference([]string{"task2", "elsewhere", "task0"}, []float64{3, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Weights(w, p); err != nil || !slices.Equal(w, []float64{0.25, 0, 0.75}) {
		t.Errorf("Weights = %v, %v; want [0.25 0 0.75]", w, err)
	}
	p, err = NewPreference([]string{"task0", "elsewhere"}, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Weights(w, p); err == nil || !strings.Contains(err.Error(), `unknown task "elsewhere"`) {
		t.Errorf("a preference weighing an unknown task: %v", err)
	}
	if err := s.Weights(w, Preference{}); err == nil {
		t.Error("the empty preference: no error")
	}
}

// TestRefusal: a refused solve's error carries the solve's settings and
// names the tasks it weighs that have fewer samples than D, never one it
// does not weigh.
func TestRefusal(t *testing.T) {
	c := syntheticComponents(8, 3)
	c.Tasks[0].N, c.Tasks[1].N = 5, 7 // task2 has 80
	s := mustSolver(t, c, Options{Beta: 0.5, Normalization: NormMean})
	for _, tc := range []struct {
		w     []float64
		short []TaskCount
	}{
		{[]float64{0.5, 0.5, 0}, []TaskCount{{"task0", 5}, {"task1", 7}}},
		{[]float64{0, 0.5, 0.5}, []TaskCount{{"task1", 7}}},
		{[]float64{0, 0, 1}, nil},
	} {
		err := s.Refusal(tc.w, "p", math.Inf(1))
		if err.Preference != "p" || err.Beta != 0.5 || err.Normalization != NormMean || err.D != 8 || !math.IsInf(err.Cond, 1) {
			t.Errorf("weights %v: %+v", tc.w, err)
		}
		if !slices.Equal(err.Short, tc.short) {
			t.Errorf("weights %v: short %v, want %v", tc.w, err.Short, tc.short)
		}
	}
}
