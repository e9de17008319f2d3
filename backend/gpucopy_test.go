//go:build cgo

package main

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/mergectl/react-triton/react/devicetest"
)

// devicePointer is the device address p as the unsafe.Pointer Triton hands
// over (a device address, never dereferenced by Go).
func devicePointer(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// TestCopyGPU: the CUDA runtime copies of an input Triton hands over in GPU
// memory (to the host) and of an output it places on another GPU (from the
// host) move exactly the bytes asked, in the right direction; a failed copy
// from the device leaves dst as it was. Run under the CUDA emulator, whose
// runtime (libcudart.so.13) is the one these copies load, as on a GPU (the
// cuda tag gives devicetest its memory); skipped without a device.
func TestCopyGPU(t *testing.T) {
	if err := devicetest.Open(); err != nil {
		t.Skip(err)
	}
	const n = 4096 + 12
	rng := rand.New(rand.NewPCG(2, 9))
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(rng.IntN(256))
	}
	p := devicetest.Alloc(t, n+8, devicetest.Runtime)
	devicetest.Fill(t, p, n+8, 0xA5)
	if err := copyToGPU(devicePointer(p), src, 0); err != nil {
		t.Fatal(err)
	}
	prefix := []byte("earlier requests' bytes")
	got, err := copyFromGPU(append([]byte(nil), prefix...), devicePointer(p), n+8, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):len(prefix)+n], src) {
		t.Fatalf("copied to the GPU and back: %d bytes, not the prefix and the source", len(got))
	}
	if tail := got[len(prefix)+n:]; !bytes.Equal(tail, bytes.Repeat([]byte{0xA5}, 8)) {
		t.Errorf("the 8 bytes after the copy to the GPU: %x, want them untouched (a5...)", tail)
	}
	if got, err := copyFromGPU(prefix, devicePointer(p), 0, 0); err != nil || !bytes.Equal(got, prefix) {
		t.Errorf("copying 0 bytes: %q, %v", got, err)
	}
	if err := copyToGPU(devicePointer(p), nil, 0); err != nil {
		t.Errorf("copying 0 bytes to the GPU: %v", err)
	}
	// Past the allocation: the runtime refuses, and dst keeps its length.
	got, err = copyFromGPU(append([]byte(nil), prefix...), devicePointer(p), n+16, 0)
	if err == nil || !bytes.Equal(got, prefix) {
		t.Errorf("copying past the allocation: %d bytes, %v; want an error and the %d bytes before", len(got), err, len(prefix))
	}
}
