package config

import (
	"errors"
	"io/fs"
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
	"github.com/mergectl/react-triton/problem"
)

func ptr[T any](v T) *T { return &v }

// TestLoadGood loads every file of testdata/good and compares the whole
// decoded configuration with the expected one.
func TestLoadGood(t *testing.T) {
	tests := []struct {
		file string
		env  map[string]string
		// want returns the expected configuration, given the directory the
		// file was staged in.
		want func(dir string) *Config
	}{
		{
			file: "minimal.yaml",
			want: func(dir string) *Config {
				c := Default()
				c.Triton.GRPC = "triton.internal:8001"
				c.Triton.HTTP = "triton.internal:8000"
				return c
			},
		},
		{
			file: "full.yaml",
			want: func(dir string) *Config {
				return &Config{
					Triton: Triton{
						GRPC:           "10.0.0.5:9001",
						HTTP:           "[::1]:9000",
						Timeout:        90 * time.Second,
						StartupTimeout: 30 * time.Second,
						TLS: TLS{
							Enabled:            true,
							CAFile:             filepath.Join(dir, "tls/ca.pem"),
							CertFile:           filepath.Join(dir, "tls/client.pem"),
							KeyFile:            filepath.Join(dir, "tls/client-key.pem"),
							ServerName:         "triton.example.com",
							InsecureSkipVerify: true,
						},
						ForwardHeaders: []string{"Authorization", "x-request-id"},
					},
					Listen: Listen{
						GRPC:            "127.0.0.1:9101",
						HTTP:            "0.0.0.0:9100",
						Metrics:         "",
						ShutdownTimeout: 45 * time.Second,
					},
					Server: Server{
						MaxConnections:    64,
						MaxHeaderBytes:    4 * KiB,
						ReadHeaderTimeout: 3 * time.Second,
						WriteTimeout:      time.Minute,
						GRPC: GRPCServer{
							MaxConcurrentStreams:         16,
							KeepaliveTime:                time.Minute,
							KeepaliveTimeout:             5 * time.Second,
							KeepaliveMinTime:             time.Second,
							KeepalivePermitWithoutStream: true,
						},
						TLS: ServerTLS{
							Enabled:      true,
							CertFile:     filepath.Join(dir, "tls/server.pem"),
							KeyFile:      filepath.Join(dir, "tls/server-key.pem"),
							ClientCAFile: filepath.Join(dir, "tls/client-ca.pem"),
						},
					},
					Management: Management{
						Allow:     []string{"RepositoryIndex", "LogSettings"},
						TokenFile: filepath.Join(dir, "management.token"),
					},
					Pprof: Pprof{Enabled: true, Listen: "127.0.0.1:9106", MaxSeconds: 5},
					Limits: Limits{MaxRequestBytes: 1_000_000_000, MaxInflightBytes: 256 * MiB, MaxInputs: 10, MaxOutputs: 11, MaxParameters: 12,
						MaxBatchSize: 32, MaxPreferenceLength: 256},
					Cache: Cache{MaxBytes: 64 * MiB, Size: 7},
					Admission: Admission{MaxPendingSolves: 5, MaxConcurrentSolves: 2, RetryAfter: 3 * time.Second, KeyHeader: "x-user-id",
						KeyRate: 2.5, KeyBurst: 4, SolveRate: 7.5, SolveBurst: 9, SolveShare: 0.3, SolveShareBurst: 2 * time.Second, ShedDelay: 250 * time.Millisecond, PresetsOnly: true, PreferenceGrid: 20},
					LinAlg: LinAlg{Backend: DefaultLinAlgBackend, Threads: DefaultLinAlgThreads},
					Log:    Log{Level: "debug", Format: "json"},
					Components: []Components{
						{
							Name:              "vision.v2",
							Path:              filepath.Join(dir, "components.safetensors"),
							Beta:              ptr(0.001),
							Normalize:         "mean",
							DefaultPreference: "cars=0.6, dtd=0.4",
							Presets:           map[string]string{"Balanced": "cars=1,dtd=1", "cars-only": "cars=1"},
						},
						{
							Name: "second",
							Path: filepath.Join(dir, "second.safetensors"),
							Beta: ptr(2.0),
						},
					},
					Models: []Model{
						{
							Name:       "Cars",
							Components: "vision.v2",
							Backbone:   Backbone{Model: "backbone_ta", Version: "3", Output: "OUTPUT__0"},
							Heads: []Head{{
								Task: "cars", Model: "head_cars", Version: "12", Input: "INPUT__0",
								Outputs: map[string]string{"OUTPUT__0": "probs", "scores": "Scores"},
							}},
						},
						{
							Name:       "second_model",
							Components: "second",
							Backbone:   Backbone{Model: "backbone_other", Output: "feature"},
							Heads:      []Head{{Task: "a", Model: "head_a"}, {Task: "b", Model: "head_b"}},
						},
					},
					Feedback: Feedback{MaxEntries: 5000, MaxAge: 10 * time.Minute},
					Sampling: Sampling{
						Enabled: true, Fraction: 0.05, Holdout: 0.1, OptOutHeader: "X-No-Sample", MaxConcurrent: 3, MinSamples: 500,
						Replica: "sidecar-a", Beta: 0.5, Normalize: "mean",
						Checkpoint: SamplingCheckpoint{Dir: filepath.Join(dir, "live"), Interval: time.Minute, Window: 6 * time.Hour},
						Backbone:   Backbone{Model: "backbone_ta", Version: "3", Output: "OUTPUT__0"},
						Models:     []SampledModel{{Name: "Cars"}, {Name: "second_model", Task: "b"}, {Name: "passthrough_dtd", Task: "dtd"}},
						Tasks: []SampledTask{
							{Name: "cars", Expert: Expert{Model: "expert_cars", Version: "2", Output: "feature"}},
							{Name: "b", Expert: Expert{Model: "expert_b", Output: "feature"}},
							{Name: "dtd", Expert: Expert{Model: "expert_dtd", Output: "emb"}},
						},
					},
				}
			},
		},
		{
			file: "env.yaml",
			env: map[string]string{
				"REACT_TRITON_GRPC":              "env-host:18001",
				"REACT_TRITON_TIMEOUT":           "2m",
				"REACT_LISTEN_METRICS":           "",
				"REACT_LIMITS_MAX_REQUEST_BYTES": "2MiB",
				"REACT_LIMITS_MAX_BATCH_SIZE":    "8",
				"REACT_CACHE_SIZE":               "99",
				"REACT_LOG_LEVEL":                "error",
				"REACT_LOG_FORMAT":               "json",
			},
			want: func(dir string) *Config {
				c := Default()
				c.Triton.GRPC = "env-host:18001"   // env over file
				c.Triton.HTTP = "file-host:8000"   // file
				c.Triton.Timeout = 2 * time.Minute // env over file
				c.Listen.GRPC = ":9001"            // file
				c.Listen.Metrics = ""              // empty env over file
				c.Limits.MaxRequestBytes = 2 * MiB // env over file
				c.Limits.MaxBatchSize = 8          // env over default
				c.Cache.Size = 99                  // env over file
				c.Log.Level = "error"              // env over file
				c.Log.Format = "json"              // env over default
				return c
			},
		},
		{
			file: "implied.yaml",
			want: func(dir string) *Config {
				c := Default()
				c.Triton.GRPC, c.Triton.HTTP = "localhost:8101", "localhost:8100"
				c.Components = []Components{{Name: "only", Path: filepath.Join(dir, "components.safetensors")}}
				m := Model{
					Components: "only",
					Backbone:   Backbone{Model: "backbone", Output: "feature"},
					Heads:      []Head{{Task: "t", Model: "head_t"}},
				}
				a, b := m, m
				a.Name, b.Name = "a", "b"
				a.Heads, b.Heads = slices.Clone(m.Heads), slices.Clone(m.Heads)
				c.Models = []Model{a, b}
				return c
			},
		},
		{
			file: "experiments.yaml",
			want: func(dir string) *Config {
				c := Default()
				c.Triton.GRPC, c.Triton.HTTP = "localhost:8101", "localhost:8100"
				c.Components = []Components{{Name: "c", Path: filepath.Join(dir, "components.safetensors"), Presets: map[string]string{"texture": "dtd=1"}}}
				bb := Backbone{Model: "backbone", Output: "feature"}
				c.Models = []Model{
					{Name: "a", Components: "c", Backbone: bb, Heads: []Head{{Task: "t", Model: "head_t"}}},
					{Name: "b", Components: "c", Backbone: bb, Heads: []Head{{Task: "t", Model: "head_t"}}},
				}
				c.Experiments = []Experiment{
					{
						Name:    "first",
						Models:  []string{"a"},
						Key:     ExperimentKey{Header: "X-User-Id", Parameter: "user_id"},
						Traffic: ptr(0.25),
						Start:   time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC),
						End:     time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC),
						Arms: []Arm{
							{Name: "control", Weight: ptr(0), Preference: "none"},
							{Name: "texture", Weight: ptr(3), Preset: "texture"},
							{Name: "mixed", Weight: ptr(1), Preference: "cars=1,dtd=1"},
						},
						Shadow: Shadow{Fraction: 0.05, MaxConcurrent: 4, Timeout: 500 * time.Millisecond},
					},
					{
						Name:   "second",
						Models: []string{"b"},
						Key:    ExperimentKey{Parameter: "session"},
						Arms:   []Arm{{Name: "only", Weight: ptr(1), Preference: "dtd=1"}, {Name: "other", Weight: ptr(1), Preference: "none"}},
						Shadow: Shadow{Fraction: 1},
					},
				}
				return c
			},
		},
		{
			file: "graph.yaml",
			want: func(dir string) *Config {
				c := Default()
				c.Triton.GRPC, c.Triton.HTTP = "localhost:8101", "localhost:8100"
				c.Components = []Components{{Name: "c", Path: filepath.Join(dir, "components.safetensors")}}
				c.Models = []Model{
					{Name: "cat_classifier", Components: "c", Correct: "embeddings"},
					{
						Name: "cat_classifier_v0", Components: "c", VariantOf: "vit_merged",
						Backbone: Backbone{Model: "vit_merged_fp16", Output: "embeddings"},
						Inputs:   map[string]string{"pixel_values": "image"},
						Heads:    []Head{{Task: "cats", Model: "head_cats", Outputs: map[string]string{"OUTPUT__0": "scores"}}},
					},
					{
						Name: "cats_debug", Components: "c", Signature: SignatureDiffers,
						Backbone: Backbone{Model: "vit_merged", Output: "embeddings"},
						Heads:    []Head{{Task: "cats", Model: "head_cats"}},
					},
					{Name: "cats_checked", Components: "c", Signature: SignatureMatch, Correct: "scores:0"},
				}
				return c
			},
		},
		{
			file: "anchors.yaml",
			want: func(dir string) *Config {
				c := Default()
				c.Triton.GRPC, c.Triton.HTTP = "localhost:8101", "localhost:8100"
				c.Components = []Components{{Name: "c", Path: filepath.Join(dir, "components.safetensors")}}
				bb := Backbone{Model: "backbone_adamerging", Output: "feature"}
				fashion := Head{Task: "fashion", Model: "head_fashion"}
				c.Models = []Model{
					{Name: "one", Components: "c", Backbone: bb, Heads: []Head{fashion}},
					{Name: "two", Components: "c", Backbone: bb, Heads: []Head{fashion, {Task: "mnist", Model: "head_mnist"}}},
				}
				return c
			},
		},
	}

	files, err := filepath.Glob("testdata/good/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var covered []string
	for _, tt := range tests {
		covered = append(covered, filepath.Join("testdata/good", tt.file))
	}
	slices.Sort(covered)
	if !slices.Equal(files, covered) {
		t.Errorf("testdata/good holds %v, the table covers %v", files, covered)
	}

	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			path := configtest.Stage(t, filepath.Join("testdata/good", tt.file))
			got, err := Load(path, nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := tt.want(filepath.Dir(path))
			want.File = path
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Load(%s):\ngot  %+v\nwant %+v", tt.file, got, want)
			}
		})
	}
}

