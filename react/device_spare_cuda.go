//go:build cuda

package react

import "github.com/mergectl/react-triton/react/internal/cuda"

// maxSpareBytes bounds the device memory sparePool keeps unused: about
// fifty W_p's at D = 768 (2.4 MB each in float32), more than a burst of
// new preferences evicts from the W_p cache at once.
const maxSpareBytes = 128 << 20

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
