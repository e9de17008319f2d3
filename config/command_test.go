package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// commandFlags is a command of CommandFlags, with a flag of each kind.
var commandFlags = CommandFlags{
	Keys:     map[string]string{"triton": "triton.grpc"},
	Paths:    []string{"data", "components"},
	Labelled: []string{"components"},
}

func newCommandFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("cmd", pflag.ContinueOnError)
	fs.String("triton", "", "")
	fs.String("data", "", "")
	fs.StringArray("components", nil, "")
	fs.StringSlice("tasks", nil, "")
	fs.Int("limit", 0, "")
	fs.Float64("tolerance", 1e-4, "")
	fs.Duration("timeout", time.Minute, "")
	fs.Bool("oracle", false, "")
	commandFlags.Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestCommandFlagsLayers checks the precedence (defaults, file,
// environment, command line) and the problems, each with its line or
// variable, all at once.
func TestCommandFlagsLayers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "eval.yaml")
	if err := os.WriteFile(file, []byte("triton:\n  grpc: file:1\ndata: test\ncomponents: [A=a.safetensors, /abs.safetensors]\nlimit: 7\ntasks: [x, y]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want map[string]string // flag → its value after Load
		err  string
	}{
		{name: "file", want: map[string]string{"triton": "file:1", "data": filepath.Join(dir, "test"), "limit": "7",
			"components": "[A=" + filepath.Join(dir, "a.safetensors") + ",/abs.safetensors]", "tasks": "[x,y]", "timeout": "1m0s"}},
		{name: "environment beats the file", env: map[string]string{"REACT_TRITON_GRPC": "env:1", "REACT_TASKS": "p,q", "REACT_TIMEOUT": "5s"},
			want: map[string]string{"triton": "env:1", "tasks": "[p,q]", "timeout": "5s", "limit": "7"}},
		{name: "flags beat both", env: map[string]string{"REACT_LIMIT": "3"}, args: []string{"--limit", "9", "--triton", "flag:1"},
			want: map[string]string{"triton": "flag:1", "limit": "9"}},
		{name: "problems at once", env: map[string]string{"REACT_LIMIT": "many", "REACT_ORACLE": "maybe"},
			err: `limit: "many": want an integer (from $REACT_LIMIT)` + "\n  " + `oracle: "maybe": want true or false (from $REACT_ORACLE)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range []string{"REACT_TRITON_GRPC", "REACT_TASKS", "REACT_TIMEOUT", "REACT_LIMIT", "REACT_ORACLE"} {
				t.Setenv(v, "")
				os.Unsetenv(v)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			checkLoad(t, newCommandFlags(t, append([]string{"--config", file}, tt.args...)...), tt.err, tt.want)
		})
	}
}

// checkLoad loads fs with commandFlags and checks that the error contains
// wantErr, or, when wantErr is "", that it loads and that each flag of
// flags holds its value.
func checkLoad(t *testing.T, fs *pflag.FlagSet, wantErr string, flags map[string]string) {
	t.Helper()
	err := commandFlags.Load(fs)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("Load: %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range flags {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
}

// TestCommandFlagsFileProblems checks that every problem of a file is
// reported at once, with its line.
func TestCommandFlagsFileProblems(t *testing.T) {
	file := filepath.Join(t.TempDir(), "eval.yaml")
	if err := os.WriteFile(file, []byte("limt: 3\ntriton:\n  grcp: x\ntolerance: [[1]]\nlimit: three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := commandFlags.Load(newCommandFlags(t, "--config", file))
	want := `config: ` + file + `: 4 problems:
  limt: unknown key, did you mean "limit"? (line 1)
  triton.grcp: unknown key, did you mean "triton.grpc"? (line 3)
  tolerance: want a list of values (line 4)
  limit: "three": want an integer (line 5)`
	if err == nil || err.Error() != want {
		t.Fatalf("Load:\n%v\nwant:\n%s", err, want)
	}
}

// TestCommandFlagsPrint checks that --print-config writes every key, and
// that the file it writes loads back to the same values from another
// directory.
func TestCommandFlagsPrint(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	fs := newCommandFlags(t, "--triton", "h:1", "--data", "rel/data", "--components", "L=c.safetensors",
		"--tasks", "a,b", "--limit", "5", "--tolerance", "0.5", "--oracle", "--print-config")
	if err := commandFlags.Load(fs); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if done, err := commandFlags.Print(&b, fs); !done || err != nil {
		t.Fatalf("Print: %v, %v", done, err)
	}
	file := filepath.Join(t.TempDir(), "printed.yaml")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	back := newCommandFlags(t, "--config", file)
	if err := commandFlags.Load(back); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if commandFlags.keyed(f) {
			want := strings.ReplaceAll(f.Value.String(), "rel/data", filepath.Join(wd, "rel/data"))
			want = strings.ReplaceAll(want, "L=c.safetensors", "L="+filepath.Join(wd, "c.safetensors"))
			if got := back.Lookup(f.Name).Value.String(); got != want {
				t.Errorf("--%s: read back %q, want %q\n%s", f.Name, got, want, b.String())
			}
		}
	})
}

// TestCommandFlagsUnset checks that a flag whose default means "not
// given" prints as null while no layer sets it, that a null in the file
// leaves a flag unset, and that the printed file loads back to the same
// flags set and unset.
func TestCommandFlagsUnset(t *testing.T) {
	c := CommandFlags{Unset: []string{"beta", "normalize"}}
	parse := func(args ...string) *pflag.FlagSet {
		fs := pflag.NewFlagSet("solve", pflag.ContinueOnError)
		fs.Float64("beta", 0, "")
		fs.String("normalize", "", "")
		fs.Int("limit", 0, "")
		c.Bind(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := c.Load(fs); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	tests := []struct {
		name    string
		args    []string
		printed string
		changed []string // the flags set after loading the printed file back
	}{
		{name: "none given", printed: "beta: null\nlimit: 0\nnormalize: null\n", changed: []string{"limit"}},
		{name: "zero given", args: []string{"--beta", "0", "--normalize", "mean"},
			printed: "beta: !!float 0\nlimit: 0\nnormalize: mean\n", changed: []string{"beta", "limit", "normalize"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if _, err := c.Print(&b, parse(append(tt.args, "--print-config")...)); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.printed {
				t.Fatalf("printed:\n%s\nwant:\n%s", b.String(), tt.printed)
			}
			file := filepath.Join(t.TempDir(), "printed.yaml")
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			back := parse("--config", file)
			var changed []string
			back.Visit(func(f *pflag.Flag) {
				if c.keyed(f) {
					changed = append(changed, f.Name)
				}
			})
			if strings.Join(changed, ",") != strings.Join(tt.changed, ",") {
				t.Errorf("loaded back, set: %v, want %v", changed, tt.changed)
			}
		})
	}
}

// TestCommandFlagsKeys checks which flags are keys, and that a key
// shared by sections prints nested: --quiet and a deprecated flag are
// not keys, and neither the file nor the environment reaches them.
func TestCommandFlagsKeys(t *testing.T) {
	t.Setenv("REACT_BETA", "0.5,1")
	c := CommandFlags{Keys: map[string]string{"triton": "triton.grpc", "timeout": "triton.timeout"}}
	fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
	fs.String("triton", "", "")
	fs.Duration("timeout", time.Minute, "")
	var betas []float64
	Float64ListVar(fs, &betas, "betas", nil, "")
	var notice bytes.Buffer
	DeprecatedAlias(fs, "beta", "betas", &notice, "--beta is deprecated: use --betas")
	BindProgressFlags(fs)
	c.Bind(fs)
	if err := fs.Parse([]string{"--triton", "h:1", "--beta", "2e-7", "--quiet", "--print-config"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Load(fs); err != nil {
		t.Fatal(err)
	}
	if len(betas) != 1 || betas[0] != 2e-7 {
		t.Errorf("--beta 2e-7 gave betas %v", betas)
	}
	if notice.String() != "--beta is deprecated: use --betas\n" {
		t.Errorf("notice %q", notice.String())
	}
	var b bytes.Buffer
	if _, err := c.Print(&b, fs); err != nil {
		t.Fatal(err)
	}
	want := "betas: [2e-07]\nprogress: never\ntriton:\n  grpc: h:1\n  timeout: 1m0s\n"
	if b.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", b.String(), want)
	}
	file := filepath.Join(t.TempDir(), "eval.yaml")
	if err := os.WriteFile(file, []byte("beta: [1]\nquiet: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs.Set(FlagConfig, file)
	err := c.Load(fs)
	for _, want := range []string{`beta: unknown key, did you mean "betas"? (line 1)`, `quiet: unknown key`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load: %v, want %q", err, want)
		}
	}
}

// TestCommandFlagsQuiet checks that --quiet sets progress: never over the
// file and the environment, and excludes a --progress of the command
// line.
func TestCommandFlagsQuiet(t *testing.T) {
	t.Setenv("REACT_PROGRESS", "always")
	for _, tt := range []struct {
		args []string
		want string
		err  string
	}{
		{args: nil, want: ProgressAlways},
		{args: []string{"--quiet"}, want: ProgressNever},
		{args: []string{"--quiet", "--progress", "log"}, err: "progress: --progress and --quiet exclude each other (from --quiet)"},
	} {
		fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
		BindProgressFlags(fs)
		CommandFlags{}.Bind(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		err := CommandFlags{}.Load(fs)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: Load: %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ProgressFlag(fs); got != tt.want || err != nil {
			t.Errorf("%v: ProgressFlag = %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
}

// TestCommandFlagsStrict checks that a command's file and environment
// follow the layering engine's rules, as calibrate fit's and the
// sidecar's do: a duplicate key, a second document and a variable named
// after a section are problems; an alias is its value.
func TestCommandFlagsStrict(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		env        map[string]string
		err        string
		want       map[string]string
	}{
		{name: "duplicate key", file: "limit: 1\nlimit: 2\n", err: "limit: duplicate key, first on line 1 (line 2)"},
		{name: "second document", file: "limit: 1\n---\nlimit: 2\n", err: "more than one YAML document (---): want one (line 2)"},
		{name: "section variable", file: "triton:\n  grpc: f:1\n", env: map[string]string{"REACT_TRITON": "x"},
			err: "triton: a section cannot be set from the environment, only its keys (such as $REACT_TRITON_GRPC): unset $REACT_TRITON (from $REACT_TRITON)"},
		{name: "alias", file: "tasks: &t [a, b]\ncomponents: *t\n", want: map[string]string{"tasks": "[a,b]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			file := filepath.Join(t.TempDir(), "cmd.yaml")
			if err := os.WriteFile(file, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			checkLoad(t, newCommandFlags(t, "--config", file), tt.err, tt.want)
		})
	}
}
