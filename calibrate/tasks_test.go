package calibrate

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/safetensors"
)

// tensorData returns the raw bytes of each tensor in a safetensors file.
func tensorData(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte)
	for _, info := range f.Tensors {
		tt, _ := f.Tensor(info.Name)
		out[info.Name] = tt.Data
	}
	return out
}

func TestTasksAddRemove(t *testing.T) {
	e := writeEmbeddings(t, 4, []string{"a", "b", "c"}, []int{20, 21, 22}, []bool{false, false, false})
	dir := t.TempDir()
	ab := filepath.Join(dir, "ab.safetensors")
	c := filepath.Join(dir, "c.safetensors")
	abc := filepath.Join(dir, "abc.safetensors")
	ac := filepath.Join(dir, "ac.safetensors")
	mustRun(t, "fit", "--embeddings", e.dir, "--tasks", "a,b", "--out", ab)
	mustRun(t, "fit", "--embeddings", e.dir, "--tasks", "c", "--beta", "7", "--out", c)

	r := mustRun(t, "tasks", "add", "--components", ab, "--from", c, "--out", abc)
	if !strings.Contains(r.stdout, "tasks a,b,c") {
		t.Errorf("stdout %q", r.stdout)
	}
	r = mustRun(t, "tasks", "remove", "--components", abc, "--task", "b", "--out", ac)
	if !strings.Contains(r.stdout, "tasks a,c") {
		t.Errorf("stdout %q", r.stdout)
	}

	// Every tensor of the result is bit-identical to the one it came from.
	orig := tensorData(t, ab)
	for k, v := range tensorData(t, c) {
		orig[k] = v
	}
	got := tensorData(t, ac)
	if len(got) != 6 {
		t.Errorf("%d tensors, want 6", len(got))
	}
	for name, b := range got {
		if !bytes.Equal(b, orig[name]) {
			t.Errorf("tensor %s changed", name)
		}
	}
	comps, err := componentsfile.Load(ac)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(comps.TaskNames(), []string{"a", "c"}) || comps.Beta != config.DefaultCalibrateBeta {
		t.Errorf("tasks %v, beta %v: want [a c] and the destination's %v", comps.TaskNames(), comps.Beta, config.DefaultCalibrateBeta)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"add duplicate", []string{"tasks", "add", "--components", abc, "--from", c, "--out", filepath.Join(dir, "x")}, ExitFailure, `task "c" is already present`},
		{"remove unknown", []string{"tasks", "remove", "--components", abc, "--task", "zz", "--out", filepath.Join(dir, "x")}, ExitUsage, `unknown task "zz" (known: a, b, c)`},
		{"remove all", []string{"tasks", "remove", "--components", ab, "--task", "a,b", "--out", filepath.Join(dir, "x")}, ExitUsage, "every task"},
		{"missing --out", []string{"tasks", "remove", "--components", ab, "--task", "a"}, ExitUsage, `required flag(s) "out" not set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", r.code, tc.code, r.stderr, tc.want)
			}
		})
	}
}
