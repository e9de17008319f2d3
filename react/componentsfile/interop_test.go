package componentsfile

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/reacttest"
	"github.com/mergectl/react-triton/react/safetensors"

	"github.com/mergectl/react-triton/internal/testutil"
)

// python returns the project virtual environment's interpreter. Without it
// the interop tests skip, unless REACT_E2E=1 (as in CI), where they fail.
func python(t *testing.T) string {
	t.Helper()
	py, err := filepath.Abs(filepath.Join("..", "..", ".venv", "bin", "python"))
	if err == nil {
		if _, err = os.Stat(py); err == nil {
			return py
		}
	}
	testutil.Require(t, false, "no project Python (%v): run make setup", err)
	return ""
}

// runPython runs a script under testdata and decodes its JSON output.
func runPython(t *testing.T, out any, script string, args ...string) {
	t.Helper()
	py := python(t)
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", script)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("%s: decoding its output: %v\n%s", script, err, stdout.String())
	}
}

// TestPythonReadsComponents has numpy and Python's safetensors read a file
// written by Go, check its metadata and checksum, and recompute each task's
// single-task correction, which must match the solver's.
func TestPythonReadsComponents(t *testing.T) {
	for _, norm := range []react.Normalization{react.NormSum, react.NormMean} {
		t.Run(string(norm), func(t *testing.T) {
			c := reacttest.Components(t, 4, 11, "cars", "dtd")
			c.Normalization = norm
			c.Beta = 0.3
			path := filepath.Join(t.TempDir(), "c.safetensors")
			if err := Save(path, c); err != nil {
				t.Fatal(err)
			}
			var got struct {
				SHA256OK         bool    `json:"sha256_ok"`
				MetadataSHA256OK bool    `json:"metadata_sha256_ok"`
				D                int     `json:"d"`
				Beta             float64 `json:"beta"`
				Tasks            map[string]struct {
					N       int64       `json:"n"`
					Expert  string      `json:"expert"`
					OrthErr float64     `json:"orth_err"`
					SymErr  float64     `json:"sym_err"`
					WHat    [][]float64 `json:"w_hat"`
				} `json:"tasks"`
			}
			runPython(t, &got, "read_components.py", path)
			if !got.SHA256OK || !got.MetadataSHA256OK || got.D != 4 || got.Beta != 0.3 || len(got.Tasks) != 2 {
				t.Fatalf("python read: %+v", got)
			}
			s, err := react.NewSolver(c, react.DefaultOptions(c))
			if err != nil {
				t.Fatal(err)
			}
			for _, ts := range c.Tasks {
				pt := got.Tasks[ts.Name]
				if pt.N != ts.N || pt.Expert != ts.Expert.Name {
					t.Errorf("task %s: python sees N=%d expert=%q", ts.Name, pt.N, pt.Expert)
				}
				if pt.OrthErr > 1e-12 || pt.SymErr != 0 {
					t.Errorf("task %s: python finds ‖WᵀW − I‖ = %g, ‖G − Gᵀ‖ = %g", ts.Name, pt.OrthErr, pt.SymErr)
				}
				w, err := s.Single(ts.Name)
				if err != nil {
					t.Fatal(err)
				}
				var flat []float64
				for _, row := range pt.WHat {
					flat = append(flat, row...)
				}
				if !mat.EqualApprox(w, mat.NewDense(4, 4, flat), 1e-9) {
					t.Errorf("task %s: Ŵ differs between Go and numpy:\ngo %v\nnumpy %v", ts.Name, mat.Formatted(w), pt.WHat)
				}
			}
		})
	}
}

// TestPythonVerifiesMetadata has Python check the metadata checksum of a
// file whose header was edited after Go wrote it: Python's independent
// implementation of the encoding must see the mismatch, as Go does.
func TestPythonVerifiesMetadata(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, reacttest.Components(t, 3, 12, "cars", "dtd")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		edit   func(md map[string]string)
		wantOK bool
	}{
		{"as written", func(map[string]string) {}, true},
		{"n edited", func(md map[string]string) { md["task.cars.n"] = "4" }, false},
		{"beta edited", func(md map[string]string) { md["beta"] = "0.2" }, false},
		{"unicode key added and signed", func(md map[string]string) {
			md["note.é"] = "β,1:x"
			md[MetaMetadataSHA256] = MetadataSHA256(md)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := rewriteFile(t, buf.Bytes(), false, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
				tc.edit(md)
				return ts
			})
			path := filepath.Join(t.TempDir(), "c.safetensors")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var got struct {
				SHA256OK         bool `json:"sha256_ok"`
				MetadataSHA256OK bool `json:"metadata_sha256_ok"`
			}
			runPython(t, &got, "read_components.py", path)
			if !got.SHA256OK || got.MetadataSHA256OK != tc.wantOK {
				t.Errorf("python: %+v, want metadata_sha256_ok %v", got, tc.wantOK)
			}
			if _, err := Parse(b); (err == nil) != tc.wantOK {
				t.Errorf("Go: %v, want success %v", err, tc.wantOK)
			}
		})
	}
}

