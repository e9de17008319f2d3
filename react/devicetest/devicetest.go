package devicetest

// Allocator says how Alloc allocates device memory.
type Allocator int

const (
	// Driver allocates with the driver API's cuMemAlloc, as package
	// react does.
	Driver Allocator = iota
	// Runtime allocates with the CUDA runtime's cudaMalloc, as Triton
	// does for the tensors it hands to a backend.
	Runtime
)

func (a Allocator) String() string {
	if a == Runtime {
		return "cudaMalloc"
	}
	return "cuMemAlloc"
}
