package model

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/react"
)

// config returns Triton's JSON form of a react model's configuration with
// the given max_batch_size, datatype, dims and parameters.
func config(maxBatch int, dt, dims, params string) []byte {
	return []byte(`{"name": "react_test", "max_batch_size": ` + itoa(maxBatch) + `,
	 "input": [{"name": "feature", "data_type": "` + dt + `", "dims": ` + dims + `}],
	 "output": [{"name": "corrected", "data_type": "` + dt + `", "dims": ` + dims + `}],
	 "parameters": {` + params + `}}`)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

func TestParseConfig(t *testing.T) {
	beta := 0.25
	for _, tc := range []struct {
		name string
		json []byte
		want Config
	}{{
		name: "minimal, dims as protobuf JSON strings",
		json: config(8, "TYPE_FP32", `["64"]`, `"components": {"string_value": "c.safetensors"}`),
		want: Config{Name: "react_test", MaxBatchSize: 8, Input: Tensor{"feature", "FP32", []int64{64}},
			Output: Tensor{"corrected", "FP32", []int64{64}}, Components: "c.safetensors", Presets: map[string]string{},
			CacheMaxBytes: DefaultCacheMaxBytes, CacheSize: DefaultCacheSize, MaxPreferenceLength: DefaultMaxPreferenceLength},
	}, {
		name: "everything, unbatched FP16 with numeric dims",
		json: config(0, "TYPE_FP16", `[-1, 768]`, `"components": {"string_value": "/abs/c.safetensors"},
			"beta": {"string_value": " 0.25"}, "normalization": {"string_value": "mean"},
			"default_preference": {"string_value": "a=1"}, "preset.ab": {"string_value": "a=1,b=1"},
			"preset.b": {"string_value": "b=1"}, "cache_size": {"string_value": "5"},
			"max_preference_length": {"string_value": "100"}`),
		want: Config{Name: "react_test", MaxBatchSize: 0, Input: Tensor{"feature", "FP16", []int64{-1, 768}},
			Output: Tensor{"corrected", "FP16", []int64{-1, 768}}, Components: "/abs/c.safetensors", Beta: &beta,
			Normalization: react.NormMean, DefaultPreference: "a=1",
			Presets: map[string]string{"ab": "a=1,b=1", "b": "b=1"}, CacheMaxBytes: DefaultCacheMaxBytes, CacheSize: 5, MaxPreferenceLength: 100},
	}, {
		name: "BF16",
		json: config(4, "TYPE_BF16", `["16"]`, `"components": {"string_value": "c"}`),
		want: Config{Name: "react_test", MaxBatchSize: 4, Input: Tensor{"feature", "BF16", []int64{16}},
			Output: Tensor{"corrected", "BF16", []int64{16}}, Components: "c", Presets: map[string]string{},
			CacheMaxBytes: DefaultCacheMaxBytes, CacheSize: DefaultCacheSize, MaxPreferenceLength: DefaultMaxPreferenceLength},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig(tc.json, "")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tc.want)
			}
			if d := got.D(); d != int(tc.want.Input.Dims[len(tc.want.Input.Dims)-1]) {
				t.Errorf("D() = %d", d)
			}
		})
	}
}

// TestParseConfigBad checks the message for each bad configuration of
// testdata/bad against its golden .err file (go test -update rewrites them).
func TestParseConfigBad(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := ParseConfig(data, "")
			if err == nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			testutil.Golden(t, strings.TrimSuffix(f, ".json")+".err", []byte(err.Error()+"\n"))
		})
	}
}

// TestParseConfigReportsEveryProblem checks that problems are reported
// together, one per line, each with its place.
func TestParseConfigReportsEveryProblem(t *testing.T) {
	data, err := os.ReadFile("testdata/bad/parameters.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseConfig(data, "")
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("not a joined error: %v", err)
	}
	for _, e := range joined.Unwrap() {
		if !strings.HasPrefix(e.Error(), "parameters.") {
			t.Errorf("problem without its parameter: %v", e)
		}
	}
	if n := len(joined.Unwrap()); n != 7 {
		t.Errorf("%d problems, want 7 (six bad parameters and the missing components): %v", n, err)
	}
}

// TestParseConfigChecksPreferencesWithEverythingElse: with the version
// directory, the default preference and the presets are checked against
// the components file's tasks beside the other problems: an invalid β and
// an unknown parameter hide no unknown task.
func TestParseConfigChecksPreferencesWithEverythingElse(t *testing.T) {
	params := `"components": {"string_value": "components.safetensors"}, "beta": {"string_value": "-1"},
		"bogus": {"string_value": "x"}, "default_preference": {"string_value": "fashion=1,foo=1"},
		"preset.good": {"string_value": "mnist=1"}, "preset.bad": {"string_value": "bar=1"},
		"preset.fine": {"string_value": "none"}`
	_, err := ParseConfig(config(64, "TYPE_FP32", `["64"]`, params), zooDir)
	if err == nil {
		t.Fatal("ParseConfig succeeded")
	}
	for _, want := range []string{
		"parameters.beta: ",
		"parameters.bogus: unknown parameter",
		`parameters.default_preference: preference "fashion=1,foo=1": unknown task "foo"`,
		`parameters.preset.bad: preference "bar=1": unknown task "bar"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 4 {
		t.Errorf("%d problems, want 4:\n%v", n, err)
	}
	// Without the directory (or a file that does not read) the tasks are
	// Load's to check.
	if _, err := ParseConfig(config(64, "TYPE_FP32", `["64"]`, params), ""); strings.Contains(err.Error(), "unknown task") {
		t.Errorf("tasks checked without the version directory: %v", err)
	}
}