// TestLoadExample loads example.yaml, its components path pointed at a
// temporary file.
func TestLoadExample(t *testing.T) {
	clearEnv(t)
	data, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const components = "/models/react/components.safetensors"
	if !strings.Contains(string(data), "path: "+components+"\n") {
		t.Fatalf("example.yaml no longer names %s", components)
	}
	path := configtest.StageText(t, "sidecar.yaml", strings.Replace(string(data), components, "components.safetensors", 1))
	dir := filepath.Dir(path)

	got, err := Load(path, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Default()
	want.File = path
	want.Triton.GRPC, want.Triton.HTTP = "127.0.0.1:8101", "127.0.0.1:8100"
	want.Components = []Components{{
		Name:              "zoo",
		Path:              filepath.Join(dir, "components.safetensors"),
		Beta:              ptr(0.1),
		Normalize:         "sum",
		DefaultPreference: "fashion=0.5,mnist=0.5",
		Presets: map[string]string{
			"fashion_first": "fashion=0.8,mnist=0.2",
			"mnist_first":   "fashion=0.2,mnist=0.8",
		},
	}}
	want.Models = []Model{
		{Name: "pets", Components: "zoo", Correct: "embeddings"},
		{
			Name:       "classifier",
			Components: "zoo",
			Backbone:   Backbone{Model: "backbone_adamerging", Version: "1", Output: "feature"},
			Heads:      []Head{{Task: "fashion", Model: "head_fashion", Input: "feature"}},
		},
		{
			Name:       "multi",
			Components: "zoo",
			Backbone:   Backbone{Model: "backbone_adamerging", Output: "feature"},
			Heads: []Head{
				{Task: "fashion", Model: "head_fashion", Outputs: map[string]string{"logits": "logits_fashion"}},
				{Task: "mnist", Model: "head_mnist", Outputs: map[string]string{"logits": "logits_mnist"}},
			},
		},
	}
	want.Experiments = []Experiment{{
		Name:    "fashion-weight",
		Models:  []string{"classifier"},
		Key:     ExperimentKey{Header: "x-user-id"},
		Traffic: ptr(1.0),
		Arms: []Arm{
			{Name: "control", Weight: ptr(50), Preset: "fashion_first"},
			{Name: "mnist-heavy", Weight: ptr(50), Preference: "fashion=0.3,mnist=0.7"},
		},
		Shadow: Shadow{MaxConcurrent: DefaultShadowMaxConcurrent, Timeout: DefaultShadowTimeout},
	}}
	want.Sampling.Checkpoint.Dir = "/var/lib/react/live"
	want.Sampling.Backbone = Backbone{Model: "backbone_adamerging", Output: "feature"}
	want.Sampling.Models = []SampledModel{{Name: "classifier"}, {Name: "fashion_classifier", Task: "fashion"}}
	want.Sampling.Tasks = []SampledTask{{Name: "fashion", Expert: Expert{Model: "expert_fashion", Output: "feature"}}}
	if want.Sampling.Enabled {
		t.Error("sampling is on by default")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load(example.yaml):\ngot  %+v\nwant %+v", got, want)
	}

	// --print-config writes a file that loads back to the same values from
	// another directory.
	printed, err := got.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(t.TempDir(), "printed.yaml")
	if err := os.WriteFile(again, printed, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	back, err := Load(again, nil)
	if err != nil {
		t.Fatalf("Load(printed): %v\n%s", err, printed)
	}
	back.File = got.File
	if !reflect.DeepEqual(back, got) {
		t.Errorf("Load(printed):\ngot  %#v\nwant %#v\n%s", back.Models, got.Models, printed)
	}
}

// TestExampleDocumentsEveryKey checks that example.yaml names every key of
// the schema, set or in a comment.
func TestExampleDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(typ reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := layer.TagName(f)
			if name == "" {
				continue
			}
			if !strings.Contains(string(data), " "+name+":") && !strings.Contains(string(data), "\n"+name+":") {
				t.Errorf("example.yaml does not document key %q (%s.%s)", name, typ.Name(), f.Name)
			}
			ft := f.Type
			for ft.Kind() == reflect.Slice || ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Duration]() {
				walk(ft)
			}
		}
	}
	walk(reflect.TypeFor[Config]())
	for _, k := range scalarKeys {
		if v := EnvVar(k.Name); !strings.Contains(string(data), v) && !strings.Contains(string(data), "REACT_ followed by the key") {
			t.Errorf("example.yaml does not explain %s", v)
		}
	}
}

