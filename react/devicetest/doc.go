// Package devicetest gives tests device memory to hand to code that
// corrects batches in place on a GPU (react.DeviceMatrix.ApplyDevice,
// the Triton backend's ExecuteDevice), allocated the two ways a caller
// does: through the driver (cuMemAlloc) and through the CUDA runtime
// (cudaMalloc), as Triton allocates the tensors it hands to a backend.
//
// It opens the first device itself, beside the one package react uses, as
// another component of the same process would: both share the device's
// primary context, so memory from either is valid in the other. Without
// the cuda build tag, or without a device, Open reports why and the
// helpers skip the test.
package devicetest
