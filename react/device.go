package react

// The device seam: where W_p is solved and applied when the backend in use
// is a GPU (BackendCUDA). Package control asks CurrentAccelerator for the
// device once per profile, loads the profile's solver onto it, and keeps
// each W_p there for the correction; with no device it uses the CPU
// solver. The float64 CPU solver stays the reference the device is tested
// against (docs/gpu.md gives the tolerances).

// Accelerator is a device that solves and applies W_p: a GPU in binaries
// built with the cuda tag, opened by UseBackend. It is safe for concurrent
// use.
type Accelerator interface {
	// Name describes the device, for logs: "NVIDIA H100 80GB HBM3
	// (device 0)".
	Name() string
	// Load uploads the statistics of s (A_t and G_t of every task) to the
	// device, once, and returns a solver there. The device memory is freed
	// when the DeviceSolver is no longer referenced.
	Load(s *Solver) (DeviceSolver, error)
	// CopyDevice copies n bytes between addresses of the device's memory,
	// as a correction that applies no W_p does.
	CopyDevice(dst, src uintptr, n int) error
	// CopyDeviceToHost copies len(dst) bytes from an address of the
	// device's memory to host memory.
	CopyDeviceToHost(dst []byte, src uintptr) error
}

// DeviceSolver computes W_p on a device from statistics uploaded once. It
// is safe for concurrent use.
type DeviceSolver interface {
	// Solve forms W_p = A_p C_p⁻¹ for p on the device: the weighted sums,
	// the Cholesky factorisation of C_p and the solve, in float64, with the
	// checks of Solver.SolveIntoStats (a *SolveError for a C_p that is not
	// positive definite or too ill-conditioned; the condition estimate is
	// the same kind of 1-norm estimate). W_p stays on the device, in
	// float32 (rounded there, with Float32MatrixTo's range check), for
	// DeviceMatrix.Apply.
	Solve(p Preference) (DeviceMatrix, SolveStats, error)
}

// DeviceMatrix is a W_p held in a device's memory (float32, D×D), with its
// copy in host memory. Its device memory is freed when it is no longer
// referenced. It is safe for concurrent use.
type DeviceMatrix interface {
	// D returns the feature dimension.
	D() int
	// Host returns W_p in host memory, row-major float32, as
	// Float32Matrix returns it, copied from the device on the first call
	// (the correction does not need it). The caller must not modify it.
	Host() ([]float32, error)
	// Apply stores in dst the corrected batch: each row of z (B×D,
	// row-major, host memory) multiplied by W_p, as Correct does, with
	// the batch copied to the device and back.
	Apply(dst, z []float32) error
	// ApplyDevice is Apply on memory of the same device: rows rows of D
	// float32 values at address z, corrected into address dst (which must
	// not overlap z), with no copy to the host.
	ApplyDevice(dst, z uintptr, rows int) error
	// ApplyDeviceToHost is ApplyDevice into host memory: for a batch on
	// the device whose output the caller was given in host memory.
	ApplyDeviceToHost(dst []float32, z uintptr, rows int) error
}
