package archtest

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/mergectl/react-triton"

// policy is, for each package of the module (its path inside the module),
// the module's packages it may import, in the order of the table in
// docs/architecture.md. Every package must be listed: a new one is added
// here with its arrows, as it is to the document.
var policy = map[string][]string{
	// The bottom: no imports of ours, or the smallest helpers.
	"internal/atomicfile": nil,
	"internal/buildinfo":  nil,
	"internal/testutil":   nil,
	"internal/archtest":   nil,
	// internal/cli: the exit codes, usage errors and Main of both binaries.
	"internal/cli":       nil,
	"internal/npyfile":   {"internal/atomicfile"},
	"internal/bytesize":  nil,
	"internal/filecheck": nil,
	// internal/threadprio: one OS thread's priority, for background work.
	"internal/threadprio": nil,
	// problem: how every configuration surface reports a problem.
	"problem": nil,
	// internal/samples reads .npy/.npz inputs into Triton's datatypes.
	"internal/samples": {"internal/npyfile", "triton"},

	// The method.
	"react/safetensors":     {"internal/atomicfile"},
	"react/internal/cuda":   nil,
	"react/devicetest":      {"react/internal/cuda"},
	"react/internal/linalg": nil,
	// react/internal/condbound: the a-priori bound of C_p's condition,
	// shared by the host's solver and the GPU's.
	"react/internal/condbound": nil,
	"react":                    {"react/internal/condbound", "react/internal/linalg"},
	// react/cudadevice: the cuda backend behind react's device seam,
	// imported by the binaries (it registers itself).
	"react/cudadevice": {"react", "react/internal/cuda", "react/internal/condbound", "react/internal/linalg"},
	// The components file: the format beside the method, which never
	// imports it (react/componentsfile, like image/png beside image).
	"react/componentsfile": {"react", "react/safetensors"},
	// react/heldout: β and the normalisation chosen by held-out error.
	"react/heldout": {"react"},
	// react/baseline: the ablation's naive and polar aggregations, over
	// Solver's exported methods.
	"react/baseline": {"react"},
	// react/partialfile: the partial-statistics file (checkpoints, shards,
	// the sidecar's live sums), beside the components file; the sidecar
	// writes it, so it lives with the format, not under calibrate.
	"react/partialfile": {"react", "react/componentsfile", "react/safetensors"},
	// What the tests of react's packages share: components
	// (react/internal/reacttest), matrix comparisons (react/internal/mattest).
	"react/internal/reacttest": {"react", "react/internal/mattest"},
	"react/internal/mattest":   nil,

	// Triton's protocol never imports the method.
	"triton/tritonpb":                      nil,
	"triton":                               {"triton/tritonpb"},
	"triton/tritonhttp/internal/rapidjson": nil,
	"triton/tritonhttp/internal/jsontext":  {"triton"},
	"triton/tritonhttp":                    {"triton", "triton/tritonpb", "triton/tritonhttp/internal/rapidjson", "triton/tritonhttp/internal/jsontext"},
	"triton/ensemble":                      {"triton", "triton/tritonpb"},
	"triton/modelconfig":                   {"triton/tritonpb"},
	// triton/modelinfo: a model resolved, its tensors picked, its feature
	// checked and its batched runs, over the client.
	"triton/modelinfo": {"triton", "triton/tritonpb"},
	// triton/internal/tritontest: test support only, an in-process Triton
	// for the tests of triton (which it therefore does not import) and of
	// its subpackages.
	"triton/internal/tritontest": {"triton/tritonpb"},

	"experiment": nil,
	// experiment/sequential: the statistics that decide an experiment.
	"experiment/sequential": nil,
	// experiment/feedback: outcomes joined to the arm that served them,
	// their metrics and their wire shapes (react.Feedback in tritonpb);
	// the sidecar's transports call it.
	"experiment/feedback": {"problem", "triton/tritonpb"},

	// What both serving modes share: no server, no configuration file.
	"control/internal/admit": nil,
	"control":                {"react", "react/componentsfile", "experiment", "problem", "internal/bytesize", "internal/filecheck", "internal/threadprio", "control/internal/admit"},
	// config/layer: the one layering engine of every configuration.
	"config/layer": {"problem", "internal/bytesize"},
	// config: calibrate's configurations (fit's file, the flag commands).
	"config": {"config/layer", "react", "control", "triton/modelinfo", "problem", "internal/bytesize", "internal/filecheck"},
	// config/configtest: test support only, what the tests of config and
	// sidecar/config share.
	"config/configtest": {"problem", "internal/testutil"},

	"evaluate/metrics": nil,
	"evaluate":         {"evaluate/metrics", "react", "react/baseline", "control", "triton", "triton/modelinfo", "internal/npyfile", "internal/samples"},
	"evaluate/figures": {"evaluate"},

	"calibrate/images": nil,
	// The library under the command: the pair sources, the accumulation
	// and the choice of samples, importable without the command.
	"calibrate/pairs":       {"react"},
	"calibrate/embeddings":  {"internal/npyfile", "react"},
	"calibrate/tritonpairs": {"calibrate/images", "internal/samples", "react", "triton", "triton/modelinfo", "triton/tritonpb"},
	// calibrate/pairs/pairstest: test support only, synthetic paired features.
	"calibrate/pairs/pairstest": nil,
	// calibrate/upgrade writes a profile (control's settings) as a react
	// model's parameters and checks the model with the backend's own
	// parser (backend/model).
	"calibrate/upgrade": {"react/componentsfile", "control", "triton/tritonpb", "triton/ensemble", "triton/modelconfig", "internal/atomicfile", "backend/model"},
	// calibrate/progress: the --progress bar or log lines of fit and eval.
	"calibrate/progress": {"config"},
	// calibrate/decide: experiment report's library, the outcome counters
	// read from /metrics or Prometheus and decided.
	"calibrate/decide": {"experiment/feedback", "experiment/sequential", "problem"},
	// calibrate/livemerge: merge's library for the sidecars' live files.
	"calibrate/livemerge": {"problem", "react", "react/heldout", "react/partialfile"},
	// calibrate/fit: a whole fit from its configuration, the command's library.
	"calibrate/fit": {"calibrate/embeddings", "calibrate/images", "calibrate/pairs", "react/partialfile",
		"calibrate/progress", "calibrate/tritonpairs", "config", "internal/atomicfile", "internal/cli", "react", "react/componentsfile", "react/heldout", "triton"},
	// The command: everything offline.
	"calibrate": {"react", "react/baseline", "react/componentsfile", "react/heldout", "triton", "triton/modelinfo", "triton/tritonpb", "triton/ensemble", "triton/modelconfig", "internal/atomicfile",
		"internal/buildinfo", "internal/npyfile", "internal/samples", "experiment", "config", "sidecar/config", "control", "evaluate",
		"evaluate/figures", "react/partialfile", "calibrate/images", "calibrate/pairs", "calibrate/embeddings",
		"calibrate/tritonpairs", "calibrate/upgrade", "calibrate/fit", "calibrate/livemerge", "calibrate/progress", "internal/cli",
		"calibrate/decide", "experiment/sequential", "problem"},

	// livestats: live sampling's sums, files, rules and metrics; the
	// sidecar's request path calls it, its configuration adapts its rules.
	"livestats": {"problem", "react", "react/heldout", "react/partialfile"},

	// sidecar/config: the sidecar's configuration, on the same engine.
	"sidecar/config": {"config/layer", "react", "experiment", "experiment/feedback", "control", "livestats", "problem", "internal/bytesize", "internal/filecheck"},
	// sidecar/config/memory: the memory budget of a configuration.
	"sidecar/config/memory": {"sidecar/config", "experiment/feedback"},
	"sidecar/modelstats":    {"triton/tritonpb"},
	// sidecar/pipeline/shadowcmp: the shadow comparison of an experiment's
	// arms, without the calls it makes (the pipeline gives them).
	"sidecar/pipeline/shadowcmp": {"control", "sidecar/config"},
	// sidecar/pipeline/graphform: the graph form, without the calls to
	// Triton (the pipeline gives them).
	"sidecar/pipeline/graphform": {"control", "problem", "triton", "triton/modelinfo", "triton/tritonpb", "triton/ensemble"},
	"sidecar/pipeline": {"sidecar/modelstats", "sidecar/pipeline/shadowcmp", "sidecar/pipeline/graphform", "control", "sidecar/config", "problem", "react", "triton",
		"triton/modelinfo", "triton/tritonpb"},
	// sidecar/internal/faketriton: test support only, a stand-in for Triton.
	"sidecar/internal/faketriton": {"react", "react/componentsfile", "triton", "triton/tritonpb", "triton/tritonhttp"},
	// sidecar/passthrough: the pass-through proxy and its seams; it knows
	// nothing of the controllable models or the front door.
	"sidecar/passthrough": {"control", "triton/tritonhttp"},
	// sidecar/limits: what one request may hold (the body budget) and send
	// (its inputs, outputs and parameters), and the statuses of a refusal.
	"sidecar/limits": {"sidecar/config", "sidecar/passthrough", "triton/tritonhttp", "triton/tritonpb"},
	// sidecar/metrics: the sidecar's Prometheus metrics, which the other
	// parts report to.
	"sidecar/metrics": {"sidecar/pipeline", "sidecar/limits", "control", "internal/buildinfo"},
	// sidecar/readiness: the sidecar's own readiness, every model the
	// controllable models call ready on Triton.
	"sidecar/readiness": {"sidecar/pipeline", "triton/tritonpb"},
	// sidecar/internal/restapi: Triton's HTTP API as the sidecar answers it
	// for controllable models.
	"sidecar/internal/restapi": {"sidecar/passthrough", "sidecar/pipeline", "triton", "triton/tritonhttp", "triton/tritonpb"},
	// sidecar/frontdoor: what every connection and call passes before the
	// seams (listeners, limits, timeouts, TLS, the management guard, pprof).
	"sidecar/frontdoor": {"sidecar/passthrough", "sidecar/metrics", "sidecar/config"},
	// sidecar/server: the listeners and servers, the front door put before
	// the pass-through.
	"sidecar/server": {"sidecar/frontdoor", "sidecar/passthrough", "sidecar/metrics", "sidecar/config"},
	// sidecar/sampling: live sampling wired in: the sampler built from the
	// configuration, the samples' backbone and expert calls.
	"sidecar/sampling": {"livestats", "sidecar/config", "sidecar/passthrough", "control", "react", "triton", "triton/tritonpb"},
	// sidecar/backendmode: a relayed request's react-* headers made the
	// request parameters of a model with a react step.
	"sidecar/backendmode": {"control", "sidecar/internal/restapi", "triton/tritonhttp", "triton/tritonpb"},
	// sidecar/controllable: the controllable models and their answers over
	// the pass-through's seams.
	"sidecar/controllable": {"sidecar/pipeline", "sidecar/modelstats", "sidecar/config", "sidecar/config/memory", "sidecar/limits", "sidecar/metrics", "sidecar/passthrough",
		"sidecar/readiness", "sidecar/outcomes", "sidecar/sampling", "sidecar/backendmode", "sidecar/internal/restapi", "control", "problem", "triton/tritonhttp", "triton/tritonpb"},
	// sidecar/outcomes: the experiments' outcome feedback wired in: the
	// requests served with an arm recorded under their ids, the feedback
	// route and the react.Feedback service.
	"sidecar/outcomes": {"experiment/feedback", "sidecar/pipeline", "sidecar/config", "sidecar/passthrough", "sidecar/internal/restapi",
		"control", "triton/tritonpb"},
	// sidecar/internal/sidecartest: test support only, a sidecar in front of
	// a fake Triton for the tests of the sidecar's packages.
	"sidecar/internal/sidecartest": {"sidecar/server", "sidecar/controllable", "sidecar/frontdoor", "sidecar/metrics", "sidecar/passthrough",
		"sidecar/outcomes", "experiment/feedback", "sidecar/config", "sidecar/internal/faketriton", "sidecar/internal/restapi", "triton/tritonhttp",
		"triton/tritonpb", "internal/testutil"},
	// The command: the configuration loaded, the parts wired, reloads.
	"sidecar": {"sidecar/server", "sidecar/controllable", "sidecar/frontdoor", "sidecar/metrics", "sidecar/outcomes", "sidecar/sampling", "sidecar/config", "problem", "react", "triton",
		"internal/buildinfo", "internal/cli"},

	// The Triton backend: never the sidecar or its configuration.
	"backend/model": {"control", "experiment", "problem", "react", "triton", "triton/modelinfo", "internal/bytesize"},
	"backend":       {"backend/model", "control", "react", "react/cudadevice"},

	// Thin mains.
	"cmd/calibrate": {"calibrate", "react/cudadevice"},
	"cmd/sidecar":   {"sidecar", "react/cudadevice"},

	// Examples and benchmark tools: clients of the module's public surface.
	"examples/eval":       {"calibrate/embeddings", "internal/npyfile"},
	"examples/gen":        {"internal/npyfile"},
	"bench/abuse":         {"react", "react/componentsfile", "triton/tritonpb"},
	"bench/abuse-surface": {"sidecar/config"},
	"bench/loadgen":       {"triton/tritonpb"},
}

