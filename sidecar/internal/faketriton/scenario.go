package faketriton

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// Scenario is a small controllable model whose every number a test can
// compute on its own: calibration samples per task, the components file
// accumulated from them, a backbone (feature = M x + b, D×3) and a linear
// head per task (K×D). Reference computes W_p from the samples in float64,
// without package react.
type Scenario struct {
	D     int
	Tasks []string
	// Beta is the β written in the components file; normalisation "sum".
	Beta float64
	// M and Bias are the backbone's map.
	M    [][]float64
	Bias []float64
	// Heads holds each task's head matrix, in task order.
	Heads [][][]float64

	// mtl and ind hold each task's samples, row-major N×D.
	mtl, ind [][]float64
}

// HeadRows is the number of logits of every head.
const HeadRows = 2

// NewScenario draws a scenario from seed.
func NewScenario(seed uint64, d int, tasks ...string) *Scenario {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	randm := func(r, c int, scale float64) [][]float64 {
		m := make([][]float64, r)
		for i := range m {
			m[i] = make([]float64, c)
			for j := range m[i] {
				m[i][j] = scale * (2*rng.Float64() - 1)
			}
		}
		return m
	}
	s := &Scenario{D: d, Tasks: tasks, Beta: 20, M: randm(d, 3, 1), Bias: randm(1, d, 1)[0]}
	for k := range tasks {
		s.Heads = append(s.Heads, randm(HeadRows, d, 1))
		// The expert's feature is a task-specific linear map of the merged
		// one, plus noise.
		t := randm(d, d, 0.6)
		for i := 0; i < d; i++ {
			t[i][i] += 1
		}
		n := 40 + 15*k
		mtl := make([]float64, n*d)
		for i := range mtl {
			mtl[i] = rng.NormFloat64()
		}
		ind := Apply(t, mtl)
		for i := range ind {
			ind[i] += 0.1 * rng.NormFloat64()
		}
		s.mtl, s.ind = append(s.mtl, mtl), append(s.ind, ind)
	}
	return s
}

// Components returns the components accumulated from the samples with
// react.Accumulator.
func (s *Scenario) Components() (*react.Components, error) {
	c := &react.Components{D: s.D, Beta: s.Beta, Normalization: react.NormSum,
		Backbone: react.ModelRef{Name: "backbone", Output: "feature"}}
	for k, task := range s.Tasks {
		acc := react.NewAccumulator(s.D)
		if err := acc.AddFloat64(s.mtl[k], s.ind[k]); err != nil {
			return nil, err
		}
		st, err := acc.Stats(task, react.ModelRef{Name: "expert_" + task, Output: "feature"})
		if err != nil {
			return nil, err
		}
		c.Tasks = append(c.Tasks, st)
	}
	return c, nil
}

// WriteComponents saves the components file in dir under name and returns
// its path.
func (s *Scenario) WriteComponents(t testing.TB, dir, name string) string {
	t.Helper()
	c, err := s.Components()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := componentsfile.Save(path, c); err != nil {
		t.Fatal(err)
	}
	return path
}

