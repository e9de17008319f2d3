package calibrate

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/calibrate/embeddings"
	"github.com/mergectl/react-triton/calibrate/pairs/pairstest"
)

// procrustes computes U Vᵀ from the SVD U Σ Vᵀ of s, independently of the
// react package.
func procrustes(t *testing.T, s mat.Matrix) *mat.Dense {
	t.Helper()
	var svd mat.SVD
	if !svd.Factorize(s, mat.SVDFull) {
		t.Fatal("SVD failed")
	}
	var u, v, w mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	w.Mul(&u, v.T())
	return &w
}

// reference computes W_p from the raw embeddings, without the statistics
// and without the react package: it minimises
//
//	Σ_t p_t [ s_t ‖X_t Wᵀ − Y_t‖² + β ‖Wᵀ − W_orth_tᵀ‖² ]
//
// (X_t, Y_t: the merged and expert features, one sample per row; s_t = 1
// for sums and 1/N_t for means) as one stacked least-squares problem
// solved by QR.
func reference(t *testing.T, e *embeddingDir, weights map[string]float64, beta float64, mean bool) *mat.Dense {
	t.Helper()
	var sum float64
	for _, w := range weights {
		sum += w
	}
	var a, b *mat.Dense
	stack := func(x, y mat.Matrix, scale float64) {
		var xs, ys mat.Dense
		xs.Scale(scale, x)
		ys.Scale(scale, y)
		if a == nil {
			a, b = mat.DenseCopyOf(&xs), mat.DenseCopyOf(&ys)
			return
		}
		var a2, b2 mat.Dense
		a2.Stack(a, &xs)
		b2.Stack(b, &ys)
		a, b = &a2, &b2
	}
	for task, w := range weights {
		p := w / sum
		if p == 0 {
			continue
		}
		x, y := e.data[task][0], e.data[task][1]
		n, d := x.Dims()
		st := 1.0
		if mean {
			st = 1 / float64(n)
		}
		stack(x, y, math.Sqrt(p*st))
		if beta > 0 {
			var s mat.Dense
			s.Mul(y.T(), x) // S = Σ z_ind z_mtlᵀ
			wo := procrustes(t, &s)
			stack(eye(d), wo.T(), math.Sqrt(p*beta))
		}
	}
	var wt mat.Dense
	if err := wt.Solve(a, b); err != nil {
		t.Fatal(err)
	}
	return mat.DenseCopyOf(wt.T())
}

func assertClose(t *testing.T, got, want mat.Matrix, rel float64) {
	t.Helper()
	scale := mat.Norm(want, math.Inf(1))
	var diff mat.Dense
	diff.Sub(got, want)
	if err := mat.Norm(&diff, math.Inf(1)); err > rel*scale {
		t.Errorf("‖got − want‖∞ = %g > %g·‖want‖∞ = %g\ngot  %v\nwant %v", err, rel, rel*scale,
			mat.Formatted(got, mat.Squeeze()), mat.Formatted(want, mat.Squeeze()))
	}
}

// fitted writes embeddings for tasks cars (60 rows) and dtd (45 rows), D=4,
// and fits them with β = 0.5 and sums.
func fitted(t *testing.T) (*embeddingDir, string) {
	t.Helper()
	e := writeEmbeddings(t, 4, []string{"cars", "dtd"}, []int{60, 45}, []bool{false, true})
	path := filepath.Join(t.TempDir(), "c.safetensors")
	mustRun(t, "fit", "--embeddings", e.dir, "--out", path, "--beta", "0.5")
	return e, path
}

func TestSolveMatchesLeastSquares(t *testing.T) {
	e, comps := fitted(t)
	single := func(task string, beta float64) *mat.Dense {
		return reference(t, e, map[string]float64{task: 1}, beta, false)
	}
	for _, tc := range []struct {
		name string
		args []string
		want func() *mat.Dense
		rel  float64
	}{
		{"one-hot, β=0: plain least squares", []string{"--preference", "cars=1", "--beta", "0"},
			func() *mat.Dense { return single("cars", 0) }, 1e-5},
		{"mixed, file's β", []string{"--preference", "cars=0.7,dtd=0.3"},
			func() *mat.Dense {
				return reference(t, e, map[string]float64{"cars": 0.7, "dtd": 0.3}, 0.5, false)
			}, 1e-5},
		{"unnormalised weights", []string{"--preference", "dtd=1, cars=3"},
			func() *mat.Dense {
				return reference(t, e, map[string]float64{"cars": 0.75, "dtd": 0.25}, 0.5, false)
			}, 1e-5},
		{"mean normalisation and β override", []string{"--preference", "cars=0.4,dtd=0.6", "--normalize", "mean", "--beta", "0.01"},
			func() *mat.Dense {
				return reference(t, e, map[string]float64{"cars": 0.4, "dtd": 0.6}, 0.01, true)
			}, 1e-5},
		{"large β tends to Σ p_t W_orth_t", []string{"--preference", "cars=0.5,dtd=0.5", "--beta", "1e9"},
			func() *mat.Dense {
				var sum mat.Dense
				for _, task := range []string{"cars", "dtd"} {
					var s mat.Dense
					s.Mul(e.data[task][1].T(), e.data[task][0])
					wo := procrustes(t, &s)
					wo.Scale(0.5, wo)
					if sum.IsEmpty() {
						sum.CloneFrom(wo)
					} else {
						sum.Add(&sum, wo)
					}
				}
				return &sum
			}, 1e-5},
		{"single", []string{"--preference", "dtd=1", "--method", "single"},
			func() *mat.Dense { return single("dtd", 0.5) }, 1e-5},
		{"polar, one-hot gives Ŵ_t", []string{"--preference", "cars=1", "--method", "polar"},
			func() *mat.Dense { return single("cars", 0.5) }, 1e-5},
		{"naive", []string{"--preference", "cars=2,dtd=1", "--method", "naive"},
			func() *mat.Dense {
				var w mat.Dense
				a, b := single("cars", 0.5), single("dtd", 0.5)
				a.Scale(2.0/3, a)
				b.Scale(1.0/3, b)
				w.Add(a, b)
				return &w
			}, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "W.npy")
			r := mustRun(t, append([]string{"solve", "--components", comps, "--out", out}, tc.args...)...)
			if !strings.Contains(r.stdout, "wrote "+out+": 4×4 float32") {
				t.Errorf("stdout: %s", r.stdout)
			}
			assertClose(t, readW(t, out), tc.want(), tc.rel)
		})
	}
}