// TestGoReadsPythonFiles has Python's safetensors write a generic file and a
// whole components file, which Go must read back value for value.
func TestGoReadsPythonFiles(t *testing.T) {
	dir := t.TempDir()
	var want struct {
		Generic struct {
			X [][]float64 `json:"x"`
			Y []float64   `json:"y"`
			Z [][]int32   `json:"z"`
		} `json:"generic"`
		Components map[string]struct {
			N     int64       `json:"n"`
			S     [][]float64 `json:"S"`
			G     [][]float64 `json:"G"`
			WOrth [][]float64 `json:"W_orth"`
		} `json:"components"`
	}
	runPython(t, &want, "write_safetensors.py", dir)

	f, err := safetensors.ReadFile(filepath.Join(dir, "generic.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Metadata, map[string]string{"k": "v", "unicode": "éβ"}) {
		t.Errorf("metadata = %v", f.Metadata)
	}
	x, _ := f.Tensor("x")
	xv, err := x.Float64s()
	if err != nil || !reflect.DeepEqual(x.Shape, []int{2, 3}) || !reflect.DeepEqual(xv, append(want.Generic.X[0], want.Generic.X[1]...)) {
		t.Errorf("x = %v %v, %v", x.Shape, xv, err)
	}
	y, _ := f.Tensor("y")
	if y.DType != safetensors.F32 || len(y.Data) != 12 {
		t.Errorf("y: %s with %d bytes", y.DType, len(y.Data))
	} else {
		for i, w := range want.Generic.Y {
			bits := uint32(y.Data[4*i]) | uint32(y.Data[4*i+1])<<8 | uint32(y.Data[4*i+2])<<16 | uint32(y.Data[4*i+3])<<24
			if got := math.Float32frombits(bits); float64(got) != float64(float32(w)) {
				t.Errorf("y[%d] = %v, want %v", i, got, w)
			}
		}
	}
	z, _ := f.Tensor("z")
	if z.DType != safetensors.I32 || !reflect.DeepEqual(z.Shape, []int{2, 2}) || int32(uint32(z.Data[4])|uint32(z.Data[5])<<8|uint32(z.Data[6])<<16|uint32(z.Data[7])<<24) != want.Generic.Z[0][1] {
		t.Errorf("z = %+v", z)
	}
	if e, ok := f.Tensor("empty"); !ok || !reflect.DeepEqual(e.Shape, []int{0, 5}) || len(e.Data) != 0 {
		t.Errorf("empty = %+v", e)
	}

	c, err := Load(filepath.Join(dir, "components.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if c.D != 3 || c.Beta != 0.25 || c.Normalization != react.NormMean || c.Backbone != (react.ModelRef{Name: "merged", Output: "feat"}) ||
		!reflect.DeepEqual(c.TaskNames(), []string{"p", "q"}) {
		t.Fatalf("components = %+v", c)
	}
	flat := func(m [][]float64) []float64 {
		var v []float64
		for _, r := range m {
			v = append(v, r...)
		}
		return v
	}
	for _, ts := range c.Tasks {
		w := want.Components[ts.Name]
		if ts.N != w.N || ts.Expert.Name != "expert_"+ts.Name {
			t.Errorf("task %s: N=%d expert %+v", ts.Name, ts.N, ts.Expert)
		}
		// Bit for bit: JSON carries the shortest exact decimal of each float64.
		if !mat.Equal(ts.S, mat.NewDense(3, 3, flat(w.S))) || !mat.Equal(ts.G, mat.NewDense(3, 3, flat(w.G))) ||
			!mat.Equal(ts.WOrth, mat.NewDense(3, 3, flat(w.WOrth))) {
			t.Errorf("task %s: matrices differ from what Python wrote", ts.Name)
		}
	}
}