// required lists, for packages, the module's packages they must import:
// the binaries register the cuda backend by importing react/cudadevice,
// and nothing else would tell that a cuda build of one lacks it.
var required = map[string][]string{
	"cmd/calibrate": {"react/cudadevice"},
	"cmd/sidecar":   {"react/cudadevice"},
	"backend":       {"react/cudadevice"},
}

// forbidden lists, for packages (a path, or a prefix ending in "/"),
// libraries they must not import directly: the method and the shared
// serving logic stay free of transports, command-line and configuration
// frameworks and metrics, so that the backend inside tritonserver carries
// none of them.
var forbidden = map[string][]string{
	"react/":                {"google.golang.org/grpc", "github.com/spf13/", "github.com/prometheus/", "net/http"},
	"react":                 {"google.golang.org/grpc", "github.com/spf13/", "github.com/prometheus/", "net/http"},
	"control":               {"google.golang.org/grpc", "github.com/spf13/", "github.com/prometheus/", "net/http"},
	"experiment":            {"google.golang.org/grpc", "github.com/spf13/", "github.com/prometheus/"},
	"experiment/sequential": {"google.golang.org/grpc", "github.com/spf13/", "github.com/prometheus/"},
	"backend/":              {"github.com/spf13/", "github.com/prometheus/"},
	"backend":               {"github.com/spf13/", "github.com/prometheus/"},
	"triton/tritonpb":       {"github.com/spf13/"},
}