// TestEnvEveryKey overrides every scalar key by its environment variable,
// over a file that sets a different value, and checks the decoded value.
func TestEnvEveryKey(t *testing.T) {
	tests := map[string]struct {
		env  string
		want any
	}{
		"triton.grpc":                                 {"env:1", "env:1"},
		"triton.http":                                 {"env:2", "env:2"},
		"triton.timeout":                              {"1h", time.Hour},
		"triton.startup_timeout":                      {"45s", 45 * time.Second},
		"triton.forward_headers":                      {"x-request-id, authorization", []string{"x-request-id", "authorization"}},
		"triton.tls.enabled":                          {"true", true},
		"triton.tls.ca_file":                          {"tls/ca.pem", "tls/ca.pem"},
		"triton.tls.cert_file":                        {"tls/client.pem", "tls/client.pem"},
		"triton.tls.key_file":                         {"tls/client-key.pem", "tls/client-key.pem"},
		"triton.tls.server_name":                      {"name.example", "name.example"},
		"triton.tls.insecure_skip_verify":             {"1", true},
		"listen.grpc":                                 {":7001", ":7001"},
		"listen.http":                                 {":7000", ":7000"},
		"listen.metrics":                              {"127.0.0.1:7003", "127.0.0.1:7003"},
		"listen.shutdown_timeout":                     {"1m", time.Minute},
		"server.max_connections":                      {"7", 7},
		"server.max_header_bytes":                     {"2KiB", 2 * KiB},
		"server.read_header_timeout":                  {"2s", 2 * time.Second},
		"server.read_timeout":                         {"0s", time.Duration(0)},
		"server.write_timeout":                        {"9s", 9 * time.Second},
		"server.idle_timeout":                         {"3m", 3 * time.Minute},
		"server.grpc.max_concurrent_streams":          {"8", 8},
		"server.grpc.keepalive_time":                  {"5m", 5 * time.Minute},
		"server.grpc.keepalive_timeout":               {"6s", 6 * time.Second},
		"server.grpc.keepalive_min_time":              {"7s", 7 * time.Second},
		"server.grpc.keepalive_permit_without_stream": {"true", true},
		"server.tls.enabled":                          {"true", true},
		"server.tls.cert_file":                        {"tls/client.pem", "tls/client.pem"},
		"server.tls.key_file":                         {"tls/client-key.pem", "tls/client-key.pem"},
		"server.tls.client_ca_file":                   {"tls/ca.pem", "tls/ca.pem"},
		"server.tls.metrics":                          {"false", false},
		"management.token_file":                       {"other.token", "other.token"},
		"management.allow":                            {"LogSettings,RepositoryIndex", []string{"LogSettings", "RepositoryIndex"}},
		"pprof.enabled":                               {"false", false},
		"pprof.listen":                                {"127.0.0.1:7060", "127.0.0.1:7060"},
		"pprof.max_seconds":                           {"9", 9},
		"limits.max_request_bytes":                    {"3 KiB", 3 * KiB},
		"limits.max_batch_size":                       {"4", 4},
		"limits.max_preference_length":                {"5", 5},
		"limits.max_inflight_bytes":                   {"7MiB", 7 * MiB},
		"limits.max_inputs":                           {"8", 8},
		"limits.max_outputs":                          {"9", 9},
		"limits.max_parameters":                       {"10", 10},
		"cache.size":                                  {"6", 6},
		"cache.max_bytes":                             {"11 MB", 11 * MB},
		"admission.max_pending_solves":                {"12", 12},
		"admission.max_concurrent_solves":             {"13", 13},
		"admission.retry_after":                       {"14s", 14 * time.Second},
		"admission.key_header":                        {"x-env", "x-env"},
		"admission.key_rate":                          {"0.25", 0.25},
		"admission.key_burst":                         {"15", 15},
		"admission.solve_rate":                        {"12.5", 12.5},
		"admission.solve_burst":                       {"17", 17},
		"admission.solve_share":                       {"0.35", 0.35},
		"admission.solve_share_burst":                 {"19ms", 19 * time.Millisecond},
		"admission.shed_delay":                        {"18ms", 18 * time.Millisecond},
		"admission.presets_only":                      {"true", true},
		"admission.preference_grid":                   {"16", 16},
		"linalg.backend":                              {"go", "go"},
		"linalg.threads":                              {"2", 2},
		"log.level":                                   {"debug", "debug"},
		"log.format":                                  {"json", "json"},
		"feedback.enabled":                            {"false", false},
		"feedback.max_entries":                        {"17", 17},
		"feedback.max_age":                            {"18m", 18 * time.Minute},
		"sampling.enabled":                            {"false", false},
		"sampling.fraction":                           {"0.5", 0.5},
		"sampling.holdout":                            {"0", 0.0},
		"sampling.opt_out_header":                     {"x-env-opt-out", "x-env-opt-out"},
		"sampling.max_concurrent":                     {"7", 7},
		"sampling.min_samples":                        {"8", 8},
		"sampling.replica":                            {"pod-7", "pod-7"},
		"sampling.beta":                               {"0.125", 0.125},
		"sampling.normalize":                          {"mean", "mean"},
		"sampling.checkpoint.dir":                     {"env-live", "env-live"},
		"sampling.checkpoint.interval":                {"2m", 2 * time.Minute},
		"sampling.checkpoint.window":                  {"12h", 12 * time.Hour},
		"sampling.backbone.model":                     {"env_backbone", "env_backbone"},
		"sampling.backbone.version":                   {"9", "9"},
		"sampling.backbone.output":                    {"env_output", "env_output"},
	}
	for _, k := range scalarKeys {
		if _, ok := tests[k.Name]; !ok {
			t.Errorf("no test of %s", EnvVar(k.Name))
		}
	}
	// The file sets every key to something else; TLS is on and its files
	// exist in the working directory of the test (the staged directory).
	const file = `triton:
  grpc: file:1
  http: file:2
  timeout: 3s
  startup_timeout: 4s
  tls:
    enabled: true
    ca_file: tls/client.pem
    cert_file: tls/ca.pem
    key_file: tls/ca.pem
    server_name: file.example
    insecure_skip_verify: false
listen:
  grpc: ":6001"
  http: ":6000"
  metrics: ":6003"
  shutdown_timeout: 5s
server:
  max_connections: 1
  max_header_bytes: 1KiB
  read_header_timeout: 1s
  read_timeout: 1s
  write_timeout: 1s
  idle_timeout: 1s
  grpc:
    max_concurrent_streams: 1
    keepalive_time: 1s
    keepalive_timeout: 1s
    keepalive_min_time: 1s
    keepalive_permit_without_stream: false
  tls:
    enabled: true
    cert_file: tls/server.pem
    key_file: tls/server-key.pem
    client_ca_file: tls/client-ca.pem
    metrics: true
management:
  allow: [LogSettings]
  token_file: management.token
pprof:
  enabled: true
  listen: 127.0.0.1:6060
  max_seconds: 1
limits:
  max_request_bytes: 100
  max_inflight_bytes: 200
  max_inputs: 1
  max_outputs: 2
  max_parameters: 3
  max_batch_size: 1
  max_preference_length: 2
cache:
  size: 3
  max_bytes: 300
admission:
  max_pending_solves: 1
  max_concurrent_solves: 1
  retry_after: 1s
  key_header: x-file
  key_rate: 1
  key_burst: 1
  solve_rate: 1
  solve_burst: 1
  solve_share: 1
  solve_share_burst: 1s
  shed_delay: 0s
  presets_only: false
  preference_grid: 1
linalg:
  backend: auto
  threads: 4
log:
  level: warn
  format: text
feedback:
  enabled: true
  max_entries: 2
  max_age: 3s
sampling:
  enabled: true
  fraction: 1
  holdout: 0.5
  opt_out_header: x-file-opt-out
  max_concurrent: 1
  min_samples: 1
  replica: file-pod
  beta: 1
  normalize: sum
  checkpoint:
    dir: file-live
    interval: 1m
    window: 1h
  backbone:
    model: file_backbone
    version: "1"
    output: file_output
  models:
    - {name: m, task: t}
  tasks:
    - {name: t, expert: {model: e, output: o}}
`
	for _, k := range scalarKeys {
		tt := tests[k.Name]
		t.Run(k.Name, func(t *testing.T) {
			clearEnv(t)
			path := configtest.StageText(t, "sidecar.yaml", file)
			t.Chdir(filepath.Dir(path))
			if k.Name == "triton.tls.enabled" {
				// Turn it off in the file, so that the variable matters.
				path = configtest.StageText(t, "sidecar.yaml", strings.Replace(file, "enabled: true", "enabled: false", 1))
				t.Chdir(filepath.Dir(path))
				t.Setenv(EnvVar("triton.tls.ca_file"), "")
				t.Setenv(EnvVar("triton.tls.cert_file"), "")
				t.Setenv(EnvVar("triton.tls.key_file"), "")
				t.Setenv(EnvVar("triton.tls.server_name"), "")
			}
			if k.Name == "server.tls.enabled" {
				// Off in the file, its files given by the environment.
				path = configtest.StageText(t, "sidecar.yaml", strings.Replace(file, `  tls:
    enabled: true
    cert_file: tls/server.pem
    key_file: tls/server-key.pem
    client_ca_file: tls/client-ca.pem
    metrics: true
`, "  tls:\n    enabled: false\n", 1))
				t.Setenv(EnvVar("server.tls.cert_file"), "tls/server.pem")
				t.Setenv(EnvVar("server.tls.key_file"), "tls/server-key.pem")
				t.Chdir(filepath.Dir(path))
			}
			if k.Name == "management.token_file" {
				writeToken(t, filepath.Join(filepath.Dir(path), "other.token"))
			}
			t.Setenv(EnvVar(k.Name), tt.env)
			c, err := Load(path, nil)
			if err != nil {
				t.Fatalf("Load with %s=%q: %v", EnvVar(k.Name), tt.env, err)
			}
			if got := k.Field(c).Interface(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s=%q: %s = %#v, want %#v", EnvVar(k.Name), tt.env, k.Name, got, tt.want)
			}
		})
	}
}

