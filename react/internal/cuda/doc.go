// Package cuda is a minimal binding of the CUDA driver API, cuBLAS and
// cuSOLVER: what package react needs to solve and apply W_p on a GPU
// (docs/gpu.md). It is built only with the cuda build tag; without it the
// package is empty.
//
// The libraries are opened with dlopen when Open is first called, not
// linked: a binary built with the tag starts on any machine, and Open
// returns an error that says what is missing (a library, the driver, a
// device) so that the caller can fall back to the CPU. Each function is
// resolved into a pointer of the type its CUDA 13 header declares, so the
// compiler checks every call against NVIDIA's prototypes.
//
// Every call runs with the device's primary context current on a locked OS
// thread, serialised by a mutex, on one stream of the device with one
// cuBLAS and one cuSOLVER handle bound to it. Memory is plain device
// memory (cuMemAlloc), never managed memory.
package cuda
