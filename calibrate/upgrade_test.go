package calibrate

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/triton/ensemble"
	"github.com/mergectl/react-triton/triton/modelconfig"
)

// upgradeRepo writes a model repository with a user's conventions: the
// ensemble cat_classifier (preprocess -> vit -> head_a -> softmax, the
// embedding "emb" of D = 4), and a components file calibrated on backbone
// (its output embeddings) of tasks cats and dogs. It returns the
// repository and the file.
func upgradeRepo(t *testing.T, backbone string, d int) (repo, comps string) {
	t.Helper()
	repo = t.TempDir()
	ens, err := os.ReadFile(filepath.Join("..", "triton", "modelconfig", "testdata", "repeated_form.pbtxt"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"cat_classifier/config.pbtxt": string(ens),
		"vit/config.pbtxt": `name: "vit" backend: "onnxruntime" max_batch_size: 8
input [ { name: "pixel_values", data_type: TYPE_FP32, dims: [ 3, 224, 224 ] } ]
output [ { name: "embeddings", data_type: TYPE_FP32, dims: [ 4 ] } ]`,
		"head_a/config.pbtxt": `name: "head_a" backend: "onnxruntime" max_batch_size: 8
input [ { name: "emb", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUTPUT__0", data_type: TYPE_FP32, dims: [ 5 ] } ]`,
	}
	for name, text := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := &react.Components{D: d, Beta: 1, Normalization: react.NormSum, Backbone: react.ModelRef{Name: backbone, Output: "embeddings"}}
	for k, task := range []string{"cats", "dogs"} {
		s, g, w := mat.NewDense(d, d, nil), mat.NewSymDense(d, nil), mat.NewDense(d, d, nil)
		for i := range d {
			s.Set(i, i, float64(k+1))
			g.SetSym(i, i, 2)
			w.Set(i, i, 1)
		}
		c.Tasks = append(c.Tasks, &react.TaskStats{Name: task, N: 10, S: s, G: g, WOrth: w, Expert: react.ModelRef{Name: "expert_" + task}})
	}
	comps = filepath.Join(t.TempDir(), "cats.safetensors")
	if err := componentsfile.Save(comps, c); err != nil {
		t.Fatal(err)
	}
	return repo, comps
}

func TestUpgrade(t *testing.T) {
	repo, comps := upgradeRepo(t, "vit", 4)
	ensPath := filepath.Join(repo, "cat_classifier", "config.pbtxt")
	before, _ := os.ReadFile(ensPath)
	args := []string{"upgrade", "--repository", repo, "--model", "cat_classifier", "--correct", "emb", "--components", comps,
		"--preset", "gentle=cats=0.7,dogs=0.3"}

	// A dry run writes nothing and shows the ensemble's diff.
	r := mustRun(t, append(args, "--dry-run")...)
	for _, want := range []string{"would write " + filepath.Join(repo, "react_vit", "config.pbtxt"), `name: "react_vit"`,
		"would write " + filepath.Join(repo, "react_vit", "1", "components.safetensors"),
		`-  step { model_name: "head_a" model_version: -1 input_map { key: "emb", value: "emb" }`,
		`+  step { model_name: "head_a" model_version: -1 input_map { key: "emb", value: "emb_react" }`,
		`+    model_name: "react_vit"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "react_vit")); err == nil {
		t.Fatal("a dry run wrote the react model")
	}

	mustRun(t, args...)
	after, err := os.ReadFile(ensPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := modelconfig.InsertStep(before, "emb", modelconfig.Step{Model: "react_vit", Version: -1, Input: "embedding", Output: "corrected"}, "emb_react")
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(want) {
		t.Errorf("ensemble:\n%s\nwant:\n%s", after, want)
	}
	if orig, _ := os.ReadFile(ensPath + ".orig"); string(orig) != string(before) {
		t.Error("the original ensemble configuration is not kept")
	}
	cfg, _, err := modelconfig.ReadFile(filepath.Join(repo, "react_vit", "config.pbtxt"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetBackend() != "react" || cfg.GetMaxBatchSize() != 8 || cfg.GetInput()[0].GetDims()[0] != 4 ||
		cfg.GetParameters()["preset.gentle"].GetStringValue() != "cats=0.7,dogs=0.3" {
		t.Errorf("react model %v", cfg)
	}
	copied, _ := os.ReadFile(filepath.Join(repo, "react_vit", "1", "components.safetensors"))
	if src, _ := os.ReadFile(comps); string(copied) != string(src) {
		t.Error("version 1 does not hold the components file")
	}
	// The ensemble's graph: the react step between vit and head_a.
	ens, _, _ := modelconfig.ReadFile(ensPath)
	g, _ := ensemble.New(ens)
	if s, err := g.Locate("emb_react"); err != nil || s.Model != "react_vit" || g.Steps[s.Consumers[0]].GetModelName() != "head_a" {
		t.Errorf("Locate(emb_react) = %+v, %v", s, err)
	}

	// Again: a new version, the ensemble unchanged.
	mustRun(t, args...)
	if again, _ := os.ReadFile(ensPath); string(again) != string(after) {
		t.Error("a second upgrade changed the ensemble again")
	}
	if _, err := os.Stat(filepath.Join(repo, "react_vit", "2", "components.safetensors")); err != nil {
		t.Errorf("a second upgrade wrote no version 2: %v", err)
	}

	// Again with another profile: a new version would keep the model's
	// configuration and serve the old preset, so it is refused, every
	// difference named, and nothing written.
	r = run(t, "upgrade", "--repository", repo, "--model", "cat_classifier", "--correct", "emb", "--components", comps,
		"--preset", "gentle=cats=0.5,dogs=0.5", "--default-preference", "cats=1")
	for _, want := range []string{`parameter default_preference is not set, the flags give "cats=1"`,
		`parameter preset.gentle is "cats=0.7,dogs=0.3", the flags give "cats=0.5,dogs=0.5"`, "--react-model"} {
		if r.code == ExitOK || !strings.Contains(r.stderr, want) {
			t.Errorf("an upgrade with another profile: exit %d, stderr %q; want it refused with %q", r.code, r.stderr, want)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "react_vit", "3")); !os.IsNotExist(err) {
		t.Errorf("a refused upgrade wrote version 3: %v", err)
	}
}

func TestUpgradeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backbone string
		d        int
		args     []string
		want     []string
	}{
		{"another backbone", "vit_fp16", 4, nil, []string{`was calibrated on model "vit_fp16", but "vit" produces tensor "emb"`, "--variant-of vit_fp16"}},
		{"another D", "vit", 6, nil, []string{`tensor "emb" is vit output "embeddings" of dims [4], but`, "has D = 6"}},
		// The profile's problems, all at once, named by their flags (the
		// rules of the sidecar's components entry and the backend's
		// parameters: control/surfaces_test.go).
		{"unknown task in a preset", "vit", 4, []string{"--preset", "p=cats=1,birds=1"}, []string{`--preset p: preference "cats=1,birds=1": unknown task "birds"`}},
		{"a bad profile", "vit", 4, []string{"--beta", "-1", "--default-preference", " ", "--preset", "my preset=cats=1", "--cache-size", "-1"},
			[]string{"4 problems:", "--beta: invalid beta -1", "--default-preference: blank", `--preset "my preset": preset name "my preset"`, "--cache-size: must be 0"}},
		{"a tensor no step takes", "vit", 4, []string{"--correct", "scores"}, []string{`no step takes tensor "scores"`}},
		{"a name taken", "vit", 4, []string{"--react-model", "head_a"}, []string{`a model "head_a" exists and is not a react model`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, comps := upgradeRepo(t, tc.backbone, tc.d)
			args := []string{"upgrade", "--repository", repo, "--model", "cat_classifier", "--correct", "emb", "--components", comps}
			r := run(t, append(args, tc.args...)...)
			for _, w := range tc.want {
				if r.code == 0 || !strings.Contains(r.stderr, w) {
					t.Errorf("exit %d, stderr %q: want %q", r.code, r.stderr, w)
				}
			}
			if _, err := os.Stat(filepath.Join(repo, "cat_classifier", "config.pbtxt.orig")); err == nil {
				t.Error("a refused upgrade wrote")
			}
		})
	}
	// A variant is accepted when named.
	repo, comps := upgradeRepo(t, "vit_fp16", 4)
	mustRun(t, "upgrade", "--repository", repo, "--model", "cat_classifier", "--correct", "emb", "--components", comps, "--variant-of", "vit_fp16")
}

// TestUpgradeProfile checks that the profile's flags become the react
// model's parameters of the same names, each when given.
func TestUpgradeProfile(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want map[string]string
	}{
		{nil, map[string]string{"components": "components.safetensors"}},
		{[]string{"--beta", "0", "--normalize", "mean", "--default-preference", "cats=1", "--preset", "a=dogs=1",
			"--cache-max-bytes", "64MiB", "--cache-size", "8", "--max-preference-length", "100"},
			map[string]string{"components": "components.safetensors", "beta": "0", "normalization": "mean", "default_preference": "cats=1",
				"preset.a": "dogs=1", "cache_max_bytes": "67108864", "cache_size": "8", "max_preference_length": "100"}},
	} {
		repo, comps := upgradeRepo(t, "vit", 4)
		mustRun(t, append([]string{"upgrade", "--repository", repo, "--model", "cat_classifier", "--correct", "emb", "--components", comps}, tc.args...)...)
		cfg, _, err := modelconfig.ReadFile(filepath.Join(repo, "react_vit", "config.pbtxt"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for k, v := range cfg.GetParameters() {
			got[k] = v.GetStringValue()
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%v: parameters %v, want %v", tc.args, got, tc.want)
		}
	}
}