func TestSolveRefuses(t *testing.T) {
	_, comps := fitted(t)
	corrupt := filepath.Join(t.TempDir(), "corrupt.safetensors")
	b, err := os.ReadFile(comps)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 0x40
	if err := os.WriteFile(corrupt, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
		not  string
	}{
		{"no '='", []string{"--preference", "cars"}, ExitUsage, `entry "cars" has no '='`, ""},
		{"negative", []string{"--preference", "cars=-1,dtd=2"}, ExitUsage, `task "cars": weight "-1" is negative`, ""},
		{"not a number", []string{"--preference", "cars=abc"}, ExitUsage, `weight "abc" is not a plain decimal number`, ""},
		{"zero sum", []string{"--preference", "cars=0,dtd=0"}, ExitUsage, "weights sum to 0", ""},
		{"unknown task", []string{"--preference", "cars=1,foo=1"}, ExitUsage, `unknown task "foo" (known: cars, dtd)`, ""},
		{"duplicate task", []string{"--preference", "cars=1,cars=2"}, ExitUsage, `duplicate task "cars"`, ""},
		{"empty", []string{"--preference", ""}, ExitUsage, "empty preference", ""},
		{"single with two tasks", []string{"--preference", "cars=1,dtd=1", "--method", "single"}, ExitUsage, "--method single needs a preference with exactly one task", ""},
		{"unknown method", []string{"--preference", "cars=1", "--method", "best"}, ExitUsage, `--method "best"`, ""},
		{"negative beta", []string{"--preference", "cars=1", "--beta", "-0.1"}, ExitUsage, "--beta: invalid beta -0.1: want a finite number ≥ 0", ""},
		{"bad normalize", []string{"--preference", "cars=1", "--normalize", "l2"}, ExitUsage, `unknown normalization "l2"`, ""},
		{"corrupt file", []string{"--preference", "cars=1", "--components", corrupt}, ExitFailure, "checksum mismatch: file is corrupt", ""},
		{"preference checked before the data", []string{"--preference", "nope=1", "--components", corrupt}, ExitUsage, `unknown task "nope"`, "checksum"},
		{"missing file", []string{"--preference", "cars=1", "--components", filepath.Join(t.TempDir(), "none")}, ExitFailure, "no such file", ""},
		{"output directory missing", []string{"--preference", "cars=1", "--out", filepath.Join(t.TempDir(), "no", "W.npy")}, ExitFailure, "W.npy", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outDir := t.TempDir()
			args := append([]string{"solve", "--components", comps, "--out", filepath.Join(outDir, "W.npy")}, tc.args...)
			r := run(t, args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tc.want)
			}
			if tc.not != "" && strings.Contains(r.stderr, tc.not) {
				t.Errorf("stderr %q contains %q", r.stderr, tc.not)
			}
			if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
				t.Errorf("a failed solve left %d files behind", len(entries))
			}
		})
	}
}

// TestSolveSingular checks that a preference whose C_p is singular (β = 0
// and fewer samples than D) fails with an explanation, not a matrix of
// garbage.
func TestSolveSingular(t *testing.T) {
	e := writeEmbeddings(t, 6, []string{"few"}, []int{3}, []bool{false})
	comps := filepath.Join(t.TempDir(), "c.safetensors")
	mustRun(t, "fit", "--embeddings", e.dir, "--out", comps, "--beta", "0")
	out := filepath.Join(t.TempDir(), "W.npy")
	r := run(t, "solve", "--components", comps, "--preference", "few=1", "--out", out)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "solving react for few=1") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("a failed solve wrote its output")
	}
	// A positive β makes it solvable.
	mustRun(t, "solve", "--components", comps, "--preference", "few=1", "--beta", "1", "--out", out)
}

