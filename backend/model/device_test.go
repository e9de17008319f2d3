package model

import (
	"context"
	"errors"
	"testing"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
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
			out := m.ExecuteDevice(context.Background(), tc.req, func() (uintptr, error) {
				t.Fatal("alloc called")
				return 0, nil
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
