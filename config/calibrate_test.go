package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/config/configtest"
	"github.com/mergectl/react-triton/config/layer"
)

// parseCalibrateFlags parses args with the flags of BindCalibrateFlags.
func parseCalibrateFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	return configtest.Flags(t, "fit", BindCalibrateFlags, args...)
}

// TestLoadCalibrateGood loads the files of testdata/calibrate/good and
// compares the whole configuration with the expected one.
func TestLoadCalibrateGood(t *testing.T) {
	tests := []struct {
		file string
		want func(dir string) *Calibrate
	}{
		{"minimal.yaml", func(dir string) *Calibrate {
			c := DefaultCalibrate()
			c.Embeddings = filepath.Join(dir, "emb")
			c.Out = filepath.Join(dir, "components.safetensors")
			c.Checkpoint.Dir = c.Out + ".ckpt"
			return c
		}},
		{"only.yaml", func(dir string) *Calibrate {
			c := DefaultCalibrate()
			c.Triton = CalibrateTriton{GRPC: "localhost:8001", Timeout: DefaultCalibrateTimeout}
			c.Inputs = filepath.Join(dir, "calib")
			c.Only, c.Into = "mnist", filepath.Join(dir, "components.safetensors")
			c.Out, c.Checkpoint.Dir = c.Into, c.Into+".ckpt"
			c.Backbone = CalibrateModel{Model: "backbone_ta"}
			c.Experts = map[string]CalibrateModel{
				"mnist":   {Model: "expert_mnist"},
				"fashion": {Model: "expert_fashion", Version: "2"},
			}
			c.Sample = Sample{Limit: 100, Seed: 7}
			c.Progress = ProgressNever
			return c
		}},
		{"images.yaml", func(dir string) *Calibrate {
			c := DefaultCalibrate()
			c.Triton.GRPC = "localhost:8001"
			c.Inputs = filepath.Join(dir, "images")
			c.Out = filepath.Join(dir, "c.safetensors")
			c.Checkpoint.Dir = c.Out + ".ckpt"
			c.Backbone = CalibrateModel{Model: "vit_merged"}
			c.Images = CalibrateImages{Layout: "auto", Channels: "bgr", Size: []int{224, 224}, Resize: "none",
				Mean: []float64{0.485, 0.456, 0.406}, Std: []float64{0.229}, OnError: OnErrorSkip, Decode: DecodeGo}
			return c
		}},
		{"images_triton.yaml", func(dir string) *Calibrate {
			c := DefaultCalibrate()
			c.Triton.GRPC = "localhost:8001"
			c.Inputs = filepath.Join(dir, "images")
			c.Out = filepath.Join(dir, "c.safetensors")
			c.Checkpoint.Dir = c.Out + ".ckpt"
			c.Backbone = CalibrateModel{Model: "preprocess_backbone_ta"}
			c.Experts = map[string]CalibrateModel{"mnist": {Model: "preprocess_expert_mnist"}}
			c.Images.Decode, c.Images.OnError = DecodeTriton, OnErrorSkip
			return c
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := configtest.Stage(t, filepath.Join("testdata/calibrate/good", tt.file))
			got, err := LoadCalibrate(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want(filepath.Dir(path))
			want.File = path
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LoadCalibrate(%s):\ngot  %+v\nwant %+v", tt.file, got, want)
			}
		})
	}
}

// TestLoadCalibrateBad loads every file of testdata/calibrate/bad and
// compares the error with the golden .err next to it ($DIR for the
// directory the file was staged in; go test -update rewrites them).
func TestLoadCalibrateBad(t *testing.T) {
	configtest.LoadBad(t, "testdata/calibrate/bad/*.yaml", func(t *testing.T, path string) (any, error) {
		return LoadCalibrate(path, nil)
	})
}

