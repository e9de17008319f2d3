//go:build cuda

package cuda

/*
#include "calls.h"
*/
import "C"

import "errors"

// Timer measures the GPU time of work queued on the device's stream, with
// a pair of CUDA events.
type Timer struct {
	d          *Device
	start, end C.CUevent
}

// NewTimer creates the events. Call Close when done. It fails with a
// driver older than CUDA 12.8's, which lacks cuEventElapsedTime_v2.
func (d *Device) NewTimer() (*Timer, error) {
	if C.rc_has_events() == 0 {
		return nil, errors.New("CUDA events: the driver lacks cuEventElapsedTime_v2 (CUDA 12.8 or later)")
	}
	t := &Timer{d: d}
	err := d.Do(func() error {
		if err := check("cuEventCreate", C.rc_cuEventCreate(&t.start, C.CU_EVENT_DEFAULT)); err != nil {
			return err
		}
		return check("cuEventCreate", C.rc_cuEventCreate(&t.end, C.CU_EVENT_DEFAULT))
	})
	return t, err
}

// Start records the start event on the stream. Call it inside Do.
func (t *Timer) Start() error {
	return check("cuEventRecord", C.rc_cuEventRecord(t.start, t.d.cur.stream))
}

// Stop records the end event on the stream. Call it inside Do.
func (t *Timer) Stop() error {
	return check("cuEventRecord", C.rc_cuEventRecord(t.end, t.d.cur.stream))
}

// Milliseconds waits for the end event and returns the GPU time between
// the two events. Call it inside Do.
func (t *Timer) Milliseconds() (float64, error) {
	if err := check("cuEventSynchronize", C.rc_cuEventSynchronize(t.end)); err != nil {
		return 0, err
	}
	var ms C.float
	err := check("cuEventElapsedTime", C.rc_cuEventElapsedTime(&ms, t.start, t.end))
	return float64(ms), err
}

// Close destroys the events.
func (t *Timer) Close() error {
	return t.d.Do(func() error {
		C.rc_cuEventDestroy(t.start)
		C.rc_cuEventDestroy(t.end)
		return nil
	})
}
