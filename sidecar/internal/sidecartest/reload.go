package sidecartest

import (
	"path/filepath"
	"testing"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
)

// OtherStats returns a scenario with the same backbone and heads as sc but
// other calibration samples, hence other W_p.
func OtherStats(sc *faketriton.Scenario, seed uint64) *faketriton.Scenario {
	o := faketriton.NewScenario(seed, sc.D, sc.Tasks...)
	o.M, o.Bias, o.Heads = sc.M, sc.Bias, sc.Heads
	return o
}

// CorruptComponents returns the bytes of sc's components file with one data
// byte flipped.
func CorruptComponents(t *testing.T, sc *faketriton.Scenario) []byte {
	t.Helper()
	b := sc.ComponentsBytes(t)
	b[len(b)-5] ^= 0x10
	return b
}

// LoadConfig writes a configuration file into dir and loads it.
func LoadConfig(t *testing.T, dir, name string, c CtlConfig) *config.Config {
	t.Helper()
	path := filepath.Join(dir, name)
	WriteFile(t, path, c.YAML())
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
