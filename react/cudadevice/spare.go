//go:build cuda

package cudadevice

import (
	"runtime"

	"github.com/mergectl/react-triton/react/internal/cuda"
)

// maxSpareBytes bounds the device memory sparePool keeps unused: about
// fifty W_p's at D = 768 (2.4 MB each in float32), more than a burst of
// new preferences evicts from the W_p cache at once.
const maxSpareBytes = 128 << 20

// The garbage collector is asked to run after this many bytes, or this
// many buffers, of new W_p's: a dropped W_p's device memory comes back
// only once the collector finds it unreachable, and the Go heap, which
// decides when the collector runs, does not see device memory (a W_p at
// D = 1280 is 6.5 MB on the device and a few words on the heap).
const (
	gcEveryBytes   = 64 << 20
	gcEveryBuffers = 256
)

// spareBuffer is a device buffer of n bytes.
type spareBuffer struct {
	ptr cuda.Ptr
	n   int
}

// sparePool keeps device buffers that their owners dropped, by size, up
// to maxSpareBytes in all, for reuse. Its methods run inside Device.Do,
// whose mutex guards it.
type sparePool struct {
	free  map[int][]cuda.Ptr
	bytes int
	// allocs and reuses count the buffers get allocated and took from
	// the pool, for tests.
	allocs, reuses int
	// newBytes and newBuffers count what was allocated since the
	// collector was last asked to run, and gcs how often it was asked, for
	// tests.
	newBytes, newBuffers, gcs int
}

// get returns a buffer of n bytes, a spare one if there is one.
func (p *sparePool) get(dev *cuda.Device, n int) (cuda.Ptr, error) {
	if l := p.free[n]; len(l) > 0 {
		ptr := l[len(l)-1]
		p.free[n] = l[:len(l)-1]
		p.bytes -= n
		p.reuses++
		return ptr, nil
	}
	p.allocs++
	p.newBytes += n
	p.newBuffers++
	if p.newBytes >= gcEveryBytes || p.newBuffers >= gcEveryBuffers {
		p.newBytes, p.newBuffers = 0, 0
		p.gcs++
		go runtime.GC() // not here: the cleanups it runs take the device's lock
	}
	return dev.Alloc(n)
}

// put keeps b for reuse, or frees it when the pool is full.
func (p *sparePool) put(dev *cuda.Device, b spareBuffer) {
	if p.bytes+b.n > maxSpareBytes {
		dev.FreeLocked(b.ptr)
		return
	}
	if p.free == nil {
		p.free = make(map[int][]cuda.Ptr)
	}
	p.free[b.n] = append(p.free[b.n], b.ptr)
	p.bytes += b.n
}
