package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/devicetest"
)

// TestExecuteDeviceWithoutDevice checks what ExecuteDevice decides before
// it touches a device: the shape and the preference are the request's
// problems, and a model that does not correct on a device refuses the rest
// without calling alloc. On a GPU (bench/gpu.sh) the correction itself is
// tested in package react.
func TestExecuteDeviceWithoutDevice(t *testing.T) {
	if react.CurrentAccelerator() != nil {
		t.Skip("a device is in use")
	}
	m := loadZoo(t, "FP32", "")
	if m.OnDevice() {
		t.Fatal("OnDevice without a device")
	}
	for _, tc := range []struct {
		name string
		req  DeviceRequest
		code Code
		want error
	}{
		{"shape", DeviceRequest{Shape: []int64{2, 63}, Input: 1}, CodeInvalidArgument, nil},
		{"preference", DeviceRequest{Shape: []int64{2, 64}, Input: 1, Keys: pref("nosuchtask=1")}, CodeInvalidArgument, nil},
		{"no device", DeviceRequest{Shape: []int64{2, 64}, Input: 1, Keys: pref("fashion=1")}, CodeInternal, control.ErrNotOnDevice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := m.ExecuteDevice(context.Background(), tc.req, func() (DeviceOutput, error) {
				t.Fatal("alloc called")
				return DeviceOutput{}, nil
			})
			var re *RequestError
			if !errors.As(out.Err, &re) || re.Code != tc.code {
				t.Fatalf("ExecuteDevice = %v, want a request error of code %d", out.Err, tc.code)
			}
			if tc.want != nil && !errors.Is(out.Err, tc.want) {
				t.Errorf("ExecuteDevice = %v, want %v", out.Err, tc.want)
			}
		})
	}
}

