package control

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
)

var tasks3 = []string{"cars", "dtd", "svhn"}

// countingObserver counts lookups by result and solves.
type countingObserver struct {
	mu      sync.Mutex
	lookups map[string]int
	solves  atomic.Int64
	formed  atomic.Int64
}

func (o *countingObserver) Lookup(_, result string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lookups == nil {
		o.lookups = map[string]int{}
	}
	o.lookups[result]++
}

func (o *countingObserver) Solved(string, time.Duration, error) { o.solves.Add(1) }

func (o *countingObserver) Formed(string, time.Duration, error) { o.formed.Add(1) }

func (o *countingObserver) count(result string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lookups[result]
}

func newTestProfile(t *testing.T, spec ProfileSpec) *Profile {
	t.Helper()
	if spec.Components == nil {
		spec.Components = testComponents(t, 6, 40, tasks3...)
	}
	if spec.Options == (react.Options{}) {
		spec.Options = react.DefaultOptions(spec.Components)
	}
	if spec.Cache == nil {
		c, err := NewCache(8)
		if err != nil {
			t.Fatal(err)
		}
		spec.Cache = c
	}
	if spec.Name == "" {
		spec.Name = "test"
	}
	p, err := NewProfile(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolvePrecedence(t *testing.T) {
	p := newTestProfile(t, ProfileSpec{
		Default: "cars=1",
		Presets: map[string]string{"texture": "dtd=3,svhn=1", "digits": "svhn=1"},
	})
	pref := func(s string) Values { return Values{Preference: s, HasPreference: true} }
	preset := func(s string) Values { return Values{Preset: s, HasPreset: true} }
	both := func(pr, ps string) Values {
		return Values{Preference: pr, HasPreference: true, Preset: ps, HasPreset: true}
	}
	for _, tc := range []struct {
		name       string
		req        Request
		want       string
		src        Source
		presetName string
	}{
		{"nothing: the default", Request{}, "cars=1", SourceDefault, ""},
		{"header preference", Request{Header: pref("dtd=1,svhn=1")}, "dtd=0.5,svhn=0.5", SourceHeader, ""},
		{"header beats parameter", Request{Header: pref("dtd=1"), Parameter: pref("svhn=1")}, "dtd=1", SourceHeader, ""},
		{"parameter beats presets", Request{Header: preset("digits"), Parameter: both("cars=1,dtd=1", "texture")}, "cars=0.5,dtd=0.5", SourceParameter, ""},
		{"header preset beats parameter preset", Request{Header: preset("digits"), Parameter: preset("texture")}, "svhn=1", SourcePreset, "digits"},
		{"parameter preset", Request{Parameter: preset("texture")}, "dtd=0.75,svhn=0.25", SourcePreset, "texture"},
		{"none asks for no correction", Request{Header: pref("none")}, "none", SourceHeader, ""},
		{"uniform is short", Request{Parameter: pref("cars=1,dtd=1,svhn=1")}, "cars=0.333334,dtd=0.333333,svhn=0.333333", SourceParameter, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := p.Resolve(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if c.Canonical() != tc.want || c.Source != tc.src || c.Preset != tc.presetName {
				t.Errorf("Resolve = %q from %v (preset %q), want %q from %v (preset %q)",
					c.Canonical(), c.Source, c.Preset, tc.want, tc.src, tc.presetName)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	p := newTestProfile(t, ProfileSpec{Presets: map[string]string{"texture": "dtd=1"}, MaxPreferenceLength: 40})
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"unknown task", Request{Header: Values{Preference: "cars=1,foo=2", HasPreference: true}},
			`react-preference header: preference "cars=1,foo=2": unknown task "foo" (known: cars, dtd, svhn) (presets: texture)`},
		{"negative weight", Request{Parameter: Values{Preference: "cars=-1", HasPreference: true}},
			`react-preference parameter: preference "cars=-1": task "cars": weight "-1" is negative`},
		{"empty", Request{Header: Values{HasPreference: true}}, `react-preference header: preference "": empty preference`},
		{"zero sum", Request{Header: Values{Preference: "cars=0", HasPreference: true}}, "weights sum to 0"},
		{"unknown preset", Request{Parameter: Values{Preset: "shiny", HasPreset: true}},
			`react-preset parameter: unknown preset "shiny" (valid tasks: cars, dtd, svhn; presets: texture)`},
		{"too long", Request{Header: Values{Preference: strings.Repeat("cars=1,", 10), HasPreference: true}},
			"react-preference header: value of 70 bytes is longer than the limit of 40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Resolve(tc.req)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("Resolve error = %v, want an *InputError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// referenceW computes W_p = A_p C_p⁻¹ in float64 straight from the stored
// statistics, by an LU solve of C_pᵀ W_pᵀ = A_pᵀ: independent of the
// solver's Cholesky path.
func referenceW(t *testing.T, c *react.Components, beta float64, weights map[string]float64) *mat.Dense {
	t.Helper()
	d := c.D
	ap := mat.NewDense(d, d, nil)
	cp := mat.NewDense(d, d, nil)
	for _, task := range c.Tasks {
		w := weights[task.Name]
		if w == 0 {
			continue
		}
		var a, g mat.Dense
		a.Scale(beta, task.WOrth)
		a.Add(&a, task.S)
		g.CloneFrom(task.G)
		for i := 0; i < d; i++ {
			g.Set(i, i, g.At(i, i)+beta)
		}
		a.Scale(w, &a)
		g.Scale(w, &g)
		ap.Add(ap, &a)
		cp.Add(cp, &g)
	}
	var wt mat.Dense
	if err := wt.Solve(cp.T(), ap.T()); err != nil {
		t.Fatal(err)
	}
	return mat.DenseCopyOf(wt.T())
}

func TestMatrixMatchesReference(t *testing.T) {
	comps := testComponents(t, 6, 40, tasks3...)
	p := newTestProfile(t, ProfileSpec{Components: comps, Default: "cars=1,dtd=1,svhn=1", Presets: map[string]string{"x": "dtd=2,svhn=1"}})
	for _, spec := range []string{"cars=1,dtd=1,svhn=1", "dtd=2,svhn=1", "svhn=1", "cars=0.6,dtd=0.4"} {
		c, err := p.Resolve(Request{Header: Values{Preference: spec, HasPreference: true}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.Matrix(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		weights := map[string]float64{}
		for i, task := range c.Preference.Tasks() {
			weights[task] = c.Preference.Weights()[i]
		}
		ref := referenceW(t, comps, comps.Beta, weights)
		// A new preference is first answered through its factorisation;
		// its W_p is formed in the background and replaces it.
		checkApply(t, spec+" (as first served)", m, ref)
		deadline := time.Now().Add(10 * time.Second)
		for !m.Formed() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			if m, err = p.Matrix(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
		if !m.Formed() {
			t.Fatalf("%s: W_p was not formed within 10 s", spec)
		}
		checkApply(t, spec+" (formed)", m, ref)
		maxAbs := mat.Norm(ref, math.Inf(1))
		w := m.Matrix()
		for i := 0; i < comps.D; i++ {
			for j := 0; j < comps.D; j++ {
				if diff := float64(w[i*comps.D+j]) - ref.At(i, j); diff > 1e-6*maxAbs || diff < -1e-6*maxAbs {
					t.Fatalf("%s: W[%d][%d] = %v, reference %v", spec, i, j, w[i*comps.D+j], ref.At(i, j))
				}
			}
		}
	}
	if c, _ := p.Resolve(Request{Header: Values{Preference: "none", HasPreference: true}}); c.Corrects() {
		t.Error("none corrects")
	} else if m, err := p.Matrix(context.Background(), c); m != nil || err != nil {
		t.Errorf("Matrix(none) = %v, %v, want nil, nil", m, err)
	}
}

// checkApply checks that m corrects a batch as the float64 reference W
// does, per row.
func checkApply(t *testing.T, what string, m *Matrix, ref *mat.Dense) {
	t.Helper()
	d, _ := ref.Dims()
	z := []float32{1, 2, 3, 4, 5, 6, -1, 0, 0.5, 0, 0, 2}
	dst := make([]float32, len(z))
	if err := m.Apply(dst, z); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < len(z)/d; r++ {
		for i := 0; i < d; i++ {
			want := 0.0
			for j := 0; j < d; j++ {
				want += ref.At(i, j) * float64(z[r*d+j])
			}
			if diff := float64(dst[r*d+i]) - want; diff > 1e-4 || diff < -1e-4 {
				t.Fatalf("%s: corrected[%d][%d] = %v, want %v", what, r, i, dst[r*d+i], want)
			}
		}
	}
}
