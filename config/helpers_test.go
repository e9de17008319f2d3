package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/problem"
)

// fixtures are the files stage creates next to a staged configuration:
// Validate only checks that they exist, so any bytes will do, except in a
// token file (management.token_file), whose tokens it reads.
var fixtures = []string{
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

// fixtureToken is the content of the token file among the fixtures.
const fixtureToken = "# management tokens\n0123456789abcdef0123\n"

// stage copies the configuration file src into a new temporary directory,
// next to the fixtures, and returns the copy's path.
func stage(t *testing.T, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	return stageText(t, filepath.Base(src), string(data))
}

// stageText writes a configuration file named name with the given text
// into a new temporary directory, next to the fixtures, and returns its
// path.
func stageText(t *testing.T, name, text string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range fixtures {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		content := "not checked"
		if strings.HasSuffix(f, ".token") {
			content = fixtureToken
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

// clearEnv unsets every REACT_* variable Load reads, for the rest of the
// test, so that the environment the tests run in cannot change them.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range scalarKeys {
		v := EnvVar(k.name)
		t.Setenv(v, "") // restores the old value after the test
		if err := os.Unsetenv(v); err != nil {
			t.Fatal(err)
		}
	}
}

// problemLines returns the FieldErrors of err, formatted, or fails the
// test when err is not an *Error.
func problemLines(t *testing.T, err error) []string {
	t.Helper()
	var cerr problem.List
	if !errors.As(err, &cerr) {
		t.Fatalf("error %v (%T) is not a problem.List", err, err)
	}
	var out []string
	for _, fe := range cerr {
		out = append(out, fe.Error())
	}
	return out
}

// minimalYAML is a valid configuration to which tests append sections.
const minimalYAML = `triton:
  grpc: localhost:8101
  http: localhost:8100
`

// indent prefixes every line of s with two spaces, for messages.
func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// writeToken writes a valid token file at path.
func writeToken(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(fixtureToken), 0o644); err != nil {
		t.Fatal(err)
	}
}
