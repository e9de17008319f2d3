// Package safetensors reads and writes the safetensors tensor file format.
//
// A safetensors file is an 8-byte little-endian unsigned header length n,
// then n bytes of a UTF-8 JSON object, then the data section: the raw
// little-endian, C-order bytes of every tensor. The JSON object maps each
// tensor name to its dtype, shape and byte range inside the data section:
//
//	{
//	  "__metadata__": {"key": "value"},
//	  "weight": {"dtype": "F64", "shape": [2, 2], "data_offsets": [0, 32]}
//	}
//
// The optional "__metadata__" entry maps strings to strings.
//
// The reader is strict: it refuses, with an error that says why, a header
// longer than the file or than MaxHeaderSize, a header that is not a JSON
// object, an unknown dtype, a shape that does not match its byte range, byte
// ranges that overlap or leave gaps, a data section whose size differs from
// what the header describes (truncated or with trailing bytes) and duplicate
// names. It never panics, whatever the input.
//
// The writer lays the tensors out contiguously in the order given and pads
// the header with spaces so that the data section starts at a multiple of 8
// bytes, as the reference implementation does. WriteFile replaces its
// destination atomically.
package safetensors