// scaledEmbeddings writes one task "x" of n×d paired features to a new
// directory, the merged ones multiplied by mtlScale (column j also by
// colScale[j] when given) and the expert's by indScale.
func scaledEmbeddings(t *testing.T, n, d int, mtlScale, indScale float64, colScale []float64) string {
	t.Helper()
	dir := t.TempDir()
	mtl, ind := pairstest.Features(rand.New(rand.NewPCG(3, 4)), n, d)
	mtl.Apply(func(_, j int, v float64) float64 {
		if colScale != nil {
			v *= colScale[j]
		}
		return v * mtlScale
	}, mtl)
	ind.Scale(indScale, ind)
	writeNPY(t, filepath.Join(dir, "x"+embeddings.MergedSuffix), mtl, false)
	writeNPY(t, filepath.Join(dir, "x"+embeddings.ExpertSuffix), ind, false)
	return dir
}

// TestSolveFloat32Overflow checks that a W_p beyond float32's range is an
// error that explains itself, not a file of infinities.
func TestSolveFloat32Overflow(t *testing.T) {
	dir := scaledEmbeddings(t, 40, 3, 1e-20, 1e20, nil)
	comps := filepath.Join(t.TempDir(), "c.safetensors")
	mustRun(t, "fit", "--embeddings", dir, "--out", comps, "--beta", "0")
	out := filepath.Join(t.TempDir(), "W.npy")
	for _, method := range []string{MethodReact, MethodSingle, MethodNaive} {
		r := run(t, "solve", "--components", comps, "--preference", "x=1", "--method", method, "--out", out)
		if r.code != ExitFailure {
			t.Errorf("%s: exit %d, want %d", method, r.code, ExitFailure)
		}
		for _, want := range []string{"W_p for x=1 (method " + method + ", beta=0) does not fit in float32, nothing written",
			"is beyond float32's range", "rescale the features", "raise β"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: stderr %q does not contain %q", method, r.stderr, want)
			}
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: an overflowing W_p was written", method)
		}
	}
}

// TestSolveWarnsIllConditioned checks that solve writes W_p but warns on
// stderr when the estimated condition number of C_p exceeds
// react.WarnCondition, and is silent below it.
func TestSolveWarnsIllConditioned(t *testing.T) {
	// The third feature is 1e-5 times the others: cond(G) ≈ 1e10.
	dir := scaledEmbeddings(t, 50, 3, 1, 1, []float64{1, 1, 1e-5})
	comps := filepath.Join(t.TempDir(), "c.safetensors")
	mustRun(t, "fit", "--embeddings", dir, "--out", comps, "--beta", "0")
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--beta", "0"}, true},
		{[]string{"--beta", "0", "--method", "single"}, true},
		{[]string{"--beta", "0", "--method", "polar"}, true},
		{[]string{"--beta", "0", "--normalize", "mean"}, true},
		{[]string{"--beta", "1"}, false},
		{[]string{"--beta", "1", "--method", "naive"}, false},
	} {
		out := filepath.Join(t.TempDir(), "W.npy")
		r := mustRun(t, append([]string{"solve", "--components", comps, "--preference", "x=1", "--out", out}, tc.args...)...)
		warned := strings.Contains(r.stderr, "calibrate: warning: the estimated condition number of C_p for x=1 is ")
		if warned != tc.warn {
			t.Errorf("%v: warned %v, want %v; stderr %q", tc.args, warned, tc.warn, r.stderr)
		}
		if tc.warn && !strings.Contains(r.stderr, "> 1e+08: β is too small for the data") {
			t.Errorf("%v: stderr %q lacks the limit and the advice", tc.args, r.stderr)
		}
		if _, err := os.Stat(out); err != nil {
			t.Errorf("%v: W_p not written: %v", tc.args, err)
		}
	}
}

// TestSolveRefusesOverwritingComponents checks that --out naming the
// components file, however spelled, is a usage error caught before
// anything is computed, and leaves the file intact.
func TestSolveRefusesOverwritingComponents(t *testing.T) {
	_, comps := fitted(t)
	before, err := os.ReadFile(comps)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(comps)
	link := filepath.Join(t.TempDir(), "link.safetensors")
	if err := os.Symlink(comps, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.safetensors")
	if err := os.Link(comps, hard); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, comps)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, components, out string }{
		{"same path", comps, comps},
		{"relative path", comps, rel},
		{"dotted path", comps, filepath.Join(dir, ".", "..", filepath.Base(dir), filepath.Base(comps))},
		{"symbolic link as --out", comps, link},
		{"symbolic link as --components", link, comps},
		{"hard link", comps, hard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// An unknown task would be a usage error too: the check comes
			// first, before the preference is even parsed.
			r := run(t, "solve", "--components", tc.components, "--preference", "cars=1", "--out", tc.out)
			if r.code != ExitUsage || !strings.Contains(r.stderr, "is the components file") {
				t.Errorf("exit %d, stderr %q; want a usage error", r.code, r.stderr)
			}
			after, err := os.ReadFile(comps)
			if err != nil || !bytes.Equal(after, before) {
				t.Fatalf("the components file changed: %v", err)
			}
		})
	}
}
