package calibrate

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/calibrate/embeddings"
	"github.com/mergectl/react-triton/calibrate/pairs/pairstest"
	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// embeddingDir is a test embeddings directory and the data written to it.
type embeddingDir struct {
	dir  string
	data map[string][2]*mat.Dense // task → merged, expert
}

// writeEmbeddings writes tasks with n[i] rows each, float32 when f32[i].
func writeEmbeddings(t *testing.T, d int, names []string, ns []int, f32 []bool) *embeddingDir {
	t.Helper()
	e := &embeddingDir{dir: t.TempDir(), data: make(map[string][2]*mat.Dense)}
	rng := rand.New(rand.NewPCG(uint64(d), 99))
	for i, name := range names {
		mtl, ind := pairstest.Features(rng, ns[i], d)
		if f32[i] {
			// Round to float32 so the expected statistics see the same values.
			round := func(_, _ int, v float64) float64 { return float64(float32(v)) }
			mtl.Apply(round, mtl)
			ind.Apply(round, ind)
		}
		writeNPY(t, filepath.Join(e.dir, name+embeddings.MergedSuffix), mtl, f32[i])
		writeNPY(t, filepath.Join(e.dir, name+embeddings.ExpertSuffix), ind, f32[i])
		e.data[name] = [2]*mat.Dense{mtl, ind}
	}
	return e
}

func TestFitStatistics(t *testing.T) {
	e := writeEmbeddings(t, 5, []string{"cars", "dtd"}, []int{53, 31}, []bool{true, false})
	for _, chunk := range []string{"7", "4096"} {
		t.Run("chunk="+chunk, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "c.safetensors")
			r := mustRun(t, "fit", "--embeddings", e.dir, "--out", out, "--beta", "0.25", "--normalize", "mean",
				"--chunk", chunk, "--backbone-model", "merged", "--backbone-version", "2", "--backbone-output", "feat",
				"--expert", "cars=vit_cars:1:emb", "--expert", "dtd=vit_dtd")
			if !strings.Contains(r.stdout, "task cars: N=53") || !strings.Contains(r.stdout, "2 tasks, D=5, beta=0.25, normalization=mean") {
				t.Errorf("stdout:\n%s", r.stdout)
			}
			// Without a terminal, progress is a log line per task.
			if want := "task cars: 53/53 samples (100%)"; !strings.Contains(r.stderr, want) {
				t.Errorf("stderr %q has no line %q", r.stderr, want)
			}
			c, err := componentsfile.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if c.D != 5 || c.Beta != 0.25 || c.Normalization != react.NormMean ||
				c.Backbone != (react.ModelRef{Name: "merged", Version: "2", Output: "feat"}) {
				t.Errorf("components header: %+v", c)
			}
			if !reflect.DeepEqual(c.TaskNames(), []string{"cars", "dtd"}) {
				t.Errorf("tasks = %v", c.TaskNames())
			}
			experts := map[string]react.ModelRef{
				"cars": {Name: "vit_cars", Version: "1", Output: "emb"},
				"dtd":  {Name: "vit_dtd"},
			}
			for _, ts := range c.Tasks {
				mtl, ind := e.data[ts.Name][0], e.data[ts.Name][1]
				n, _ := mtl.Dims()
				if ts.N != int64(n) || ts.Expert != experts[ts.Name] {
					t.Errorf("task %s: N=%d expert=%+v", ts.Name, ts.N, ts.Expert)
				}
				// S = Σ z_ind z_mtlᵀ = INDᵀ MTL and G = MTLᵀ MTL, from the raw data.
				var s, g mat.Dense
				s.Mul(ind.T(), mtl)
				g.Mul(mtl.T(), mtl)
				if !mat.EqualApprox(ts.S, &s, 1e-9) || !mat.EqualApprox(ts.G, &g, 1e-9) {
					t.Errorf("task %s: S or G differs from the raw data's", ts.Name)
				}
				var wtw mat.Dense
				wtw.Mul(ts.WOrth.T(), ts.WOrth)
				if !mat.EqualApprox(&wtw, eye(5), 1e-12) {
					t.Errorf("task %s: W_orth is not orthogonal", ts.Name)
				}
				// Σ ‖z_ind‖², and the recorded error of Ŵ_t (β = 0.25, mean)
				// on the raw rows, Ŵ_t from C_t Ŵ_tᵀ = A_tᵀ (C_t symmetric).
				yy := mat.Norm(ind, 2) // Frobenius
				yy *= yy
				if math.Abs(ts.SumSquares-yy) > 1e-12*yy {
					t.Errorf("task %s: SumSquares = %v, raw data %v", ts.Name, ts.SumSquares, yy)
				}
				var a, cc, wt, r mat.Dense
				a.Scale(1/float64(n), &s)
				a.Apply(func(i, j int, v float64) float64 { return v + 0.25*ts.WOrth.At(i, j) }, &a)
				cc.Scale(1/float64(n), &g)
				cc.Apply(func(i, j int, v float64) float64 { return v + 0.25*eye(5).At(i, j) }, &cc)
				if err := wt.Solve(&cc, a.T()); err != nil {
					t.Fatal(err)
				}
				r.Mul(mtl, &wt) // rows Ŵ_t z_mtl
				r.Sub(&r, ind)
				want := mat.Norm(&r, 2)
				want = want * want / yy
				if math.Abs(ts.ReconError-want) > 1e-9*want {
					t.Errorf("task %s: ReconError = %.12g, raw data %.12g", ts.Name, ts.ReconError, want)
				}
			}
		})
	}
}