// ComponentsBytes returns the bytes of the components file.
func (s *Scenario) ComponentsBytes(t testing.TB) []byte {
	t.Helper()
	path := s.WriteComponents(t, t.TempDir(), "c.safetensors")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Reference returns W_p (D×D) for the weights (aligned with Tasks, summing
// to 1), β and the normalisation, in float64 straight from the samples:
//
//	S_t = Σ z_ind z_mtlᵀ, G_t = Σ z_mtl z_mtlᵀ (divided by N_t when mean),
//	W_orth_t = the orthogonal polar factor of S_t (Newton's iteration),
//	W_p = (Σ p_t (S_t + β W_orth_t)) (Σ p_t (G_t + β I))⁻¹ (LU).
func (s *Scenario) Reference(weights []float64, beta float64, mean bool) [][]float64 {
	d := s.D
	a := mat.NewDense(d, d, nil)
	c := mat.NewDense(d, d, nil)
	for k := range s.Tasks {
		if weights[k] == 0 {
			continue
		}
		mtl, ind := s.mtl[k], s.ind[k]
		n := len(mtl) / d
		sm := mat.NewDense(d, d, nil)
		gm := mat.NewDense(d, d, nil)
		for r := 0; r < n; r++ {
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					sm.Set(i, j, sm.At(i, j)+ind[r*d+i]*mtl[r*d+j])
					gm.Set(i, j, gm.At(i, j)+mtl[r*d+i]*mtl[r*d+j])
				}
			}
		}
		if mean {
			sm.Scale(1/float64(n), sm)
			gm.Scale(1/float64(n), gm)
		}
		worth := polar(sm)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				a.Set(i, j, a.At(i, j)+weights[k]*(sm.At(i, j)+beta*worth.At(i, j)))
				cij := gm.At(i, j)
				if i == j {
					cij += beta
				}
				c.Set(i, j, c.At(i, j)+weights[k]*cij)
			}
		}
	}
	// W C = A  ⇔  Cᵀ Wᵀ = Aᵀ.
	var lu mat.LU
	lu.Factorize(c.T())
	var wt mat.Dense
	if err := lu.SolveTo(&wt, false, a.T()); err != nil {
		panic(fmt.Sprintf("faketriton: reference solve: %v", err))
	}
	w := make([][]float64, d)
	for i := range w {
		w[i] = make([]float64, d)
		for j := range w[i] {
			w[i][j] = wt.At(j, i)
		}
	}
	return w
}

// polar returns the orthogonal factor of the polar decomposition of a
// nonsingular square matrix, by Newton's iteration X ← (X + X⁻ᵀ)/2.
func polar(m *mat.Dense) *mat.Dense {
	d, _ := m.Dims()
	x := mat.DenseCopyOf(m)
	// Scale to norm about 1 for a fast start.
	x.Scale(1/mat.Norm(x, 2), x)
	for it := 0; it < 100; it++ {
		var inv mat.Dense
		if err := inv.Inverse(x); err != nil {
			panic(fmt.Sprintf("faketriton: polar: %v", err))
		}
		next := mat.NewDense(d, d, nil)
		next.Add(x, inv.T())
		next.Scale(0.5, next)
		var diff mat.Dense
		diff.Sub(next, x)
		x = next
		if mat.Norm(&diff, math.Inf(1)) < 1e-15 {
			break
		}
	}
	return x
}

// Feature returns the backbone's feature for the batch x (row-major B×3) as
// the fake sends it in dt.
func (s *Scenario) Feature(dt string, x []float64) []float64 {
	f := Affine(s.M, s.Bias, x)
	for i := range f {
		f[i] = Round(dt, f[i])
	}
	return f
}

// BackboneModel returns the scenario's backbone as a fake model.
func (s *Scenario) BackboneModel(name, dt string) *Model { return Backbone(name, dt, s.M, s.Bias) }

// HeadModel returns the head of a task as a fake model taking the feature
// in dt.
func (s *Scenario) HeadModel(name, task, dt string) *Model {
	for k, t := range s.Tasks {
		if t == task {
			return Head(name, dt, s.Heads[k])
		}
	}
	panic("faketriton: no task " + task)
}

// Head returns the head matrix of a task.
func (s *Scenario) Head(task string) [][]float64 {
	for k, t := range s.Tasks {
		if t == task {
			return s.Heads[k]
		}
	}
	panic("faketriton: no task " + task)
}

// Truncate keeps only the first n calibration samples of a task, so that
// with n < D and β = 0 its C_t is singular.
func (s *Scenario) Truncate(task string, n int) {
	for k, t := range s.Tasks {
		if t == task {
			s.mtl[k], s.ind[k] = s.mtl[k][:n*s.D], s.ind[k][:n*s.D]
			return
		}
	}
	panic("faketriton: no task " + task)
}
