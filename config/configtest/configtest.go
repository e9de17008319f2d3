// Package configtest is test support only: what the tests of the two
// configurations on config/layer (package config, calibrate's, and
// sidecar/config, the sidecar's) share. A configuration is staged in a
// temporary directory next to the files it may name (Stage, StageText),
// flags are parsed as a command binds them (Flags), a problem.List is
// read back line by line (ProblemLines), and the bad files of a testdata
// directory are checked against their golden errors (LoadBad).
package configtest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/problem"
)

// Fixtures are the files Stage creates next to a staged configuration:
// validation only checks that they exist, so any bytes will do, except in
// a token file (management.token_file), whose tokens it reads.
var Fixtures = []string{
	"components.safetensors",
	"second.safetensors",
	"tls/ca.pem",
	"tls/client.pem",
	"tls/client-key.pem",
	"tls/server.pem",
	"tls/server-key.pem",
	"tls/client-ca.pem",
	"management.token",
}

// FixtureToken is the content of the token file among the Fixtures: one
// valid token.
const FixtureToken = "# management tokens\n0123456789abcdef0123\n"

// Stage copies the configuration file src into a new temporary directory,
// next to the Fixtures, and returns the copy's path.
func Stage(t testing.TB, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	return StageText(t, filepath.Base(src), string(data))
}

// StageText writes a configuration file named name with the given text
// into a new temporary directory, next to the Fixtures, and returns its
// path.
func StageText(t testing.TB, name, text string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range Fixtures {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		content := "not checked"
		if strings.HasSuffix(f, ".token") {
			content = FixtureToken
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Flags returns a flag set named name with the flags bind adds, parsed
// from args; a parse error fails t.
func Flags(t testing.TB, name string, bind func(*pflag.FlagSet), args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// ProblemLines returns the problems of err, each formatted as its Error
// method does, or fails t when err is not a problem.List.
func ProblemLines(t testing.TB, err error) []string {
	t.Helper()
	var l problem.List
	if !errors.As(err, &l) {
		t.Fatalf("error %v (%T) is not a problem.List", err, err)
	}
	var out []string
	for _, p := range l {
		out = append(out, p.Error())
	}
	return out
}

// LoadBad checks every configuration file that pattern matches (a glob
// such as testdata/bad/*.yaml), each in a subtest: staged by Stage, it
// must fail to load, and the error, with the staging directory written
// $DIR and a final newline, must be the golden file beside it, the same
// name ending .err instead of .yaml (go test -update rewrites them). A
// pattern that matches nothing fails t, as does a golden file without its
// .yaml. load loads the configuration at path and returns it with the
// error; it may first prepare t (clear the environment).
func LoadBad(t *testing.T, pattern string, load func(t *testing.T, path string) (any, error)) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s (%v)", pattern, err)
	}
	goldens, err := filepath.Glob(strings.TrimSuffix(pattern, ".yaml") + ".err")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range goldens {
		if !slices.Contains(files, strings.TrimSuffix(g, ".err")+".yaml") {
			t.Errorf("%s has no .yaml", g)
		}
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			path := Stage(t, file)
			c, err := load(t, path)
			if err == nil {
				t.Fatalf("%s loaded: %+v, want an error", file, c)
			}
			got := strings.ReplaceAll(err.Error(), filepath.Dir(path), "$DIR") + "\n"
			testutil.Golden(t, strings.TrimSuffix(file, ".yaml")+".err", []byte(got))
		})
	}
}