// TestExecuteDevice corrects requests whose input is in device memory, as
// Triton hands over a backbone's output on the GPU: the output, allocated
// by cudaMalloc as Triton does, or in host memory as Triton's front ends
// give it for an output that goes to the client, holds W_p z for a
// correcting preference (against the float64 reference) and z itself for
// none. bench/gpu.sh runs it on a GPU; CI runs it under the emulator.
func TestExecuteDevice(t *testing.T) {
	if react.CurrentAccelerator() == nil {
		t.Skip("no device in use")
	}
	m := loadZoo(t, "FP32", "")
	if !m.OnDevice() {
		t.Fatal("an FP32 model does not correct on the device in use")
	}
	const d, rows = 64, 5
	rng := rand.New(rand.NewPCG(4, 4))
	z := make([]float32, rows*d)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	n := 4 * len(z)
	in := devicetest.Alloc(t, n, devicetest.Runtime)
	devicetest.Upload(t, in, z)
	for _, tc := range []struct {
		spec string
		host bool // Triton placed the output in host memory
	}{{"fashion=1", false}, {"fashion=0.6,mnist=0.4", false}, {"none", false}, {"fashion=0.6,mnist=0.4", true}, {"none", true}} {
		name := tc.spec
		if tc.host {
			name += " into host memory"
		}
		t.Run(name, func(t *testing.T) {
			var dst DeviceOutput
			if tc.host {
				dst.Host = make([]byte, n)
				for i := range dst.Host {
					dst.Host[i] = 0xFF
				}
			} else {
				dst.Ptr = devicetest.Alloc(t, n, devicetest.Runtime)
				devicetest.Fill(t, dst.Ptr, n, 0xFF)
			}
			allocs := 0
			res := m.ExecuteDevice(context.Background(), DeviceRequest{Shape: []int64{rows, d}, Input: in, Size: n, Keys: pref(tc.spec)},
				func() (DeviceOutput, error) { allocs++; return dst, nil })
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if allocs != 1 {
				t.Fatalf("alloc called %d times", allocs)
			}
			got := make([]float32, len(z))
			if tc.host {
				copy(got, unsafe.Slice((*float32)(unsafe.Pointer(&dst.Host[0])), len(z)))
			} else {
				devicetest.Download(t, got, dst.Ptr)
			}
			if tc.spec == "none" {
				for i := range got {
					if got[i] != z[i] {
						t.Fatalf("none: [%d] = %v, want the input %v", i, got[i], z[i])
					}
				}
				return
			}
			want := reference(t, tc.spec, z, d)
			for i := range got {
				if e := math.Abs(float64(got[i]) - want[i]); !(e <= 1e-4*(1+math.Abs(want[i]))) {
					t.Fatalf("%s: [%d] = %v, want %v", tc.spec, i, got[i], want[i])
				}
			}
		})
	}
	// Host memory of the wrong size is refused, not overrun (nor read past
	// the input, for none).
	for _, spec := range []string{"fashion=1", "none"} {
		for _, size := range []int{n - 4, n + 4} {
			res := m.ExecuteDevice(context.Background(), DeviceRequest{Shape: []int64{rows, d}, Input: in, Size: n, Keys: pref(spec)},
				func() (DeviceOutput, error) { return DeviceOutput{Host: make([]byte, size)}, nil })
			if res.Err == nil {
				t.Errorf("%s: ExecuteDevice into %d bytes of host memory for %d succeeded", spec, size, n)
			}
		}
	}
	// A buffer that is not the shape's size: the request's error, never a
	// read past the input (a pooled allocation's neighbour, which the
	// address checks cannot see).
	for _, size := range []int{n - 4, n + 4, 0} {
		res := m.ExecuteDevice(context.Background(), DeviceRequest{Shape: []int64{rows, d}, Input: in, Size: size, Keys: pref("fashion=1")},
			func() (DeviceOutput, error) {
				t.Fatalf("alloc called for an input of %d bytes", size)
				return DeviceOutput{}, nil
			})
		var re *RequestError
		if !errors.As(res.Err, &re) || re.Code != CodeInvalidArgument {
			t.Errorf("ExecuteDevice of a %d-byte buffer for %d = %v, want an invalid argument", size, n, res.Err)
		}
	}
	// No rows: an output of no bytes, which Triton may give no buffer.
	for _, spec := range []string{"fashion=1", "none"} {
		allocs := 0
		res := m.ExecuteDevice(context.Background(), DeviceRequest{Shape: []int64{0, d}, Input: in, Keys: pref(spec)},
			func() (DeviceOutput, error) { allocs++; return DeviceOutput{}, nil })
		if res.Err != nil || allocs != 1 {
			t.Errorf("%s: ExecuteDevice of 0 rows = %v, alloc called %d times; want no error, once", spec, res.Err, allocs)
		}
	}
	// A batch beyond cuBLAS's int, whose byte count overflows (4·(2⁵⁶+1)·64
	// wraps to 256 bytes): the request's error, not one row corrected and
	// success.
	// Size is the wrapped byte count, which the size check alone would let
	// pass.
	out := devicetest.Alloc(t, n, devicetest.Runtime)
	huge := int64(1<<56 + 1)
	wrapped := int(4 * huge * int64(d))
	for _, spec := range []string{"fashion=1", "none"} {
		res := m.ExecuteDevice(context.Background(), DeviceRequest{Shape: []int64{huge, d}, Input: in, Size: wrapped, Keys: pref(spec)},
			func() (DeviceOutput, error) { return DeviceOutput{Ptr: out}, nil })
		var re *RequestError
		if !errors.As(res.Err, &re) || re.Code != CodeInvalidArgument {
			t.Errorf("%s: ExecuteDevice of 2⁵⁶+1 rows = %v, want an invalid argument", spec, res.Err)
		}
	}
	// A model in FP16 or BF16 does not correct on the device (its input
	// is copied to the host and corrected there), and ExecuteDevice
	// refuses it before allocating.
	for _, dt := range []string{"FP16", "BF16"} {
		m := loadZoo(t, dt, "")
		if m.OnDevice() {
			t.Errorf("%s model: OnDevice", dt)
		}
		res := m.ExecuteDevice(context.Background(), DeviceRequest{Shape: []int64{rows, d}, Input: in, Size: n, Keys: pref("fashion=1")},
			func() (DeviceOutput, error) { t.Fatalf("%s: alloc called", dt); return DeviceOutput{}, nil })
		if !errors.Is(res.Err, control.ErrNotOnDevice) {
			t.Errorf("%s model: ExecuteDevice = %v, want ErrNotOnDevice", dt, res.Err)
		}
	}
	var res Outcome
	// A request whose output could not be allocated fails, and says so.
	res = m.ExecuteDevice(context.Background(), DeviceRequest{Shape: []int64{rows, d}, Input: in, Size: n, Keys: pref("fashion=1")},
		func() (DeviceOutput, error) { return DeviceOutput{}, errors.New("no GPU memory for the output") })
	var re *RequestError
	if !errors.As(res.Err, &re) || re.Code != CodeInternal {
		t.Errorf("ExecuteDevice with a failed allocation = %v, want an internal request error", res.Err)
	}
}