func eye(d int) *mat.Dense {
	m := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		m.Set(i, i, 1)
	}
	return m
}

func TestFitTasksFlagAndProgress(t *testing.T) {
	e := writeEmbeddings(t, 3, []string{"a", "b", "c"}, []int{10, 11, 12}, []bool{false, false, false})
	out := filepath.Join(t.TempDir(), "c.safetensors")
	r := mustRun(t, "fit", "--embeddings", e.dir, "--out", out, "--tasks", "c,a", "--progress", "always")
	// One bar per task.
	if !strings.Contains(r.stderr, "task c 100%") || !strings.Contains(r.stderr, "(12/12,") || !strings.Contains(r.stderr, "(10/10,") {
		t.Errorf("--progress: stderr %q shows no bar per task reaching 12/12 and 10/10", r.stderr)
	}
	// --quiet: no progress at all, but the summary.
	r = mustRun(t, "fit", "--embeddings", e.dir, "--out", out, "--tasks", "c,a", "--quiet")
	if r.stderr != "" || !strings.Contains(r.stdout, "task c: N=12, 12 samples in ") || !strings.Contains(r.stdout, "cond(C)=") {
		t.Errorf("--quiet: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	c, err := componentsfile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.TaskNames(), []string{"c", "a"}) || c.Beta != config.DefaultCalibrateBeta || c.Normalization != react.NormSum {
		t.Errorf("tasks %v, beta %v, normalization %v; want [c a], the defaults %v and sum", c.TaskNames(), c.Beta, c.Normalization, config.DefaultCalibrateBeta)
	}
}

// rawNPY writes a .npy file with a literal header dictionary.
func rawNPY(t *testing.T, path, dict string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, npyBytes(dict, data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFitRefuses(t *testing.T) {
	good := func(t *testing.T, dir, name string, n, d int) {
		mtl, ind := pairstest.Features(rand.New(rand.NewPCG(1, 2)), n, d)
		writeNPY(t, filepath.Join(dir, name+embeddings.MergedSuffix), mtl, false)
		writeNPY(t, filepath.Join(dir, name+embeddings.ExpertSuffix), ind, false)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		args  []string
		code  int
		want  []string // substrings of stderr
	}{
		{"missing pair", func(t *testing.T, dir string) {
			good(t, dir, "a", 10, 3)
			mtl, _ := pairstest.Features(rand.New(rand.NewPCG(1, 2)), 10, 3)
			writeNPY(t, filepath.Join(dir, "b"+embeddings.MergedSuffix), mtl, false)
		}, nil, ExitFailure, []string{"task b:", "b.expert.npy is missing"}},
		{"missing listed task", func(t *testing.T, dir string) { good(t, dir, "a", 10, 3) },
			[]string{"--tasks", "a,z"}, ExitFailure, []string{"z.merged.npy", "no such file"}},
		{"empty directory", func(t *testing.T, dir string) {}, nil, ExitFailure, []string{"no embeddings in"}},
		{"mismatched N", func(t *testing.T, dir string) {
			mtl, _ := pairstest.Features(rand.New(rand.NewPCG(1, 2)), 10, 3)
			_, ind := pairstest.Features(rand.New(rand.NewPCG(1, 2)), 9, 3)
			writeNPY(t, filepath.Join(dir, "a"+embeddings.MergedSuffix), mtl, false)
			writeNPY(t, filepath.Join(dir, "a"+embeddings.ExpertSuffix), ind, false)
		}, nil, ExitFailure, []string{"a.merged.npy has 10 rows but", "a.expert.npy has 9"}},
		{"mismatched D in a pair", func(t *testing.T, dir string) {
			mtl, _ := pairstest.Features(rand.New(rand.NewPCG(1, 2)), 10, 3)
			_, ind := pairstest.Features(rand.New(rand.NewPCG(1, 2)), 10, 4)
			writeNPY(t, filepath.Join(dir, "a"+embeddings.MergedSuffix), mtl, false)
			writeNPY(t, filepath.Join(dir, "a"+embeddings.ExpertSuffix), ind, false)
		}, nil, ExitFailure, []string{"a.merged.npy has D=3 but", "a.expert.npy has D=4"}},
		{"mismatched D across tasks", func(t *testing.T, dir string) {
			good(t, dir, "a", 10, 3)
			good(t, dir, "b", 10, 4)
		}, nil, ExitFailure, []string{"task b:", "b.merged.npy has D=4 but task a has D=3"}},
		{"int dtype", func(t *testing.T, dir string) {
			good(t, dir, "a", 4, 2)
			rawNPY(t, filepath.Join(dir, "a"+embeddings.ExpertSuffix), "{'descr': '<i4', 'fortran_order': False, 'shape': (4, 2), }", make([]byte, 32))
		}, nil, ExitFailure, []string{"a.expert.npy: dtype int32", "want float32 or float64"}},
		{"1-D array", func(t *testing.T, dir string) {
			good(t, dir, "a", 4, 2)
			rawNPY(t, filepath.Join(dir, "a"+embeddings.MergedSuffix), "{'descr': '<f8', 'fortran_order': False, 'shape': (8,), }", make([]byte, 64))
		}, nil, ExitFailure, []string{"a.merged.npy: array is 1-D", "want a 2-D N×D array"}},
		{"fortran order", func(t *testing.T, dir string) {
			good(t, dir, "a", 4, 2)
			rawNPY(t, filepath.Join(dir, "a"+embeddings.MergedSuffix), "{'descr': '<f8', 'fortran_order': True, 'shape': (4, 2), }", make([]byte, 64))
		}, nil, ExitFailure, []string{"a.merged.npy: array is in Fortran"}},
		{"truncated npy", func(t *testing.T, dir string) {
			good(t, dir, "a", 10, 3)
			path := filepath.Join(dir, "a"+embeddings.ExpertSuffix)
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)-5], 0o644)
		}, nil, ExitFailure, []string{"a.expert.npy: file is truncated"}},
		{"not npy", func(t *testing.T, dir string) {
			good(t, dir, "a", 10, 3)
			os.WriteFile(filepath.Join(dir, "a"+embeddings.ExpertSuffix), []byte("a,b,c\n1,2,3\n"), 0o644)
		}, nil, ExitFailure, []string{"a.expert.npy: not a .npy file"}},
		{"NaN in data", func(t *testing.T, dir string) {
			mtl, ind := pairstest.Features(rand.New(rand.NewPCG(1, 2)), 10, 3)
			mtl.Set(7, 1, math.NaN())
			writeNPY(t, filepath.Join(dir, "a"+embeddings.MergedSuffix), mtl, false)
			writeNPY(t, filepath.Join(dir, "a"+embeddings.ExpertSuffix), ind, false)
		}, nil, ExitFailure, []string{"task a:", "NaN"}},
		{"invalid task file name", func(t *testing.T, dir string) { good(t, dir, "a.b", 4, 2) }, nil, ExitFailure, []string{`invalid task name "a.b"`}},
		{"negative beta", func(t *testing.T, dir string) { good(t, dir, "a", 4, 2) }, []string{"--beta", "-1"}, ExitUsage, []string{"beta: invalid beta -1: want a finite number ≥ 0 (from --beta)"}},
		{"NaN beta", func(t *testing.T, dir string) { good(t, dir, "a", 4, 2) }, []string{"--beta", "NaN"}, ExitUsage, []string{"beta: invalid beta NaN: want a finite number ≥ 0 (from --beta)"}},
		{"bad normalize", func(t *testing.T, dir string) { good(t, dir, "a", 4, 2) }, []string{"--normalize", "max"}, ExitUsage, []string{`unknown normalization "max"`}},
		{"bad task name", func(t *testing.T, dir string) { good(t, dir, "a", 4, 2) }, []string{"--tasks", "a,b=c"}, ExitUsage, []string{`invalid task name "b=c"`}},
		{"duplicate task", func(t *testing.T, dir string) { good(t, dir, "a", 4, 2) }, []string{"--tasks", "a,a"}, ExitUsage, []string{`task "a" listed twice`}},
		{"bad expert", func(t *testing.T, dir string) { good(t, dir, "a", 4, 2) }, []string{"--expert", "a"}, ExitUsage, []string{"want task=model[:version[:output]]"}},
		{"expert of unknown task", func(t *testing.T, dir string) { good(t, dir, "a", 4, 2) }, []string{"--expert", "zz=m"}, ExitUsage, []string{`no embeddings for task "zz"`}},
		{"unknown flag", func(t *testing.T, dir string) { good(t, dir, "a", 4, 2) }, []string{"--bogus"}, ExitUsage, []string{"unknown flag: --bogus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			outDir := t.TempDir()
			out := filepath.Join(outDir, "c.safetensors")
			r := run(t, append([]string{"fit", "--embeddings", dir, "--out", out}, tc.args...)...)
			checkFailedFit(t, r, tc.code, tc.want, outDir)
		})
	}
	// An --out that is a directory is refused before any data are read.
	dir := t.TempDir()
	good(t, dir, "a", 4, 2)
	if r := run(t, "fit", "--embeddings", dir, "--out", t.TempDir()); r.code != ExitUsage || !strings.Contains(r.stderr, "is a directory, want a file name") {
		t.Errorf("fit --out DIR: exit %d, stderr %q", r.code, r.stderr)
	}
	// A missing required flag is a usage error.
	if r := run(t, "fit", "--out", "x"); r.code != ExitUsage || !strings.Contains(r.stderr, "triton.grpc: required: give triton.grpc (--triton HOST:PORT) and inputs, or embeddings (--embeddings DIR)") {
		t.Errorf("fit without --embeddings: exit %d, stderr %q", r.code, r.stderr)
	}
}