// TestEnvWithoutFile configures the sidecar from the environment alone,
// for keys the file does not mention (there is none).
func TestEnvWithoutFile(t *testing.T) {
	clearEnv(t)
	t.Setenv("REACT_TRITON_GRPC", "triton:8001")
	t.Setenv("REACT_TRITON_HTTP", "triton:8000")
	t.Setenv("REACT_LIMITS_MAX_REQUEST_BYTES", "1GiB")
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Triton.GRPC, want.Triton.HTTP = "triton:8001", "triton:8000"
	want.Limits.MaxRequestBytes = GiB
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
}

// TestEnvWrongType checks that bad values in the environment are all
// reported, naming the key and the variable.
func TestEnvWrongType(t *testing.T) {
	clearEnv(t)
	t.Setenv("REACT_CACHE_SIZE", "big")
	t.Setenv("REACT_TRITON_TIMEOUT", "30")
	t.Setenv("REACT_LIMITS_MAX_REQUEST_BYTES", "64 megs")
	t.Setenv("REACT_TRITON_TLS_ENABLED", "yes")
	t.Setenv("REACT_LOG_LEVEL", "loud")
	path := configtest.StageText(t, "sidecar.yaml", minimalYAML)
	_, err := Load(path, nil)
	want := `config: ` + path + `: 5 problems:
  triton.tls.enabled: want true or false, got "yes" (from $REACT_TRITON_TLS_ENABLED)
  triton.timeout: invalid duration "30": want a number with a unit (ns, us, ms, s, m, h), like "30s" or "2m" (from $REACT_TRITON_TIMEOUT)
  limits.max_request_bytes: invalid size "64 megs": unknown unit "megs" (want B, KB, MB, GB, KiB, MiB or GiB) (from $REACT_LIMITS_MAX_REQUEST_BYTES)
  cache.size: want an integer, got "big" (from $REACT_CACHE_SIZE)
  log.level: "loud" is not one of debug, info, warn, error (from $REACT_LOG_LEVEL)`
	if err == nil || err.Error() != want {
		t.Errorf("Load: got error\n%v\nwant\n%s", err, want)
	}
}

