// Package componentsfile reads and writes the components file: the tasks'
// calibration statistics (react.Components) as a safetensors file
// (react/safetensors), with a metadata header that names the tasks, the
// backbone and each task's expert, and checksums of the data and of the
// metadata.
//
// Save and Write encode; Load, Read and Parse decode and verify (format
// and version, both checksums, every tensor's presence and shape, the
// symmetry of each G, the orthogonality of each W_orth, then
// react.Components.Validate); ReadInfo reads the header alone. The format,
// byte by byte, is docs/components-file.md.
package componentsfile