// tagSets are the build configurations whose imports count: the default,
// OpenBLAS, and the cuda build; nil, all files whatever their build
// constraints (another OS's, the race detector's), so that an import or a
// package under another tag is not missed.
var tagSets = [][]string{{}, {"openblas"}, {"openblas", "cuda"}, nil}

// imports returns, for each package of the module under root, its non-test
// imports in any of tagSets.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (docker/deploytest)
			}
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		found := false
		for _, tags := range tagSets {
			ctx := build.Default
			ctx.BuildTags = tags
			ctx.CgoEnabled = true
			ctx.UseAllFiles = tags == nil // the last set ({} is the default build)
			p, err := ctx.ImportDir(path, 0)
			if err != nil {
				if _, ok := err.(*build.NoGoError); ok {
					continue
				}
				return err
			}
			found = true
			for _, imp := range p.Imports {
				seen[imp] = true
			}
		}
		if found {
			list := make([]string, 0, len(seen))
			for imp := range seen {
				list = append(list, imp)
			}
			sort.Strings(list)
			out[filepath.ToSlash(rel)] = list
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// moduleRoot is the directory of this module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// violations checks pkgs against policy and forbidden and returns every
// problem, one line each.
func violations(pkgs map[string][]string) []string {
	var bad []string
	for pkg, imps := range pkgs {
		allowed, listed := policy[pkg]
		if !listed {
			bad = append(bad, pkg+": not in the import policy (add it, with its arrows, here and to docs/architecture.md)")
			continue
		}
		for _, imp := range imps {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				if !slices.Contains(allowed, rel) {
					bad = append(bad, pkg+" imports "+rel+": not an arrow of the policy")
				}
				continue
			}
			for scope, libs := range forbidden {
				if scope != pkg && !(strings.HasSuffix(scope, "/") && strings.HasPrefix(pkg, scope)) {
					continue
				}
				for _, lib := range libs {
					if imp == lib || strings.HasPrefix(imp, strings.TrimSuffix(lib, "/")+"/") {
						bad = append(bad, pkg+" imports "+imp+": forbidden there")
					}
				}
			}
		}
	}
	for pkg, reqs := range required {
		imps, ok := pkgs[pkg]
		for _, req := range reqs {
			if ok && !slices.Contains(imps, module+"/"+req) {
				bad = append(bad, pkg+" does not import "+req+": a required import")
			}
		}
	}
	for pkg := range policy {
		if _, ok := pkgs[pkg]; !ok {
			bad = append(bad, pkg+": in the policy but not in the module (remove it here and from docs/architecture.md)")
		}
	}
	sort.Strings(bad)
	return bad
}