// newFlags returns a flag set with BindFlags' flags, parsed from args.
func newFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	return configtest.Flags(t, "sidecar", BindFlags, args...)
}

// TestFlags sets every flag over a file that sets every key it overrides.
func TestFlags(t *testing.T) {
	clearEnv(t)
	path := configtest.StageText(t, "sidecar.yaml", `triton:
  grpc: file:1
  http: file:2
listen:
  grpc: ":6001"
  http: ":6000"
  metrics: ":6003"
  shutdown_timeout: 5s
log:
  level: warn
`)
	fs := newFlags(t,
		"--triton-grpc=flag:1", "--triton-http=flag:2",
		"--grpc-listen=:5001", "--http-listen=:5000", "--metrics-listen=",
		"--shutdown-timeout=1m", "--log-level=debug")
	c, err := Load(path, fs)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.File = path
	want.Triton.GRPC, want.Triton.HTTP = "flag:1", "flag:2"
	want.Listen = Listen{GRPC: ":5001", HTTP: ":5000", Metrics: "", ShutdownTimeout: time.Minute}
	want.Log.Level = "debug"
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}

	// Every flag but --config overrides a key, and the help shows the
	// built-in defaults.
	fs.VisitAll(func(f *pflag.Flag) {
		key, ok := flagKeys[f.Name]
		switch {
		case f.Name == FlagConfig, f.Name == FlagPrintConfig:
		case !ok:
			t.Errorf("flag --%s overrides no key", f.Name)
		default:
			k := scalarKeys[slices.IndexFunc(scalarKeys, func(k layer.Key) bool { return k.Name == key })]
			if def := k.Field(Default()).Interface(); f.DefValue != toString(def) {
				t.Errorf("--%s: default %q, want %q (the default of %s)", f.Name, f.DefValue, toString(def), key)
			}
		}
	})
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return v.(interface{ String() string }).String()
}

