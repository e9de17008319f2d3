package deploytest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"sigs.k8s.io/yaml"

	"github.com/mergectl/react-triton/sidecar/config"
)

// loadCompose loads docker/compose.yaml with the compose specification's
// reference loader (the library docker compose is built on): the file is
// validated against the compose JSON schema, variables are interpolated
// from docker/.env alone (the test's environment is ignored), and paths
// are resolved.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{repoPath("docker", "compose.yaml")},
		cli.WithWorkingDirectory(repoPath("docker")), cli.WithEnvFiles(), cli.WithDotEnv, cli.WithResolvedPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker/compose.yaml: %v", err)
	}
	return p
}

// TestCompose: the compose file validates; Triton and the sidecar are
// built from this repository's Dockerfiles with docker/.env's versions;
// the sidecar reaches Triton on the ports Triton is started with, takes
// the client ports its configuration (the zoo's, by default) listens on,
// runs as non-root; Prometheus scrapes both metrics ports.
func TestCompose(t *testing.T) {
	p := loadCompose(t)
	env := dotEnv(t)
	svc := map[string]types.ServiceConfig{}
	for _, name := range []string{"triton", "sidecar", "prometheus"} {
		s, err := p.GetService(name)
		if err != nil {
			t.Fatalf("compose: %v", err)
		}
		svc[name] = s
	}
	triton, side := svc["triton"], svc["sidecar"]
	for _, s := range []types.ServiceConfig{triton, side} {
		b := s.Build
		if b == nil {
			t.Fatalf("service %s is not built here", s.Name)
		}
		if _, err := os.Stat(filepath.Join(b.Context, b.Dockerfile)); err != nil || b.Context != root {
			t.Errorf("service %s: build %s in %s, want a Dockerfile of docker/ with the repository as context", s.Name, b.Dockerfile, b.Context)
		}
		for k, v := range b.Args {
			if v == nil || *v != env[k] {
				t.Errorf("service %s: build arg %s=%v, docker/.env has %q", s.Name, k, v, env[k])
			}
		}
	}
	if triton.Build.Target != "zoo" {
		t.Errorf("triton: build target %q, want zoo (onnxruntime for the zoo's Python-backend models)", triton.Build.Target)
	}

	// Triton's ports, from its command line.
	tritonArgs := []string(triton.Command)
	port := func(flag string) int {
		v, ok := flagValue(tritonArgs, flag)
		if !ok {
			t.Fatalf("triton: no --%s in %v", flag, tritonArgs)
		}
		_, n := hostPort(t, "x:"+v)
		return n
	}
	for _, e := range []struct{ env, flag string }{{"REACT_TRITON_GRPC", "grpc-port"}, {"REACT_TRITON_HTTP", "http-port"}} {
		v := side.Environment[e.env]
		if v == nil {
			t.Fatalf("sidecar: %s is not set", e.env)
		}
		host, n := hostPort(t, *v)
		if host != "triton" || n != port(e.flag) {
			t.Errorf("sidecar: %s=%s, Triton is triton:%d", e.env, *v, port(e.flag))
		}
	}
	for _, p := range triton.Ports {
		t.Errorf("triton publishes port %d: clients would bypass the sidecar", p.Target)
	}

	// The sidecar's configuration: the file its command names, in the
	// directory mounted at /etc/react (the zoo's by default).
	cfgArg, _ := flagValue([]string(side.Command), "config")
	var cfgFile string
	for _, v := range side.Volumes {
		if rel, ok := strings.CutPrefix(cfgArg, v.Target+"/"); ok {
			cfgFile = filepath.Join(v.Source, rel)
			if !v.ReadOnly {
				t.Errorf("sidecar: %s is mounted read-write", v.Target)
			}
		}
	}
	if cfgFile == "" {
		t.Fatalf("sidecar: --config %s is on no volume", cfgArg)
	}
	// Loaded where it is, with its components files, and the environment
	// compose gives the container.
	clearReactEnv(t)
	for k, v := range side.Environment {
		t.Setenv(k, *v)
	}
	cfg, err := config.Load(cfgFile, nil)
	if err != nil {
		t.Fatalf("sidecar: %v", err)
	}
	if cfg.Triton.GRPC != *side.Environment["REACT_TRITON_GRPC"] {
		t.Errorf("sidecar: triton.grpc %s: the environment does not override it", cfg.Triton.GRPC)
	}
	published := map[int]bool{}
	for _, p := range side.Ports {
		published[int(p.Target)] = true
		if p.Published != "" && p.Published != strings.TrimSpace(p.Published) {
			t.Errorf("sidecar: odd published port %q", p.Published)
		}
	}
	for _, addr := range []string{cfg.Listen.HTTP, cfg.Listen.GRPC} {
		if _, n := hostPort(t, addr); !published[n] {
			t.Errorf("sidecar: listens on %s, which compose does not publish", addr)
		}
	}
	if side.User == "" || strings.HasPrefix(side.User, "0") || strings.HasPrefix(side.User, "root") {
		t.Errorf("sidecar: user %q, want a non-root uid", side.User)
	}

	// Prometheus scrapes the sidecar's and Triton's metrics.
	_, sideMetrics := hostPort(t, cfg.Listen.Metrics)
	targets := prometheusTargets(t)
	for _, want := range []string{"sidecar:" + itoa(sideMetrics), "triton:" + itoa(port("metrics-port"))} {
		if !targets[want] {
			t.Errorf("docker/prometheus.yml does not scrape %s (it scrapes %v)", want, targets)
		}
	}
	var mounted bool
	for _, v := range svc["prometheus"].Volumes {
		mounted = mounted || v.Source == repoPath("docker", "prometheus.yml")
	}
	if !mounted {
		t.Error("prometheus: docker/prometheus.yml is not mounted")
	}
}

// prometheusConfig is the part of Prometheus' configuration schema that
// docker/prometheus.yml uses.
type prometheusConfig struct {
	Global struct {
		ScrapeInterval string `json:"scrape_interval"`
	} `json:"global"`
	RuleFiles     []string `json:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `json:"job_name"`
		StaticConfigs []struct {
			Targets []string `json:"targets"`
		} `json:"static_configs"`
	} `json:"scrape_configs"`
}

// loadPrometheus decodes docker/prometheus.yml strictly.
func loadPrometheus(t *testing.T) prometheusConfig {
	t.Helper()
	var cfg prometheusConfig
	if err := yaml.UnmarshalStrict([]byte(readFile(t, "docker", "prometheus.yml")), &cfg); err != nil {
		t.Fatalf("docker/prometheus.yml: %v", err)
	}
	return cfg
}

// prometheusTargets returns docker/prometheus.yml's static targets.
func prometheusTargets(t *testing.T) map[string]bool {
	t.Helper()
	cfg := loadPrometheus(t)
	out := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			for _, target := range s.Targets {
				out[target] = true
			}
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
