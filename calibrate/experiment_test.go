package calibrate

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runIn runs the command in-process with stdin.
func runIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	root := NewCommand(&out, &errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	code := ExitOK
	if err := root.Execute(); err != nil {
		code = ExitFailure
		if isUsage(err) {
			code = ExitUsage
		}
		errb.WriteString(err.Error())
	}
	return result{out.String(), errb.String(), code}
}

// vector is one line of experiment/testdata/vectors.tsv, written by
// experiment/assign.py.
type vector struct{ experiment, arms, traffic, key, arm string }

func readVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open("../experiment/testdata/vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		p := strings.Split(sc.Text(), "\t")
		out = append(out, vector{p[0], p[1], p[2], p[3], p[4]})
	}
	return out
}

// TestExperimentAssignVectors feeds the published vectors' keys through
// the command, one run per experiment, and compares every line.
func TestExperimentAssignVectors(t *testing.T) {
	groups := map[[3]string][]vector{}
	var order [][3]string
	for _, v := range readVectors(t) {
		g := [3]string{v.experiment, v.arms, v.traffic}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], v)
	}
	for _, g := range order {
		var in, want strings.Builder
		for _, v := range groups[g] {
			in.WriteString(v.key + "\n")
			want.WriteString(v.key + "\t" + v.arm + "\n")
		}
		r := runIn(t, in.String(), "experiment", "assign", "--name", g[0], "--arms", g[1], "--traffic", g[2])
		if r.code != ExitOK || r.stdout != want.String() {
			t.Errorf("assign %v: exit %d, stderr %q\ngot:\n%s\nwant:\n%s", g, r.code, r.stderr, r.stdout, want.String())
		}
	}
}

// TestExperimentAssignConfig reads the arms from a sidecar configuration,
// and gives the same arms as the command line.
func TestExperimentAssignConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "components.safetensors"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sidecar.yaml")
	if err := os.WriteFile(cfg, []byte(`triton: {grpc: "127.0.0.1:8101", http: "127.0.0.1:8100"}
components: [{name: c, path: components.safetensors}]
models: [{name: m, backbone: {model: b, output: f}, heads: [{task: t, model: h}]}]
experiments:
  - name: homepage
    models: [m]
    key: {header: x-user-id}
    arms:
      - {name: A, weight: 50, preference: none}
      - {name: B, weight: 30, preference: t=1}
      - {name: C, weight: 20, preference: none}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for _, v := range readVectors(t) {
		if v.experiment == "homepage" {
			in.WriteString(v.key + "\r\n") // a carriage return is dropped
		}
	}
	fromConfig := runIn(t, in.String(), "experiment", "assign", "--sidecar-config", cfg, "--experiment", "homepage")
	inline := runIn(t, strings.ReplaceAll(in.String(), "\r", ""), "experiment", "assign", "--name", "homepage", "--arms", "A=50,B=30,C=20")
	if fromConfig.code != ExitOK || fromConfig.stdout != inline.stdout || !strings.Contains(inline.stdout, "alice\tB\n") {
		t.Errorf("--sidecar-config: exit %d %q\n%s\n--arms:\n%s", fromConfig.code, fromConfig.stderr, fromConfig.stdout, inline.stdout)
	}
	if r := runIn(t, "", "experiment", "assign", "--sidecar-config", cfg, "--experiment", "other"); r.code != ExitFailure ||
		!strings.Contains(r.stderr, `has no experiment "other" (experiments: homepage)`) {
		t.Errorf("unknown experiment: exit %d, %q", r.code, r.stderr)
	}
	// --config was the sidecar's configuration before --sidecar-config:
	// given one, it says so.
	if r := runIn(t, "", "experiment", "assign", "--config", cfg, "--experiment", "homepage"); r.code != ExitUsage ||
		!strings.Contains(r.stderr, "--config "+cfg+" is a sidecar configuration: give it with --sidecar-config") {
		t.Errorf("--config with a sidecar configuration: exit %d, %q", r.code, r.stderr)
	}
}

func TestExperimentAssignUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "x"}, "give --name and --arms"},
		{[]string{"--name", "x", "--arms", "A"}, `--arms: arms "A": entry "A": want name=weight`},
		{[]string{"--name", "x", "--arms", "A=0"}, "the weights sum to 0"},
		{[]string{"--name", "x", "--arms", "A=1", "--traffic", "2"}, "traffic share 2: want a number in (0, 1]"},
		{[]string{"--name", "x", "--arms", "A=1", "--sidecar-config", "f"}, "not both"},
		{[]string{"--sidecar-config", "f"}, "--sidecar-config and --experiment go together"},
		{[]string{"--sidecar-config", "f", "--experiment", "e", "--traffic", "0.5"}, "--traffic goes with --arms"},
	} {
		r := runIn(t, "", append([]string{"experiment", "assign"}, tc.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want usage error %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
