package calibrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/livestats"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/safetensors"
)

// withOut returns args with --out replaced by out.
func withOut(args []string, out string) []string {
	a := slices.Clone(args)
	a[slices.Index(a, "--out")+1] = out
	return a
}

// TestFitShardsMerge fits 4 shards and merges them: the statistics equal
// one fit's to float64 rounding. Shards missing or given twice are refused.
func TestFitShardsMerge(t *testing.T) {
	addr := startFakeServer(t, fakeZoo())
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.safetensors")
	args := zooArgs(t, addr, whole)
	mustRun(t, args...)
	var parts []string
	for i := 3; i >= 0; i-- { // any order
		part := filepath.Join(dir, fmt.Sprintf("part%d.safetensors", i))
		r := mustRun(t, append(withOut(args, part), "--shard", fmt.Sprintf("%d/4", i))...)
		if !strings.Contains(r.stdout, "partial statistics") {
			t.Errorf("shard %d: stdout %q", i, r.stdout)
		}
		parts = append(parts, part)
	}
	merged := filepath.Join(dir, "merged.safetensors")
	mustRun(t, append(append([]string{"merge"}, parts...), "--out", merged)...)
	want, err := componentsfile.Load(whole)
	if err != nil {
		t.Fatal(err)
	}
	got, err := componentsfile.Load(merged)
	if err != nil {
		t.Fatal(err)
	}
	if got.Backbone != want.Backbone || !slices.Equal(got.TaskNames(), want.TaskNames()) || got.Beta != want.Beta {
		t.Errorf("merged header %+v, want %+v", got, want)
	}
	for i, w := range want.Tasks {
		g := got.Tasks[i]
		if g.N != w.N || g.Expert != w.Expert || !mat.EqualApprox(g.S, w.S, 1e-12) || !mat.EqualApprox(g.G, w.G, 1e-12) {
			t.Errorf("task %s: merged statistics differ from one fit's (N %d vs %d)", w.Name, g.N, w.N)
		}
	}
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{parts[:3], "shard 0/4 missing: merge needs all 4 shards"},
		{append(parts[:3:3], parts[2]), "are both shard 1/4"},
		{[]string{whole}, "not a partial-statistics file"},
	} {
		r := run(t, append(append([]string{"merge"}, tc.parts...), "--out", merged)...)
		if r.code != ExitFailure || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("merge %v: exit %d, stderr %q, want %q", tc.parts, r.code, r.stderr, tc.want)
		}
	}
	// The live files' flags, and a live file among the shards.
	live := replica(t, t.TempDir(), "sidecar-0", 2)
	x, _ := live.Admit(livestats.Request{Model: "model_a"})
	if err := x.Add([]float32{1, 2}, []float32{3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := live.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--base", whole}, ExitUsage, "--base: only with the sidecars' live files"},
		{[]string{"--min-samples", "3"}, ExitUsage, "--min-samples: only with the sidecars' live files"},
		{[]string{"--beta", "auto"}, ExitUsage, "--beta auto: only with the sidecars' live files"},
		{[]string{live.Path()}, ExitFailure, "is a live file but"},
	} {
		r := run(t, append(append(append([]string{"merge"}, parts...), tc.args...), "--out", merged)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("merge shards %v: exit %d, stderr %q, want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}

// tensorBytes returns the raw bytes of a file's tensors by name.
func tensorBytes(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, h := range f.Header.Tensors {
		tt, _ := f.Tensor(h.Name)
		m[h.Name] = tt.Data
	}
	return m
}

// TestFitOnlyInto builds a file task by task with --only and --into, and
// checks it against one fit of both tasks; replacing a task leaves the
// other's bytes as they were; another backbone is refused.
func TestFitOnlyInto(t *testing.T) {
	f := fakeZoo()
	f.models["other"] = featureModel(5, "FP32")
	addr := startFakeServer(t, f)
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.safetensors")
	args := zooArgs(t, addr, whole)
	mustRun(t, args...)

	built := filepath.Join(dir, "built.safetensors")
	onlyA := withOut(args, built)
	i := slices.Index(onlyA, "b=expert_b")
	onlyA = append(onlyA[:i-1:i-1], onlyA[i+1:]...)
	mustRun(t, append(onlyA, "--tasks", "a")...)
	noOut := func(a []string) []string {
		i := slices.Index(a, "--out")
		return append(slices.Clone(a[:i]), a[i+2:]...)
	}
	mustRun(t, append(noOut(args), "--only", "b", "--into", built)...)
	if !bytes.Equal(readFile(t, built), readFile(t, whole)) {
		t.Error("the file built task by task differs from one fit of both")
	}

	// Replace a with a fit on half its samples: b's bytes stay.
	before := tensorBytes(t, built)
	mustRun(t, append(noOut(args), "--only", "a", "--into", built, "--fraction", "0.5", "--seed", "9")...)
	after := tensorBytes(t, built)
	for _, name := range []string{"b.S", "b.G", "b.W_orth"} {
		if !bytes.Equal(before[name], after[name]) {
			t.Errorf("tensor %s changed when task a was replaced", name)
		}
	}
	c, err := componentsfile.Load(built)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Task("a")
	if a.N != 19 || a.Provenance["subset.fraction"] != "0.5" || a.Provenance["subset.seed"] != "9" || a.Provenance["subset.available"] != "37" {
		t.Errorf("task a after --fraction 0.5: N=%d, provenance %v", a.N, a.Provenance)
	}
	if !slices.Equal(c.TaskNames(), []string{"a", "b"}) {
		t.Errorf("tasks %v after replacing a", c.TaskNames())
	}
	// inspect shows the subset: a's, and b's every sample.
	out := mustRun(t, "inspect", built).stdout
	if !regexp.MustCompile(`(?m)^a +19 .* 19 of 37 \(fraction 0\.5, seed 9\)$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^b +23 .* all$`).MatchString(out) {
		t.Errorf("inspect does not show the subsets:\n%s", out)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", built).stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"subset.fraction": "0.5", "subset.seed": "9", "subset.available": "37", "subset.used": "19"}; !maps.Equal(rep.Tasks[0].Provenance, want) || rep.Tasks[1].Provenance != nil {
		t.Errorf("inspect --json provenance: %v and %v, want %v and none", rep.Tasks[0].Provenance, rep.Tasks[1].Provenance, want)
	}

	r := run(t, append(noOut(args), "--only", "a", "--into", built, "--backbone-model", "other")...)
	if r.code != ExitFailure || !strings.Contains(r.stderr, `its tasks were calibrated against backbone "merged" version "7"`) {
		t.Errorf("--into with another backbone: exit %d, stderr %q", r.code, r.stderr)
	}
}