// TestLoadCalibrateExample loads calibrate.example.yaml.
func TestLoadCalibrateExample(t *testing.T) {
	path := configtest.Stage(t, "calibrate.example.yaml")
	dir := filepath.Dir(path)
	got, err := LoadCalibrate(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &Calibrate{
		Triton:     CalibrateTriton{GRPC: "127.0.0.1:8001", Timeout: time.Minute, RetryMaxWait: 5 * time.Minute},
		Images:     DefaultCalibrate().Images,
		Inputs:     "/data/calib",
		Out:        filepath.Join(dir, "components.safetensors"),
		Beta:       10,
		Normalize:  "sum",
		Tasks:      []string{"fashion", "mnist"},
		Backbone:   CalibrateModel{Model: "backbone_adamerging", Version: "1", Output: "feature"},
		Experts:    map[string]CalibrateModel{"fashion": {Model: "expert_fashion"}, "mnist": {Model: "expert_mnist", Version: "1", Output: "feature"}},
		InFlight:   4,
		Checkpoint: Checkpoint{Dir: filepath.Join(dir, "components.safetensors.ckpt"), Every: 50},
		Progress:   ProgressAuto,
		BetaSelect: BetaSelect{Holdout: 0.2},
		File:       path,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestCalibrateExampleDocumentsEveryKey checks that calibrate.example.yaml
// names every key of the schema and every flag of BindCalibrateFlags.
func TestCalibrateExampleDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile("calibrate.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	var walk func(typ reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := layer.TagName(f)
			if name == "" {
				continue
			}
			if !strings.Contains(text, " "+name+":") && !strings.Contains(text, "\n"+name+":") && !strings.Contains(text, "{"+name+":") {
				t.Errorf("calibrate.example.yaml does not document key %q (%s.%s)", name, typ.Name(), f.Name)
			}
			ft := f.Type
			for ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(ft)
			}
		}
	}
	walk(reflect.TypeFor[Calibrate]())
	fs := pflag.NewFlagSet("fit", pflag.ContinueOnError)
	BindCalibrateFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != FlagConfig && !strings.Contains(text, "--"+f.Name) {
			t.Errorf("calibrate.example.yaml does not name flag --%s", f.Name)
		}
	})
}

