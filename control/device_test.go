package control

import (
	"context"
	"errors"
	"testing"

	"github.com/mergectl/react-triton/react"
)

// TestProfileOnDevice: with the cuda backend (a cuda build on a GPU;
// bench/gpu.sh runs it there), a profile solves its pinned and per-request
// W_p on the device, formed at once (no factored first answer), and
// corrects there, against the same float64 reference as on the CPU.
// Elsewhere it checks that no matrix claims to be on a device.
func TestProfileOnDevice(t *testing.T) {
	if prev := react.CurrentBackend(); prev != react.BackendCUDA {
		if _, err := react.UseBackend(react.BackendCUDA); err != nil {
			t.Logf("no device: %v", err) // and nothing switched
		} else {
			defer react.UseBackend(prev)
		}
	}

	comps := testComponents(t, 12, 60, tasks3...)
	cache, _ := NewCache(4)
	p := newTestProfile(t, ProfileSpec{Components: comps, Cache: cache, Default: "cars=1"})
	onDevice := react.CurrentAccelerator() != nil
	for _, spec := range []string{"cars=1", "cars=2,svhn=1"} {
		c, err := p.Resolve(header(spec))
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.Matrix(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if m.OnDevice() != onDevice {
			t.Fatalf("%s: OnDevice = %v with accelerator %v", spec, m.OnDevice(), react.CurrentAccelerator())
		}
		if !onDevice {
			if err := m.ApplyDevice(1, 2, 1); !errors.Is(err, ErrNotOnDevice) {
				t.Errorf("%s: ApplyDevice on the CPU = %v, want ErrNotOnDevice", spec, err)
			}
			continue
		}
		if !m.Formed() {
			t.Errorf("%s: not formed at once on the device", spec)
		}
		w := map[string]float64{"cars": 1}
		if spec != "cars=1" {
			w = map[string]float64{"cars": 2.0 / 3, "svhn": 1.0 / 3}
		}
		checkApply(t, spec, m, referenceW(t, comps, comps.Beta, w))
	}
}
