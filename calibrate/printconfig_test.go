package calibrate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	sidecarconfig "github.com/mergectl/react-triton/sidecar/config"
)

// printCase is one command's --print-config, from a command line with
// relative paths, run in a directory of its own.
type printCase struct {
	name string
	args []string // without --print-config
	// setup writes what the command line names in the working directory.
	setup func(t *testing.T)
	// then runs the command from the printed file, in another directory,
	// and checks that it ran as the command line would; nil for none.
	then func(t *testing.T, printed string)
}

// copyFixture copies testdata/fixture.safetensors (tasks alpha, beta and
// gamma; β 1, sum) to name in the working directory.
func copyFixture(t *testing.T, src, name string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func printCases(fixture string) []printCase {
	return []printCase{
		{name: "fit", args: []string{"fit", "--embeddings", "emb", "--out", "c.safetensors", "--limit", "5", "--quiet"},
			setup: func(t *testing.T) {
				if err := os.Mkdir("emb", 0o755); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "eval", args: []string{"eval", "--triton", "h:1", "--data", "data", "--components", "A=c.safetensors",
			"--betas", "1e-7,0.5", "--normalizations", "mean", "--limit", "5", "--quiet"}},
		{name: "solve", args: []string{"solve", "--components", "c.safetensors", "--preference", "alpha=1", "--out", "W.npy"},
			setup: func(t *testing.T) { copyFixture(t, fixture, "c.safetensors") },
			then: func(t *testing.T, printed string) {
				// Without --beta and --normalize, the file's.
				r := mustRun(t, "solve", "--config", printed)
				if !strings.Contains(r.stdout, "beta=1, normalization=sum") {
					t.Errorf("solve from the printed file: %s", r.stdout)
				}
			}},
		{name: "upgrade", args: []string{"upgrade", "--repository", "models", "--model", "ens", "--correct", "emb",
			"--components", "c.safetensors", "--preset", "a=alpha=1", "--beta", "0.5", "--cache-size", "8"}},
		{name: "experiment assign", args: []string{"experiment", "assign", "--name", "homepage", "--arms", "A=50,B=50"},
			then: func(t *testing.T, printed string) {
				want := runIn(t, "alice\nbob\n", "experiment", "assign", "--name", "homepage", "--arms", "A=50,B=50")
				got := runIn(t, "alice\nbob\n", "experiment", "assign", "--config", printed)
				if got.code != ExitOK || got.stdout != want.stdout {
					t.Errorf("from the printed file: exit %d %q, %q; want %q", got.code, got.stderr, got.stdout, want.stdout)
				}
			}},
		{name: "experiment assign from a sidecar configuration", args: []string{"experiment", "assign", "--sidecar-config", "sidecar.yaml", "--experiment", "e"}},
		{name: "experiment report", args: []string{"experiment", "report", "--experiment", "fashion-ab", "--sidecar-config", "sidecar.yaml",
			"--metrics", "http://sidecar-0:8003/metrics", "--metrics", "http://sidecar-1:8003/metrics", "--alpha", "0.01", "--format", "json", "--timeout", "3s"}},
	}
}

// TestPrintConfigLoadsBack checks, for every command with --print-config,
// that the printed file, saved elsewhere and loaded from a third
// directory, prints the same configuration: every path absolute, every
// value kept, a value left out (solve's --beta) still left out.
func TestPrintConfigLoadsBack(t *testing.T) {
	fixture, err := filepath.Abs(filepath.Join("testdata", "fixture.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range printCases(fixture) {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if tc.setup != nil {
				tc.setup(t)
			}
			first := mustRun(t, append(tc.args, "--print-config")...).stdout
			printed := filepath.Join(t.TempDir(), "printed.yaml")
			if err := os.WriteFile(printed, []byte(first), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(t.TempDir())
			command := tc.args[:slices.IndexFunc(tc.args, func(a string) bool { return strings.HasPrefix(a, "--") })]
			again := mustRun(t, append(command, "--config", printed, "--print-config")...).stdout
			if again != first {
				t.Errorf("printed:\n%s\nloaded back elsewhere and printed:\n%s", first, again)
			}
			if tc.then != nil {
				tc.then(t, printed)
			}
		})
	}
}

// TestSharedKeysOneType checks that a key two commands share (a key of
// their files, and the REACT_* variable of that name) holds the same type
// of value in each: the sidecar's configuration, fit, eval, solve,
// upgrade and experiment assign.
func TestSharedKeysOneType(t *testing.T) {
	// components is a list in eval, which compares several files
	// ([LABEL=]FILE...), and a list of entries in the sidecar's file,
	// where no variable reaches it; solve and upgrade take one file, a
	// list of one in eval.
	several := map[string]bool{"components": true}
	fixture, err := filepath.Abs(filepath.Join("testdata", "fixture.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]map[string]string{} // key → command → type
	add := func(command string, doc []byte) {
		var n yaml.Node
		if err := yaml.Unmarshal(doc, &n); err != nil {
			t.Fatalf("%s: %v\n%s", command, err, doc)
		}
		walkTypes(n.Content[0], "", func(key, typ string) {
			if types[key] == nil {
				types[key] = map[string]string{}
			}
			types[key][command] = typ
		})
	}
	sidecar, err := sidecarconfig.Default().YAML()
	if err != nil {
		t.Fatal(err)
	}
	add("sidecar", sidecar)
	for _, tc := range printCases(fixture) {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if tc.setup != nil {
				tc.setup(t)
			}
			add(tc.name, []byte(mustRun(t, append(tc.args, "--print-config")...).stdout))
		})
	}
	for key, byCommand := range types {
		distinct := map[string][]string{}
		for command, typ := range byCommand {
			distinct[typ] = append(distinct[typ], command)
		}
		if len(distinct) > 1 && !several[key] {
			t.Errorf("key %s has %d types: %v", key, len(distinct), distinct)
		}
	}
}

// walkTypes calls f with each scalar or list key under the mapping n and
// the type of its value: a scalar's YAML tag, or "list" followed by its
// items' tag. A null (a value left out) has no type.
func walkTypes(n *yaml.Node, prefix string, f func(key, typ string)) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, v := prefix+n.Content[i].Value, n.Content[i+1]
		switch {
		case v.Kind == yaml.MappingNode:
			walkTypes(v, key+".", f)
		case v.Kind == yaml.SequenceNode && len(v.Content) > 0 && v.Content[0].Kind == yaml.ScalarNode:
			f(key, "list of "+v.Content[0].ShortTag())
		case v.Kind == yaml.SequenceNode && len(v.Content) > 0:
			f(key, "list of entries")
		case v.Kind == yaml.SequenceNode:
			f(key, "list")
		case v.ShortTag() != "!!null":
			f(key, v.ShortTag())
		}
	}
}