// TestCalibrateFlags checks that each set flag beats the file, that unset
// flags do not, and that a problem names the flag it came from.
func TestCalibrateFlags(t *testing.T) {
	path := configtest.Stage(t, "calibrate.example.yaml")
	fs := parseCalibrateFlags(t, "--config", path, "--beta", "0.5", "--expert", "mnist=other:3", "--expert", "dtd=expert_dtd",
		"--tasks", "fashion,mnist,dtd", "--fraction", "0.25", "--quiet", "--triton-timeout", "5s")
	got, err := LoadCalibrate("", fs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Beta != 0.5 || got.Sample.Fraction != 0.25 || got.Progress != ProgressNever || got.Triton.Timeout != 5*time.Second {
		t.Errorf("flags not applied: %+v", got)
	}
	if got.Normalize != "sum" || got.Chunk != 0 || got.Triton.RetryMaxWait != 5*time.Minute {
		t.Errorf("unset flags changed the file's values: %+v", got)
	}
	wantExperts := map[string]CalibrateModel{
		"fashion": {Model: "expert_fashion"}, "mnist": {Model: "other", Version: "3"}, "dtd": {Model: "expert_dtd"},
	}
	if !reflect.DeepEqual(got.Experts, wantExperts) {
		t.Errorf("experts %+v, want %+v", got.Experts, wantExperts)
	}

	fs = parseCalibrateFlags(t, "--config", path, "--expert", "mnist=m:x", "--chunk", "-2", "--progress", "always", "--quiet")
	_, err = LoadCalibrate("", fs)
	want := []string{
		"progress: --progress and --quiet exclude each other (from --quiet)",
		`experts.mnist.version: "x": want a positive integer, or leave it out for Triton's choice (from --expert)`,
		"chunk: must be ≥ 0 (0 for the default), got -2 (from --chunk)",
	}
	if got := configtest.ProblemLines(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(err.Error(), "config: "+path+": 3 problems:") {
		t.Errorf("error %q does not name the file", err)
	}
}

// TestCalibrateYAMLRoundTrip checks that what --print-config shows loads
// back to the same configuration.
func TestCalibrateYAMLRoundTrip(t *testing.T) {
	path := configtest.Stage(t, "calibrate.example.yaml")
	fs := parseCalibrateFlags(t, "--config", path, "--beta", "1", "--limit", "30", "--shard", "1/3", "--retry-max-wait", "90s")
	c, err := LoadCalibrate("", fs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	printed := filepath.Join(filepath.Dir(path), "printed.yaml")
	if err := os.WriteFile(printed, b, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCalibrate(printed, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	back.File = c.File
	if !reflect.DeepEqual(back, c) {
		t.Errorf("printed and loaded back:\n%+v\nwant\n%+v\n%s", back, c, b)
	}
	for _, want := range []string{"retry_max_wait: 1m30s\n", "beta: 1.0\n", "shard: 1/3\n", "tasks: [fashion, mnist]\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("printed config lacks %q:\n%s", want, b)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Shard
		err  string
	}{
		{"0/1", Shard{0, 1}, ""},
		{"3/4", Shard{3, 4}, ""},
		{"4/4", Shard{}, "want 0 ≤ i < n"},
		{"-1/4", Shard{}, "want 0 ≤ i < n"},
		{"1", Shard{}, "want i/n"},
		{"a/b", Shard{}, "want i/n"},
		{"0/0", Shard{}, "want 0 ≤ i < n"},
	} {
		got, err := ParseShard(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ParseShard(%q) = %v, %v; want %v, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestCalibrateYAMLPathsLoadBackElsewhere: paths given by flags are
// relative to the working directory and a file's to the file, so the
// printed configuration writes them absolute: saved in another directory
// and loaded from a third, it names the same files.
func TestCalibrateYAMLPathsLoadBackElsewhere(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	for _, dir := range []string{"feats", "out"} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fs := parseCalibrateFlags(t, "--embeddings", "feats", "--out", "out/components.safetensors")
	c, err := LoadCalibrate("", fs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(t.TempDir(), "printed.yaml")
	if err := os.WriteFile(saved, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	back, err := LoadCalibrate(saved, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	for name, got := range map[string]string{
		filepath.Join(work, "feats"):                      back.Embeddings,
		filepath.Join(work, "out/components.safetensors"): back.Out,
	} {
		if got != name {
			t.Errorf("loaded back from elsewhere: %q, want %q\n%s", got, name, b)
		}
	}
}

// TestLoadCalibrateEnv layers the REACT_* environment between the file and
// the flags, as the sidecar's Load does, and names a variable's problem by
// it.
func TestLoadCalibrateEnv(t *testing.T) {
	t.Setenv("REACT_SAMPLE_LIMIT", "5")
	t.Setenv("REACT_TASKS", "b, a")
	t.Setenv("REACT_IMAGES_MEAN", "0.5,0.25,0.125")
	t.Setenv("REACT_CHUNK", "64")
	c, err := LoadCalibrate("", parseCalibrateFlags(t, "--embeddings", "feats", "--out", "c.safetensors", "--chunk", "32"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sample.Limit != 5 || !slices.Equal(c.Tasks, []string{"b", "a"}) || !slices.Equal(c.Images.Mean, []float64{0.5, 0.25, 0.125}) || c.Chunk != 32 {
		t.Errorf("limit %d, tasks %q, mean %v, chunk %d; want 5, [b a], [0.5 0.25 0.125] and 32 (the flag's)", c.Sample.Limit, c.Tasks, c.Images.Mean, c.Chunk)
	}
	t.Setenv("REACT_SAMPLE_LIMIT", "-1")
	_, err = LoadCalibrate("", parseCalibrateFlags(t, "--embeddings", "feats", "--out", "c.safetensors"))
	if err == nil || !strings.Contains(err.Error(), "(from $REACT_SAMPLE_LIMIT)") {
		t.Errorf("LoadCalibrate with REACT_SAMPLE_LIMIT=-1: %v, want a problem from $REACT_SAMPLE_LIMIT", err)
	}
}
