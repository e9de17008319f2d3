package calibrate

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mergectl/react-triton/livestats"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// replica returns a sidecar replica's sampler writing to dir, every
// request sampled.
func replica(t *testing.T, dir, name string, d int) *livestats.Sampler {
	t.Helper()
	s := livestats.DefaultSettings()
	s.Enabled, s.Fraction, s.Holdout, s.MaxConcurrent = true, 1, 0.25, 1
	s.Dir, s.Replica = dir, name
	s.Backbone = react.ModelRef{Name: "merged", Output: "feature"}
	s.Tasks = []livestats.TaskSettings{{Name: "a", Expert: react.ModelRef{Name: "expert_a", Output: "feature"}}}
	s.Models = []livestats.ModelSettings{{Name: "model_a", Task: "a"}}
	sm, err := livestats.New(s, d)
	if err != nil {
		t.Fatal(err)
	}
	return sm
}

// TestMergeLiveReplicas sends half of the same rows to each of two
// replicas and merges their files: the statistics equal plain float64
// loops over every row within 1e-12 relative, and equal those of one
// replica that saw every row.
func TestMergeLiveReplicas(t *testing.T) {
	const d, n = 5, 400
	rng := rand.New(rand.NewPCG(4, 4))
	mtl, ind := make([]float32, n*d), make([]float32, n*d)
	for i := range mtl {
		mtl[i] = float32(rng.NormFloat64())
		ind[i] = mtl[i]*0.7 + float32(0.3*rng.NormFloat64())
	}
	dir := t.TempDir()
	r0, r1, all := replica(t, dir, "sidecar-0", d), replica(t, dir, "sidecar-1", d), replica(t, t.TempDir(), "one", d)
	send := func(s *livestats.Sampler, lo, hi int) {
		for r := lo; r < hi; r += 8 {
			x, reason := s.Admit(livestats.Request{Model: "model_a"})
			if x == nil {
				t.Fatalf("not sampled: %v", reason)
			}
			if err := x.Add(mtl[r*d:(r+8)*d], ind[r*d:(r+8)*d]); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(r0, 0, n/2)
	send(r1, n/2, n)
	send(all, 0, n)
	for _, s := range []*livestats.Sampler{r0, r1, all} {
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}

	out := filepath.Join(t.TempDir(), "live.safetensors")
	r := mustRun(t, "merge", r0.Path(), r1.Path(), "--out", out)
	if !strings.Contains(r.stdout, "task a: N=400 from 2 live files") || !strings.Contains(r.stdout, "2 live files, 1 tasks, D=5, beta=10, normalization=sum") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	c, err := componentsfile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	// inspect shows the recorded error, in text and JSON.
	if r := mustRun(t, "inspect", out); !strings.Contains(r.stdout, "task a: recorded reconstruction error = "+strconv.FormatFloat(c.Tasks[0].ReconError, 'g', 6, 64)) {
		t.Errorf("inspect:\n%s", r.stdout)
	}
	var rep struct {
		Tasks []struct {
			ReconError float64 `json:"recon_error"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", out).stdout), &rep); err != nil || rep.Tasks[0].ReconError != c.Tasks[0].ReconError {
		t.Errorf("inspect --json: recon_error %+v (%v), want %v", rep.Tasks, err, c.Tasks[0].ReconError)
	}
	one := filepath.Join(t.TempDir(), "one.safetensors")
	mustRun(t, "merge", all.Path(), "--out", one)
	c1, err := componentsfile.Load(one)
	if err != nil {
		t.Fatal(err)
	}

	// Plain loops in float64 over every row.
	s, g := make([]float64, d*d), make([]float64, d*d)
	yy := 0.0
	for r := range n {
		for i := range d {
			yi := float64(ind[r*d+i])
			yy += yi * yi
			for j := range d {
				s[i*d+j] += yi * float64(mtl[r*d+j])
				g[i*d+j] += float64(mtl[r*d+i]) * float64(mtl[r*d+j])
			}
		}
	}
	scale := 0.0
	for i := range s {
		scale = max(scale, math.Abs(s[i]), math.Abs(g[i]))
	}
	for name, cc := range map[string]*react.Components{"two replicas": c, "one replica": c1} {
		a := cc.Tasks[0]
		if a.N != n || math.Abs(a.SumSquares-yy) > 1e-12*yy || a.ReconError <= 0 {
			t.Errorf("%s: N=%d, Σ‖z_ind‖² %v (rows %v), recorded error %v", name, a.N, a.SumSquares, yy, a.ReconError)
		}
		for i := range d {
			for j := range d {
				if math.Abs(a.S.At(i, j)-s[i*d+j]) > 1e-12*scale || math.Abs(a.G.At(i, j)-g[i*d+j]) > 1e-12*scale {
					t.Fatalf("%s: S or G [%d][%d] differ from the rows'", name, i, j)
				}
			}
		}
	}

	// --beta auto chooses from the held-out rows; --normalize is not with it.
	r = mustRun(t, "merge", r0.Path(), r1.Path(), "--beta", "auto", "--out", out)
	if !strings.Contains(r.stdout, "← chosen") {
		t.Errorf("--beta auto: stdout:\n%s", r.stdout)
	}
	// --base keeps a task below --min-samples.
	r = mustRun(t, "merge", r0.Path(), "--base", one, "--min-samples", "201", "--out", out)
	if !strings.Contains(r.stdout, "task a: kept from "+one+" (200 live samples < --min-samples 201)") {
		t.Errorf("--base: stdout:\n%s", r.stdout)
	}
	kept, err := componentsfile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if kept.Tasks[0].N != n {
		t.Errorf("--base: task a has N=%d, want the base's %d", kept.Tasks[0].N, n)
	}

	// --live-dir finds both replicas' files (and nothing else there); with
	// --since, only the recent ones.
	r = mustRun(t, "merge", "--live-dir", dir, "--out", out)
	if !strings.Contains(r.stdout, "task a: N=400 from 2 live files") {
		t.Errorf("--live-dir: stdout:\n%s", r.stdout)
	}
	old := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(r1.Path(), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a live file"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "merge", "--live-dir", dir, "--since", "1h", "--out", out)
	if !strings.Contains(r.stdout, "task a: N=200 from 1 live files") || !strings.Contains(r.stdout, "1 live files last written more than 1h0m0s ago left out") {
		t.Errorf("--live-dir --since: stdout:\n%s", r.stdout)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"merge", "--out", out}, ExitUsage, "no files"},
		{[]string{"merge", r0.Path(), "--since", "1h", "--out", out}, ExitUsage, "--since: only with --live-dir"},
		{[]string{"merge", "--live-dir", dir, "--since", "1ns", "--out", out}, ExitFailure, "no live files"},
		{[]string{"merge", "--live-dir", filepath.Join(dir, "none"), "--out", out}, ExitFailure, "--live-dir"},
		{[]string{"merge", r0.Path(), "--beta", "x", "--out", out}, ExitUsage, `--beta: "x" is not a number or auto`},
		{[]string{"merge", r0.Path(), "--beta", "auto", "--normalize", "sum", "--out", out}, ExitUsage, "not with --beta auto"},
		{[]string{"merge", r0.Path(), "--min-samples", "-1", "--out", out}, ExitUsage, "--min-samples: must be ≥ 0"},
		{[]string{"merge", r0.Path(), r0.Path(), "--out", out}, ExitFailure, "the same file twice"},
		{[]string{"merge", r0.Path(), "--min-samples", "1000", "--out", out}, ExitFailure, "no task has 1000 live samples"},
		{[]string{"merge", r0.Path(), one, "--out", out}, ExitFailure, "not a partial-statistics file"},
	} {
		r := run(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}
