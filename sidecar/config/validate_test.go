package config

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/config/configtest"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// TestLoadBad loads every file of testdata/bad and compares the error with
// the golden file next to it. The directory the file was staged in is
// written $DIR in the goldens.
func TestLoadBad(t *testing.T) {
	configtest.LoadBad(t, "testdata/bad/*.yaml", func(t *testing.T, path string) (any, error) {
		clearEnv(t)
		return Load(path, nil)
	})
}

// validConfig returns a valid configuration with one components entry (a
// file in a temporary directory) and one model.
func validConfig(t *testing.T) *Config {
	t.Helper()
	dir := filepath.Dir(configtest.StageText(t, "unused.yaml", ""))
	c := Default()
	c.Triton.GRPC, c.Triton.HTTP = "127.0.0.1:8101", "127.0.0.1:8100"
	c.Components = []Components{{
		Name:    "zoo",
		Path:    filepath.Join(dir, "components.safetensors"),
		Presets: map[string]string{"even": "a=1,b=1"},
	}}
	c.Models = []Model{{
		Name:       "classifier",
		Components: "zoo",
		Backbone:   Backbone{Model: "backbone", Output: "feature"},
		Heads:      []Head{{Task: "a", Model: "head_a"}},
	}}
	return c
}

// TestValidate changes one thing of a valid configuration at a time and
// checks the problems Validate reports, in order.
func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config, dir string)
		want   []string // nil: valid
	}{
		{"valid", func(c *Config, dir string) {}, nil},
		{"no models", func(c *Config, dir string) { c.Components, c.Models = nil, nil }, nil},
		{"hostnames and IPv6", func(c *Config, dir string) {
			c.Triton.GRPC, c.Triton.HTTP = "triton.svc.cluster.local:8001", "[fd00::1]:8000"
			c.Listen.GRPC, c.Listen.HTTP, c.Listen.Metrics = "0.0.0.0:0", "[::]:0", "localhost:0"
		}, nil},
		{"upstream addresses", func(c *Config, dir string) {
			c.Triton.GRPC, c.Triton.HTTP = "", "triton"
		}, []string{
			"triton.grpc: required: the address of the upstream Triton, host:port",
			`triton.http: "triton": want host:port (missing port in address)`,
		}},
		{"upstream ports", func(c *Config, dir string) {
			c.Triton.GRPC, c.Triton.HTTP = "triton:0", ":8000"
		}, []string{
			`triton.grpc: "triton:0": port "0" is not a number from 1 to 65535`,
			`triton.http: ":8000": want host:port with a host, such as 127.0.0.1:8000`,
		}},
		{"upstream scheme", func(c *Config, dir string) { c.Triton.HTTP = "https://triton:8000" },
			[]string{`triton.http: "https://triton:8000": want host:port without a scheme`}},
		{"listen ports", func(c *Config, dir string) {
			c.Listen.GRPC, c.Listen.HTTP, c.Listen.Metrics = ":65536", ":+80", ":x"
		}, []string{
			`listen.grpc: ":65536": port "65536" is not a number from 0 to 65535`,
			`listen.http: ":+80": port "+80" is not a number from 0 to 65535`,
			`listen.metrics: ":x": port "x" is not a number from 0 to 65535`,
		}},
		{"listen required", func(c *Config, dir string) { c.Listen.GRPC, c.Listen.HTTP, c.Listen.Metrics = "", "", "" },
			[]string{
				"listen.grpc: required: where the sidecar listens, [host]:port",
				"listen.http: required: where the sidecar listens, [host]:port",
			}},
		{"listen collisions", func(c *Config, dir string) {
			c.Listen.GRPC, c.Listen.HTTP, c.Listen.Metrics = ":9000", "127.0.0.1:9000", "10.0.0.1:9000"
		}, []string{
			`listen.http: "127.0.0.1:9000" is also listen.grpc: the listeners need different ports`,
			`listen.metrics: "10.0.0.1:9000" is also listen.grpc: the listeners need different ports`,
		}},
		{"different hosts, same port", func(c *Config, dir string) {
			c.Listen.GRPC, c.Listen.HTTP, c.Listen.Metrics = "10.0.0.1:9000", "10.0.0.2:9000", ":0"
		}, nil},
		{"port 0 twice", func(c *Config, dir string) { c.Listen.GRPC, c.Listen.HTTP, c.Listen.Metrics = ":0", ":0", ":0" }, nil},
		{"calls itself", func(c *Config, dir string) {
			c.Triton.GRPC, c.Triton.HTTP = "localhost:8001", "10.1.1.1:8000"
		}, []string{
			`listen.grpc: ":8001" is the port of triton.grpc ("localhost:8001") on this host: the sidecar would call itself; move Triton or the sidecar to another port`,
		}},
		{"Triton elsewhere on the same ports", func(c *Config, dir string) {
			c.Triton.GRPC, c.Triton.HTTP = "triton:8001", "triton:8000"
		}, nil},
		{"durations", func(c *Config, dir string) {
			c.Triton.Timeout, c.Triton.StartupTimeout, c.Listen.ShutdownTimeout = -time.Second, -time.Minute, 0
		}, []string{
			"triton.timeout: must not be negative, got -1s",
			"triton.startup_timeout: must be positive, got -1m0s",
			"listen.shutdown_timeout: must be positive, got 0s",
		}},
		{"zero timeouts", func(c *Config, dir string) { c.Triton.Timeout, c.Triton.StartupTimeout = 0, 0 }, []string{
			// No bound on upstream calls is allowed; start-up and reloads
			// must have time to build.
			"triton.startup_timeout: must be positive, got 0s",
		}},
		{"TLS off", func(c *Config, dir string) {
			c.Triton.TLS = TLS{CAFile: "x", CertFile: "y", KeyFile: "z", ServerName: "n", InsecureSkipVerify: true}
		}, []string{
			"triton.tls.ca_file: set while TLS is off: set triton.tls.enabled: true to use it, or remove it",
			"triton.tls.cert_file: set while TLS is off: set triton.tls.enabled: true to use it, or remove it",
			"triton.tls.key_file: set while TLS is off: set triton.tls.enabled: true to use it, or remove it",
			"triton.tls.server_name: set while TLS is off: set triton.tls.enabled: true to use it, or remove it",
			"triton.tls.insecure_skip_verify: set while TLS is off: set triton.tls.enabled: true to use it, or remove it",
		}},
		{"TLS on, system roots", func(c *Config, dir string) { c.Triton.TLS = TLS{Enabled: true} }, nil},
		{"TLS on, all files", func(c *Config, dir string) {
			c.Triton.TLS = TLS{Enabled: true, CAFile: filepath.Join(dir, "tls/ca.pem"),
				CertFile: filepath.Join(dir, "tls/client.pem"), KeyFile: filepath.Join(dir, "tls/client-key.pem")}
		}, nil},
		{"TLS key without certificate", func(c *Config, dir string) {
			c.Triton.TLS = TLS{Enabled: true, KeyFile: filepath.Join(dir, "tls/client-key.pem")}
		}, []string{"triton.tls.cert_file: required with key_file: a client certificate needs both"}},
		{"TLS files", func(c *Config, dir string) {
			c.Triton.TLS = TLS{Enabled: true, CAFile: filepath.Join(dir, "nope.pem"), CertFile: dir, KeyFile: filepath.Join(dir, "tls/client-key.pem")}
		}, []string{
			"triton.tls.ca_file: cannot read $DIR/nope.pem: no such file or directory",
			"triton.tls.cert_file: $DIR is not a regular file",
		}},
		{"limits", func(c *Config, dir string) {
			c.Limits = Limits{MaxRequestBytes: 0, MaxInflightBytes: 0, MaxInputs: 0, MaxOutputs: -1, MaxParameters: 0, MaxBatchSize: -1, MaxPreferenceLength: 0}
			c.Cache = Cache{MaxBytes: 0, Size: -1}
		}, []string{
			"limits.max_request_bytes: must be between 1 and 2147483647 (2GiB-1), got 0",
			"limits.max_inflight_bytes: must be positive, got 0",
			"limits.max_inputs: must be at least 1, got 0",
			"limits.max_outputs: must be at least 1, got -1",
			"limits.max_parameters: must be at least 1, got 0",
			"limits.max_batch_size: must be 0 (the models' own limit) or positive, got -1",
			"limits.max_preference_length: must be at least 1, got 0",
			"cache.max_bytes: must be positive, got 0",
			"cache.size: must be 0 (bounded by max_bytes only) or positive, got -1",
		}},
		{"limits at their bounds", func(c *Config, dir string) {
			c.Limits = Limits{MaxRequestBytes: MaxRequestBytesLimit, MaxInflightBytes: 1, MaxInputs: 1, MaxOutputs: 1, MaxParameters: 1, MaxBatchSize: 0, MaxPreferenceLength: 1}
			c.Cache = Cache{MaxBytes: 1, Size: 0}
		}, nil},
		{"admission", func(c *Config, dir string) {
			c.Admission = Admission{MaxPendingSolves: -1, MaxConcurrentSolves: -1, RetryAfter: 0, KeyHeader: "x user", KeyRate: -1, KeyBurst: 0, SolveRate: -2, SolveBurst: -1, SolveShare: math.NaN(), SolveShareBurst: -time.Second, ShedDelay: -time.Millisecond, PreferenceGrid: MaxPreferenceGrid + 1}
		}, []string{
			"admission.max_pending_solves: must be 0 (no queue) or positive, got -1",
			"admission.max_concurrent_solves: must be 0 (half the cores) or positive, got -1",
			"admission.retry_after: must be positive, got 0s",
			`admission.key_header: "x user" is not a header name`,
			"admission.key_rate: must be 0 (no bound) or a positive number of new preferences per second, got -1",
			"admission.key_burst: must be at least 1, got 0",
			"admission.solve_rate: must be 0 (no bound) or a positive number of new preferences per second, got -2",
			"admission.shed_delay: must be 0 (answer at once) or positive, got -1ms",
			"admission.solve_burst: must be 0 (one second of solve_rate) or positive, got -1",
			"admission.solve_share: must be from 0 (no bound) to 1 (all of the solvers' time), got NaN",
			"admission.solve_share_burst: must be 0 (one second of solve_share) or positive, got -1s",
			"admission.preference_grid: must be 0 (off) or from 1 to 1000000, got 1000001",
		}},
		{"admission key header is ReACT's", func(c *Config, dir string) { c.Admission.KeyHeader = "React-Preference" },
			[]string{`admission.key_header: "React-Preference": react-* keys are ReACT's own`}},
		{"admission rate not a number", func(c *Config, dir string) { c.Admission.KeyRate = math.NaN() },
			[]string{"admission.key_rate: must be 0 (no bound) or a positive number of new preferences per second, got NaN"}},
		{"admission solve rate not a number", func(c *Config, dir string) { c.Admission.SolveRate = math.NaN() },
			[]string{"admission.solve_rate: must be 0 (no bound) or a positive number of new preferences per second, got NaN"}},
		{"admission solve rate infinite", func(c *Config, dir string) { c.Admission.SolveRate = math.Inf(1) },
			[]string{"admission.solve_rate: must be 0 (no bound) or a positive number of new preferences per second, got +Inf"}},
		// A retry_after below the default shed_delay is valid: the hold is
		// capped at retry_after (TestCacheOptions).
		{"admission retry_after below the shed delay", func(c *Config, dir string) {
			c.Admission.RetryAfter = 50 * time.Millisecond
		}, nil},
		{"admission solve share off", func(c *Config, dir string) { c.Admission.SolveShare, c.Admission.SolveShareBurst = 0, 0 }, nil},
		{"admission solve share out of range", func(c *Config, dir string) { c.Admission.SolveShare = -0.5 },
			[]string{"admission.solve_share: must be from 0 (no bound) to 1 (all of the solvers' time), got -0.5"}},
		{"admission solve share infinite", func(c *Config, dir string) { c.Admission.SolveShare = math.Inf(1) },
			[]string{"admission.solve_share: must be from 0 (no bound) to 1 (all of the solvers' time), got +Inf"}},
		{"admission at its bounds", func(c *Config, dir string) {
			c.Admission = Admission{MaxPendingSolves: 0, MaxConcurrentSolves: 0, RetryAfter: time.Nanosecond, KeyHeader: "x-user-id", KeyRate: 0.5, KeyBurst: 1, SolveRate: 0.01, SolveBurst: 0, SolveShare: 1, SolveShareBurst: 0, ShedDelay: time.Nanosecond, PresetsOnly: true, PreferenceGrid: MaxPreferenceGrid}
		}, nil},
		{"request bytes too large", func(c *Config, dir string) { c.Limits.MaxRequestBytes = 2 * GiB },
			[]string{"limits.max_request_bytes: must be between 1 and 2147483647 (2GiB-1), got 2147483648"}},
		{"log", func(c *Config, dir string) { c.Log = Log{Level: "INFO", Format: ""} }, []string{
			`log.level: "INFO" is not one of debug, info, warn, error`,
			`log.format: "" is not one of text, json`,
		}},
		{"components names", func(c *Config, dir string) {
			p := c.Components[0].Path
			c.Components = []Components{{Name: "", Path: p}, {Name: "-x", Path: p}, {Name: "a.b", Path: p}, {Name: "a.b", Path: p}, {Name: strings.Repeat("n", 65), Path: p}}
			c.Models = nil
		}, []string{
			"components[0].name: required: how models refer to this entry",
			`components[1].name: "-x": want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'`,
			`components[3].name: "a.b" is also the name of components[2]`,
			`components[4].name: "` + strings.Repeat("n", 65) + `": want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'`,
		}},
		{"components path", func(c *Config, dir string) {
			c.Components = append(c.Components, Components{Name: "b"}, Components{Name: "c", Path: filepath.Join(dir, "missing")}, Components{Name: "d", Path: filepath.Join(dir, "tls")})
		}, []string{
			"components[1].path: required: the components file (safetensors) written by calibrate fit",
			"components[2].path: cannot read $DIR/missing: no such file or directory",
			"components[3].path: $DIR/tls is not a regular file",
		}},
		{"beta and normalize", func(c *Config, dir string) {
			c.Components[0].Beta = ptr(-0.5)
			c.Components[0].Normalize = "max"
		}, []string{
			"components[0].beta: " + react.ValidateBeta(-0.5).Error(),
			"components[0].normalize: " + errText(react.ParseNormalization("max")),
		}},
		{"beta not finite", func(c *Config, dir string) { c.Components[0].Beta = ptr(math.Inf(1)) },
			[]string{"components[0].beta: " + react.ValidateBeta(math.Inf(1)).Error()}},
		{"beta 0 and mean", func(c *Config, dir string) {
			c.Components[0].Beta = ptr(0.0)
			c.Components[0].Normalize = "mean"
		}, nil},
		{"presets and default preference", func(c *Config, dir string) {
			c.Components[0].DefaultPreference = " \t"
			c.Components[0].Presets = map[string]string{"ok": "a=1", "b c": "a=1", "empty": "", ".x": " "}
		}, []string{
			`components[0].default_preference: blank: write a preference such as "cars=0.6,dtd=0.4", or leave the key out for no correction`,
			`components[0].presets[".x"]: preset name ".x": want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'`,
			`components[0].presets[".x"]: empty preference: write one such as "cars=0.6,dtd=0.4"`,
			`components[0].presets["b c"]: preset name "b c": want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'`,
			`components[0].presets.empty: empty preference: write one such as "cars=0.6,dtd=0.4"`,
		}},
		{"model names", func(c *Config, dir string) {
			m := c.Models[0]
			c.Models = nil
			for _, name := range []string{"", "a/b", "a b", "ok", "ok"} {
				m.Name = name
				c.Models = append(c.Models, m)
			}
		}, []string{
			"models[0].name: required: the model name clients call",
			`models[1].name: "a/b": must not contain '/' or white space`,
			`models[2].name: "a b": must not contain '/' or white space`,
			`models[4].name: "ok" is also the name of models[3]`,
		}},
		{"shadowing", func(c *Config, dir string) {
			m := c.Models[0]
			m.Name = "head_a"
			c.Models = append(c.Models, m)
			m.Name = "backbone"
			c.Models = append(c.Models, m)
		}, []string{
			`models[1].name: "head_a" is also models[0].heads[0].model: it would shadow a model the sidecar itself calls`,
			`models[2].name: "backbone" is also models[0].backbone.model: it would shadow a model the sidecar itself calls`,
		}},
		{"components reference", func(c *Config, dir string) {
			m := c.Models[0]
			m.Components = "nope"
			c.Models = append(c.Models, m)
			c.Models[1].Name = "other"
		}, []string{`models[1].components: "nope" is not the name of a components entry (have: zoo)`}},
		{"components implied by the only entry", func(c *Config, dir string) { c.Models[0].Components = "" }, nil},
		{"components required with several", func(c *Config, dir string) {
			c.Components = append(c.Components, c.Components[0])
			c.Components[1].Name = "second"
			c.Models[0].Components = ""
		}, []string{"models[0].components: required when there are several components entries (zoo, second)"}},
		{"components required with none", func(c *Config, dir string) {
			c.Components = nil
		}, []string{
			`models[0].components: "zoo" is not the name of a components entry: there is none; add one under components`,
		}},
		{"backbone and heads", func(c *Config, dir string) {
			c.Models[0].Backbone = Backbone{Version: "01"}
			c.Models[0].Heads = nil
			m := c.Models[0]
			m.Name = "two"
			m.Backbone = Backbone{Model: "b", Output: "f", Version: "99999999999999999999"}
			m.Heads = []Head{{Version: "-1"}, {Task: "t", Model: "h", Version: "7"}}
			c.Models = append(c.Models, m)
		}, []string{
			"models[0].backbone.model: required: the merged backbone model in Triton",
			`models[0].backbone.version: "01": want a positive integer, or leave it out for Triton's choice`,
			"models[0].backbone.output: required: the backbone output holding the feature to correct",
			"models[0].heads: at least one head required",
			`models[1].backbone.version: "99999999999999999999": too large`,
			"models[1].heads[0].task: required: the task of the components file this head serves",
			"models[1].heads[0].model: required: the head model in Triton",
			`models[1].heads[0].version: "-1": want a positive integer, or leave it out for Triton's choice`,
		}},
		{"outputs", func(c *Config, dir string) {
			c.Models[0].Heads = []Head{
				{Task: "a", Model: "head_a", Outputs: map[string]string{"logits": "y", "probs": "p", "": "e"}},
				{Task: "b", Model: "head_b", Outputs: map[string]string{"logits": "y", "x:0": ""}},
			}
			// Another model may reuse the names.
			m := c.Models[0]
			m.Name = "copy"
			c.Models = append(c.Models, m)
			c.Models[1].Heads = []Head{{Task: "a", Model: "head_a", Outputs: map[string]string{"logits": "y"}}}
		}, []string{
			`models[0].heads[0].outputs[""]: empty head output name`,
			`models[0].heads[1].outputs.logits: "y" is also the name of models[0].heads[0].outputs.logits: outputs of one model need different names`,
			`models[0].heads[1].outputs["x:0"]: empty name: give the name clients see this output under`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig(t)
			dir := filepath.Dir(c.Components[0].Path)
			tt.change(c, dir)
			err := c.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want %q", tt.want)
			}
			var got []string
			for _, line := range configtest.ProblemLines(t, err) {
				got = append(got, strings.ReplaceAll(line, dir, "$DIR"))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Validate:\ngot  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func errText(_ any, err error) string { return err.Error() }

// TestErrorFormat checks how one and several problems are printed.
func TestErrorFormat(t *testing.T) {
	one := problem.List{{Path: "cache.size", Msg: "must be at least 1, got 0", Line: 3}}
	if got, want := one.Error(), "cache.size: must be at least 1, got 0 (line 3)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	two := problem.List{
		{Path: "cache.size", Msg: "m1", Source: "$REACT_CACHE_SIZE", Line: 3},
		{Msg: "m2"},
	}
	if got, want := two.Error(), "2 problems:\n  cache.size: m1 (from $REACT_CACHE_SIZE)\n  m2"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var fe *problem.Problem
	if !errors.As(fmt.Errorf("config: x.yaml: %w", two), &fe) || fe != two[0] {
		t.Errorf("errors.As found %v, want the first problem", fe)
	}
}

// TestLoadReportsEveryPreferenceProblem: the preferences are checked
// against the components file's tasks beside every other problem, so that
// an invalid β, a typo'd key and an arm's unknown preset hide none of the
// unknown tasks in the default, a preset and an arm.
func TestLoadReportsEveryPreferenceProblem(t *testing.T) {
	clearEnv(t)
	path := configtest.StageText(t, "sidecar.yaml", `
triton: {grpc: localhost:8101, http: localhost:8100}
components:
  - name: c
    path: comps.safetensors
    beta: -1
    normalise: sum
    default_preference: cars=1,foo=1
    presets: {good: cars=1, bad: bogus=1}
models:
  - {name: m, components: c, backbone: {model: b, output: f}, heads: [{task: cars, model: h}]}
experiments:
  - name: e
    models: [m]
    key: {header: x-user}
    arms:
      - {name: a, weight: 1, preset: nosuch}
      - {name: b, weight: 1, preference: "zzz=1"}
`)
	c := &react.Components{D: 2, Beta: 0.1, Normalization: react.NormSum}
	for _, name := range []string{"cars", "dtd"} {
		c.Tasks = append(c.Tasks, &react.TaskStats{Name: name, N: 10, S: mat.NewDense(2, 2, []float64{1, 0, 0, 1}),
			G: mat.NewSymDense(2, []float64{2, 0, 0, 2}), WOrth: mat.NewDense(2, 2, []float64{1, 0, 0, 1})})
	}
	if err := componentsfile.Save(filepath.Join(filepath.Dir(path), "comps.safetensors"), c); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, nil)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	for _, want := range []string{
		"components[0].beta:",
		"components[0].normalise: unknown key",
		`components[0].default_preference: preference "cars=1,foo=1": unknown task "foo"`,
		`components[0].presets.bad: preference "bogus=1": unknown task "bogus"`,
		`experiments[0].arms[0].preset: "nosuch" is not a preset`,
		`experiments[0].arms[1].preference: preference "zzz=1": unknown task "zzz"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
