package calibrate

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/safetensors"
)

// fixturePath is a components file whose numbers are known in closed form:
// see fixtureComponents.
const fixturePath = "testdata/fixture.safetensors"

// fixtureComponents returns components with D = 3, β = 1 and sums, whose
// Gram matrices are diagonal, so C_t = G_t + β I is diagonal and its
// condition number is (max g + β)/(min g + β):
//
//	alpha: G = diag(9, 4, 1)  → C = diag(10, 5, 2)   → cond 5
//	beta:  G = diag(3, 3, 3)  → C = 4 I              → cond 1
//	gamma: G = diag(99, 0, 0) → C = diag(100, 1, 1)  → cond 100
func fixtureComponents() *react.Components {
	diag := func(v ...float64) *mat.Dense {
		m := mat.NewDense(len(v), len(v), nil)
		for i, x := range v {
			m.Set(i, i, x)
		}
		return m
	}
	sym := func(v ...float64) *mat.SymDense {
		m := mat.NewSymDense(len(v), nil)
		for i, x := range v {
			m.SetSym(i, i, x)
		}
		return m
	}
	return &react.Components{
		D: 3, Beta: 1, Normalization: react.NormSum,
		Backbone: react.ModelRef{Name: "vit_b32_merged", Version: "1", Output: "features"},
		Tasks: []*react.TaskStats{
			{Name: "alpha", N: 10, S: diag(3, 2, 1), G: sym(9, 4, 1), WOrth: diag(1, 1, 1),
				Expert: react.ModelRef{Name: "vit_alpha", Version: "2", Output: "features"}},
			{Name: "beta", N: 7, S: diag(1, 1, 1), G: sym(3, 3, 3), WOrth: diag(1, 1, 1),
				Expert: react.ModelRef{Name: "vit_beta"}},
			{Name: "gamma", N: 2, S: diag(5, 0, 0), G: sym(99, 0, 0), WOrth: diag(1, 1, 1)},
		},
	}
}

// TestFixtureIsCurrent checks that the committed fixture is exactly what
// the writer produces today, so a change in the file format shows up here.
func TestFixtureIsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := componentsfile.Write(&b, fixtureComponents()); err != nil {
		t.Fatal(err)
	}
	golden(t, "fixture.safetensors", b.Bytes())
}

func TestInspectGolden(t *testing.T) {
	r := mustRun(t, "inspect", fixturePath)
	golden(t, "inspect.golden", []byte(r.stdout))
	r = mustRun(t, "inspect", "--json", fixturePath)
	golden(t, "inspect_json.golden", []byte(r.stdout))

	// The condition numbers are the closed-form ones.
	var rep inspectReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"alpha": 5, "beta": 1, "gamma": 100}
	for _, task := range rep.Tasks {
		if task.Cond == nil || math.Abs(*task.Cond-want[task.Name]) > 1e-12*want[task.Name] {
			t.Errorf("task %s: cond %v, want %v", task.Name, task.Cond, want[task.Name])
		}
	}
	if !rep.Checksum.OK || !rep.MetadataChecksum.OK || rep.D != 3 || rep.Beta != 1 || len(rep.Tasks) != 3 || rep.Tasks[2].N != 2 {
		t.Errorf("report: %+v", rep)
	}
}