// TestImportPolicy fails on an import between the module's packages that
// the policy does not allow, on a forbidden library, on a required import
// missing, and on a package the policy does not know.
func TestImportPolicy(t *testing.T) {
	for _, v := range violations(imports(t, moduleRoot(t))) {
		t.Error(v)
	}
}

// TestPolicyCatches shows that the check can fail: an arrow backwards, a
// forbidden library, a required import missing, and an unknown package
// are each reported.
func TestPolicyCatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkgs map[string][]string
		want string
	}{
		{"triton imports react", map[string][]string{"triton": {module + "/react"}}, "triton imports react: not an arrow"},
		{"backend imports config", map[string][]string{"backend": {module + "/config"}}, "backend imports config"},
		{"react imports grpc", map[string][]string{"react": {"google.golang.org/grpc"}}, "react imports google.golang.org/grpc: forbidden"},
		{"react/internal/cuda imports viper", map[string][]string{"react/internal/cuda": {"github.com/spf13/viper"}}, "forbidden there"},
		{"the pass-through imports the controllable models", map[string][]string{"sidecar/passthrough": {module + "/sidecar/controllable"}}, "sidecar/passthrough imports sidecar/controllable: not an arrow"},
		{"a binary without the cuda backend", map[string][]string{"cmd/sidecar": {module + "/sidecar"}}, "cmd/sidecar does not import react/cudadevice"},
		{"a new package", map[string][]string{"newpkg": nil}, "newpkg: not in the import policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found := false
			for _, v := range violations(tc.pkgs) {
				if strings.Contains(v, tc.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no violation containing %q in %q", tc.want, violations(tc.pkgs))
			}
		})
	}
}

// TestImportsEveryBuildTag: imports reads the files of every build
// constraint, so that a package built only under a tag outside the
// default, OpenBLAS and cuda builds (the race detector's) and an import of
// another OS's file are not missed by the policy and the table.
func TestImportsEveryBuildTag(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"racy/r.go":       "//go:build race\n\npackage racy\n\nimport _ \"fmt\"\n",
		"os/os.go":        "package os\n",
		"os/os_darwin.go": "package os\n\nimport _ \"strings\"\n",
	}
	for name, text := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := imports(t, root)
	if !slices.Contains(got["racy"], "fmt") || !slices.Contains(got["os"], "strings") {
		t.Errorf("imports = %v, want racy importing fmt and os importing strings", got)
	}
}
