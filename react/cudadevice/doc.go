// Package cudadevice is the cuda backend of package react: W_p solved and
// applied on the first CUDA device (CUDA_VISIBLE_DEVICES chooses which),
// through cuBLAS and cuSOLVER opened at run time (react/internal/cuda),
// behind react's device seam (react.Accelerator, react.DeviceSolver,
// react.DeviceMatrix). The rest of the linear algebra runs on the best CPU
// backend built in. docs/gpu.md describes it.
//
// Built with the cuda tag, it registers react.BackendCUDA when imported
// (react.RegisterCUDA), as a database/sql driver registers itself:
//
//	import _ "github.com/mergectl/react-triton/react/cudadevice"
//
// Built without it, the package is empty, so binaries and tests import it
// whatever their tags.
package cudadevice
