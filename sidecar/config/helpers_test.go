package config

import (
	"os"
	"testing"

	"github.com/mergectl/react-triton/config/configtest"
)

// clearEnv unsets every REACT_* variable Load reads, for the rest of the
// test, so that the environment the tests run in cannot change them.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range scalarKeys {
		v := EnvVar(k.Name)
		t.Setenv(v, "") // restores the old value after the test
		if err := os.Unsetenv(v); err != nil {
			t.Fatal(err)
		}
	}
}

// minimalYAML is a valid configuration to which tests append sections.
const minimalYAML = `triton:
  grpc: localhost:8101
  http: localhost:8100
`

// writeToken writes a valid token file at path.
func writeToken(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(configtest.FixtureToken), 0o644); err != nil {
		t.Fatal(err)
	}
}