func TestInspectCorrupt(t *testing.T) {
	good, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	flipData := func(b []byte) []byte {
		b[len(b)-1] ^= 0x01
		return b
	}
	// editN changes task gamma's N in the header without re-signing it.
	editN := func(b []byte) []byte {
		f, err := safetensors.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		f.Metadata[componentsfile.MetaTaskKey("gamma", "n")] = "20"
		var ts []safetensors.Tensor
		for _, ti := range f.Tensors {
			tt, _ := f.Tensor(ti.Name)
			ts = append(ts, tt)
		}
		out, err := safetensors.Marshal(ts, f.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		name           string
		corrupt        func([]byte) []byte
		dataOK, metaOK bool
		stdout         []string
		stderr         string
	}{
		{"data", flipData, false, true,
			[]string{"checksum:           MISMATCH: file is corrupt", "metadata checksum:  ok", "gamma  2"},
			"checksum mismatch: file is corrupt"},
		{"metadata", editN, true, false,
			[]string{"checksum:           ok", "metadata checksum:  MISMATCH: the header was edited or is corrupt", "gamma  20"},
			"metadata checksum mismatch: the header was edited or is corrupt"},
		{"both", func(b []byte) []byte { return flipData(editN(b)) }, false, false,
			[]string{"checksum:           MISMATCH: file is corrupt", "metadata checksum:  MISMATCH", "gamma  20"},
			"checksum mismatch: file is corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "corrupt.safetensors")
			if err := os.WriteFile(path, tc.corrupt(append([]byte(nil), good...)), 0o644); err != nil {
				t.Fatal(err)
			}
			r := run(t, "inspect", path)
			if r.code != ExitFailure {
				t.Errorf("exit %d, want %d", r.code, ExitFailure)
			}
			for _, want := range append(tc.stdout, "alpha  10", "D:                  3") {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout does not contain %q:\n%s", want, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr: %q, want %q", r.stderr, tc.stderr)
			}
			r = run(t, "inspect", "--json", path)
			var rep inspectReport
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatal(err)
			}
			if r.code != ExitFailure || rep.Checksum.OK != tc.dataOK || rep.MetadataChecksum.OK != tc.metaOK ||
				rep.Error == "" || rep.Tasks[0].Cond != nil {
				t.Errorf("--json on a corrupt file: exit %d, %+v", r.code, rep)
			}
		})
	}

	path := filepath.Join(t.TempDir(), "truncated.safetensors")
	b := flipData(append([]byte(nil), good...))
	// A truncated file has no readable header: nothing but the error.
	if err := os.WriteFile(path, b[:len(b)-8], 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "inspect", path); r.code != ExitFailure || !strings.Contains(r.stderr, "truncated") {
		t.Errorf("truncated: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestInspectWarnsIllConditioned checks that inspect flags a C_t whose
// condition number exceeds react.WarnCondition, the limit solve warns at.
func TestInspectWarnsIllConditioned(t *testing.T) {
	for _, tc := range []struct {
		g    float64 // C = diag(g + 1, 1, 1) at β = 1: cond g + 1
		warn bool
	}{{1e7, false}, {1e8 - 2, false}, {1e8, true}, {1e12, true}} {
		c := fixtureComponents()
		c.Tasks = c.Tasks[:1]
		c.Tasks[0].G.SetSym(0, 0, tc.g)
		c.Tasks[0].G.SetSym(1, 1, 0)
		c.Tasks[0].G.SetSym(2, 2, 0)
		path := filepath.Join(t.TempDir(), "c.safetensors")
		if err := componentsfile.Save(path, c); err != nil {
			t.Fatal(err)
		}
		r := mustRun(t, "inspect", path)
		want := "warning: task alpha: COND(C_t) > 1e+08: β is too small for the data"
		if got := strings.Contains(r.stdout, want); got != tc.warn {
			t.Errorf("G_00 = %g: warning %v, want %v:\n%s", tc.g, got, tc.warn, r.stdout)
		}
	}
}

func TestInspectUsage(t *testing.T) {
	for _, args := range [][]string{{"inspect"}, {"inspect", "a", "b"}, {"inspect", "--yaml", fixturePath}} {
		if r := run(t, args...); r.code != ExitUsage || !strings.Contains(r.stderr, "Run 'calibrate inspect --help' for usage.") {
			t.Errorf("calibrate %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

func TestHelpGolden(t *testing.T) {
	for _, args := range [][]string{
		{"--help"},
		{"fit", "--help"},
		{"solve", "--help"},
		{"inspect", "--help"},
		{"tasks", "--help"},
		{"tasks", "add", "--help"},
		{"tasks", "remove", "--help"},
		{"experiment", "--help"},
		{"experiment", "assign", "--help"},
		{"experiment", "report", "--help"},
		{"eval", "--help"},
		{"upgrade", "--help"},
	} {
		name := strings.Join(append([]string{"calibrate"}, args[:len(args)-1]...), "_")
		t.Run(name, func(t *testing.T) {
			r := mustRun(t, args...)
			golden(t, filepath.Join("help", name+".golden"), []byte(r.stdout))
		})
	}
}

func TestUnknownCommand(t *testing.T) {
	r := run(t, "frobnicate")
	if r.code != ExitUsage || !strings.Contains(r.stderr, `unknown command "frobnicate"`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