// TestFlagsUnset checks that flags that were not set leave the file's
// values alone, although their defaults differ.
func TestFlagsUnset(t *testing.T) {
	clearEnv(t)
	path := configtest.StageText(t, "sidecar.yaml", minimalYAML+"listen:\n  grpc: \":6001\"\nlog:\n  level: warn\n")
	c, err := Load(path, newFlags(t, "--http-listen=:5000"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen.GRPC != ":6001" || c.Log.Level != "warn" || c.Listen.HTTP != ":5000" {
		t.Errorf("listen.grpc %q, log.level %q, listen.http %q; want \":6001\", \"warn\", \":5000\"", c.Listen.GRPC, c.Log.Level, c.Listen.HTTP)
	}
}

// TestConfigFlag checks that --config names the file when path is "".
func TestConfigFlag(t *testing.T) {
	clearEnv(t)
	path := configtest.StageText(t, "sidecar.yaml", minimalYAML+"cache:\n  size: 3\n")
	c, err := Load("", newFlags(t, "--config", path))
	if err != nil {
		t.Fatal(err)
	}
	if c.File != path || c.Cache.Size != 3 {
		t.Errorf("File %q, cache.size %d; want %q, 3", c.File, c.Cache.Size, path)
	}
	// An explicit path wins over the flag.
	other := configtest.StageText(t, "other.yaml", minimalYAML+"cache:\n  size: 4\n")
	if c, err = Load(other, newFlags(t, "--config", path)); err != nil {
		t.Fatal(err)
	}
	if c.File != other || c.Cache.Size != 4 {
		t.Errorf("File %q, cache.size %d; want %q, 4", c.File, c.Cache.Size, other)
	}
}

// TestPrecedence checks flag > env > file > default for one key of each
// type that a flag can set.
func TestPrecedence(t *testing.T) {
	type layers struct{ file, env, flag string }
	tests := []struct {
		key, flag string
		set       layers
		get       func(*Config) any
		want      any
	}{
		{"listen.grpc", FlagGRPCListen, layers{":1", ":2", ":3"}, func(c *Config) any { return c.Listen.GRPC }, ":3"},
		{"listen.grpc", FlagGRPCListen, layers{":1", ":2", ""}, func(c *Config) any { return c.Listen.GRPC }, ":2"},
		{"listen.grpc", FlagGRPCListen, layers{":1", "", ""}, func(c *Config) any { return c.Listen.GRPC }, ":1"},
		{"listen.grpc", FlagGRPCListen, layers{"", "", ""}, func(c *Config) any { return c.Listen.GRPC }, DefaultGRPCListen},
		{"listen.grpc", FlagGRPCListen, layers{"", "", ":3"}, func(c *Config) any { return c.Listen.GRPC }, ":3"},
		{"listen.shutdown_timeout", FlagShutdownTimeout, layers{"1s", "2s", "3s"}, func(c *Config) any { return c.Listen.ShutdownTimeout }, 3 * time.Second},
		{"listen.shutdown_timeout", FlagShutdownTimeout, layers{"1s", "2s", ""}, func(c *Config) any { return c.Listen.ShutdownTimeout }, 2 * time.Second},
		{"listen.shutdown_timeout", FlagShutdownTimeout, layers{"1s", "", ""}, func(c *Config) any { return c.Listen.ShutdownTimeout }, time.Second},
		{"listen.shutdown_timeout", FlagShutdownTimeout, layers{"", "", ""}, func(c *Config) any { return c.Listen.ShutdownTimeout }, DefaultShutdownTimeout},
		{"log.level", FlagLogLevel, layers{"warn", "error", "debug"}, func(c *Config) any { return c.Log.Level }, "debug"},
		{"log.level", FlagLogLevel, layers{"warn", "error", ""}, func(c *Config) any { return c.Log.Level }, "error"},
		{"log.level", FlagLogLevel, layers{"", "error", ""}, func(c *Config) any { return c.Log.Level }, "error"},
		{"log.level", FlagLogLevel, layers{"warn", "", ""}, func(c *Config) any { return c.Log.Level }, "warn"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"/"+tt.set.file+","+tt.set.env+","+tt.set.flag, func(t *testing.T) {
			clearEnv(t)
			text := minimalYAML
			if tt.set.file != "" {
				section, key, _ := strings.Cut(tt.key, ".")
				text += section + ":\n  " + key + ": \"" + tt.set.file + "\"\n"
			}
			path := configtest.StageText(t, "sidecar.yaml", text)
			if tt.set.env != "" {
				t.Setenv(EnvVar(tt.key), tt.set.env)
			}
			var args []string
			if tt.set.flag != "" {
				args = append(args, "--"+tt.flag+"="+tt.set.flag)
			}
			c, err := Load(path, newFlags(t, args...))
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.get(c); got != tt.want {
				t.Errorf("%s = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

// TestRelativePaths checks that relative paths in the file are resolved
// against its directory, whatever the working directory, and that
// absolute ones and those from the environment are kept.
func TestRelativePaths(t *testing.T) {
	clearEnv(t)
	other := configtest.StageText(t, "unused.yaml", "")
	otherDir := filepath.Dir(other)
	path := configtest.StageText(t, "sidecar.yaml", minimalYAML+`  tls:
    enabled: true
    ca_file: tls/../tls/ca.pem
    cert_file: `+filepath.Join(otherDir, "tls/client.pem")+`
components:
  - name: a
    path: components.safetensors
  - name: b
    path: `+filepath.Join(otherDir, "second.safetensors")+`
`)
	dir := filepath.Dir(path)
	// Load the file by a relative path from elsewhere, so that resolving
	// against the working directory would fail.
	t.Chdir(otherDir)
	rel, err := filepath.Rel(otherDir, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("REACT_TRITON_TLS_KEY_FILE", "tls/client-key.pem") // relative to the working directory
	c, err := Load(rel, nil)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ what, got, want string }{
		{"File", c.File, path},
		{"ca_file", c.Triton.TLS.CAFile, filepath.Join(dir, "tls/ca.pem")},
		{"cert_file", c.Triton.TLS.CertFile, filepath.Join(otherDir, "tls/client.pem")},
		{"key_file", c.Triton.TLS.KeyFile, "tls/client-key.pem"},
		{"components[0].path", c.Components[0].Path, filepath.Join(dir, "components.safetensors")},
		{"components[1].path", c.Components[1].Path, filepath.Join(otherDir, "second.safetensors")},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %q, want %q", ch.what, ch.got, ch.want)
		}
	}
}

// oneProblem is a configuration's text and the one problem Load reports
// for it.
type oneProblem struct{ yaml, want string }

// wantOneProblem loads each test's text, staged as sidecar.yaml with the
// environment cleared, and checks that Load reports its problem alone.
func wantOneProblem(t *testing.T, tests []oneProblem) {
	t.Helper()
	for _, tt := range tests {
		clearEnv(t)
		path := configtest.StageText(t, "sidecar.yaml", tt.yaml)
		_, err := Load(path, nil)
		if got := configtest.ProblemLines(t, err); !slices.Equal(got, []string{tt.want}) {
			t.Errorf("Load(%q):\ngot  %q\nwant %q", tt.yaml, got, tt.want)
		}
	}
}

// TestUnknownKeys checks that a misspelt key anywhere is an error naming
// its path, with a suggestion when one is close.
func TestUnknownKeys(t *testing.T) {
	tests := []oneProblem{
		{minimalYAML + "caches:\n  size: 1\n", `caches: unknown key, did you mean "cache"? (line 4)`},
		{minimalYAML + "Log:\n  level: info\n", `Log: unknown key, did you mean "log"? (line 4)`},
		{minimalYAML + "  tls:\n    enable: true\n", `triton.tls.enable: unknown key, did you mean "enabled"? (line 5)`},
		{minimalYAML + "listen:\n  prometheus: :9\n", `listen.prometheus: unknown key (want one of: grpc, http, metrics, shutdown_timeout) (line 5)`},
		{minimalYAML + "components:\n  - name: c\n    path: components.safetensors\n    betta: 1\n",
			`components[0].betta: unknown key, did you mean "beta"? (line 7)`},
		{minimalYAML + `components:
  - name: c
    path: components.safetensors
models:
  - name: m
    backbone: {model: b, outptu: f}
    heads: [{task: t, model: h}]
`, `models[0].backbone.outptu: unknown key, did you mean "output"? (line 9)`},
		{minimalYAML + "file: x.yaml\n", `file: unknown key (want one of: triton, listen, server, management, pprof, limits, cache, admission, linalg, log, components, models, experiments, feedback, sampling) (line 4)`},
	}
	wantOneProblem(t, tests)
}

// TestWrongTypes checks that a value of the wrong type is an error naming
// its path.
func TestWrongTypes(t *testing.T) {
	tests := []oneProblem{
		{minimalYAML + "cache:\n  size: \"128\"\n", `cache.size: want an integer, got string "128" (line 5)`},
		{minimalYAML + "cache:\n  size: 1.5\n", `cache.size: want an integer, got number 1.5 (line 5)`},
		{minimalYAML + "cache:\n  size: 99999999999999999999\n", `cache.size: want an integer, got number 99999999999999999999 (line 5)`},
		{minimalYAML + "limits:\n  max_batch_size: [1]\n", `limits.max_batch_size: want an integer, got a list (line 5)`},
		{minimalYAML + "  timeout: 30\n", `triton.timeout: invalid duration 30: want a number with a unit (ns, us, ms, s, m, h), like "30s" or "2m" (line 4)`},
		{minimalYAML + "  timeout: soon\n", `triton.timeout: invalid duration "soon": want a number with a unit (ns, us, ms, s, m, h), like "30s" or "2m" (line 4)`},
		{minimalYAML + "  tls:\n    enabled: 1\n", `triton.tls.enabled: want true or false, got integer 1 (line 5)`},
		{minimalYAML + "limits:\n  max_request_bytes: 1.5GB\n", `limits.max_request_bytes: invalid size "1.5GB": unknown unit ".5GB" (want B, KB, MB, GB, KiB, MiB or GiB) (line 5)`},
		{minimalYAML + "limits:\n  max_request_bytes: 1e9\n", `limits.max_request_bytes: want a size in bytes, like 67108864 or "64MiB", got number 1e9 (line 5)`},
		{minimalYAML + "log: debug\n", `log: want a mapping of keys, got string "debug" (line 4)`},
		{minimalYAML + "components:\n  - name: c\n    path: components.safetensors\n    beta: [1]\n",
			`components[0].beta: want a number, got a list (line 7)`},
		{minimalYAML + "components:\n  - name: c\n    path: components.safetensors\n    presets: [a]\n",
			`components[0].presets: want a mapping, got a list (line 7)`},
		{minimalYAML + "models: {name: m}\n", `models: want a list, got a mapping (line 4)`},
	}
	wantOneProblem(t, tests)
}

// TestLoadMissingFile checks the error for a file that is not there.
func TestLoadMissingFile(t *testing.T) {
	clearEnv(t)
	t.Chdir(t.TempDir())
	_, err := Load("sidecar.yaml", nil)
	if want := "config: reading sidecar.yaml: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
	}
}

// TestErrorsAs checks that callers can list the problems of Load's error.
func TestErrorsAs(t *testing.T) {
	clearEnv(t)
	path := configtest.StageText(t, "sidecar.yaml", "cache:\n  size: -1\n")
	_, err := Load(path, nil)
	var cerr problem.List
	if !errors.As(err, &cerr) {
		t.Fatalf("%v is not a problem.List", err)
	}
	want := []problem.Problem{
		{Path: "triton.grpc", Msg: "required: the address of the upstream Triton, host:port"},
		{Path: "triton.http", Msg: "required: the address of the upstream Triton, host:port"},
		{Path: "cache.size", Msg: "must be 0 (bounded by max_bytes only) or positive, got -1", Line: 2},
	}
	var got []problem.Problem
	for _, fe := range cerr {
		got = append(got, *fe)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestEnvSection checks that a variable named after a section, which viper
// would let hide all of the section's keys, is reported.
func TestEnvSection(t *testing.T) {
	clearEnv(t)
	t.Setenv("REACT_TRITON_TLS", "on")
	path := configtest.StageText(t, "sidecar.yaml", minimalYAML+"  timeout: 5s\n")
	_, err := Load(path, nil)
	want := []string{"triton.tls: a section cannot be set from the environment, only its keys (such as $REACT_TRITON_TLS_ENABLED): unset $REACT_TRITON_TLS (from $REACT_TRITON_TLS)"}
	if got := configtest.ProblemLines(t, err); !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}

	t.Setenv("REACT_TRITON_TLS", "")
	os.Unsetenv("REACT_TRITON_TLS")
	t.Setenv("REACT_LOG", "")
	_, err = Load(path, nil)
	want = []string{"log: a section cannot be set from the environment, only its keys (such as $REACT_LOG_LEVEL): unset $REACT_LOG (from $REACT_LOG)"}
	if got := configtest.ProblemLines(t, err); !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
