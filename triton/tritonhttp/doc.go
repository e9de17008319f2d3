// Package tritonhttp converts inference requests and responses between
// Triton Inference Server's HTTP/REST protocol (KServe v2 with Triton's
// binary tensor extension) and its gRPC messages (triton/tritonpb), so that
// one pipeline can serve clients of both protocols. It also checks the
// framing of every HTTP inference request before anything reaches Triton:
// one malformed body is enough to crash Triton 2.51.
//
// # The body of an HTTP inference request
//
// A request body starts with a JSON object, the header:
//
//	{"id": "42",
//	 "parameters": {"binary_data_output": true, "preference": "fast"},
//	 "inputs": [
//	   {"name": "INPUT0", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2], [3, 4]]},
//	   {"name": "IMAGE", "datatype": "UINT8", "shape": [28, 28],
//	    "parameters": {"binary_data_size": 784}}],
//	 "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": true}}]}
//
// Each input gives its data in one of three ways:
//
//   - "data": a JSON array, flat or nested any way, whose leaves are the
//     elements in row-major order: numbers for the numeric types (integers
//     within range for the integer types; NaN, Inf, Infinity and their
//     negatives are accepted for FP32 and FP64, as Triton accepts them),
//     true or false for BOOL, strings for BYTES. FP16 and BF16 have no JSON
//     form.
//   - the parameter binary_data_size: the input's bytes follow the JSON
//     header, after those of the binary inputs listed before it, in the
//     layout of gRPC's raw contents: little-endian elements, and each BYTES
//     element prefixed with its length as a 4-byte little-endian integer.
//   - the parameter shared_memory_region (with shared_memory_offset and
//     shared_memory_byte_size): the data are in a region registered with
//     the server, and the body holds none of them.
//
// When any input is binary, the Inference-Header-Content-Length HTTP header
// gives the length of the JSON header, and the body is exactly the header
// followed by the binary inputs. Without that HTTP header the whole body is
// JSON. Triton's other use of the header, a length of 0 meaning "the whole
// body is the raw data of the model's only input", is not supported.
//
// Parameters map to the gRPC message's parameters the way Triton's HTTP
// server maps them: strings, booleans, integer literals within int64
// (int64_param) and other numbers (double_param). Some belong to HTTP
// only and are removed: binary_data_size on inputs, binary_data on
// outputs and binary_data_output on the request. Keys starting with
// "triton_" are refused.
//
// # The body of an HTTP inference response
//
// A response has the same shape: a JSON header
//
//	{"id": "42", "model_name": "m", "model_version": "1",
//	 "outputs": [{"name": "OUTPUT0", "datatype": "FP32", "shape": [2, 2],
//	              "parameters": {"binary_data_size": 16}}]}
//
// then the binary outputs' bytes in order, the header's length in the
// response's Inference-Header-Content-Length header. An output comes back
// as binary when the request lists it with binary_data true, or does not
// list it and sets binary_data_output; otherwise as a flat "data" array.
//
// # Checks
//
// ParseRequest takes what Triton takes, less a few things a front should
// never forward, and refuses them with a precise message: JSON nested
// deeper than 64 levels (a deeply nested body crashes Triton 2.51), keys
// given twice in one object (Triton's parser reads the first, a checker
// might read the last), data whose element count differs from the shape's
// (Triton ignores the data of an empty shape), and parameter values that
// are not strings, booleans or numbers. Where Triton refuses a request
// itself, it is refused with Triton's status and message (a *TritonError):
// a JSON header that does not parse (500, rapidjson's reason and offset,
// reproduced rule for rule in jsonsyntax.go), an
// Inference-Header-Content-Length outside the body (400), and JSON data
// of an FP16 or BF16 input (400). The header
// length is read with atoi, as Triton reads it ("252abc" is 252), and a
// length of 0 is a raw binary request (the body is the data of the
// model's only input). An output listed twice is requested once, as
// Triton answers it. ParseRequestWith bounds the inputs, outputs and
// parameters it reads (a *LimitError) and stops when its context ends;
// every check is linear in the body's size.
//
// # Use
//
// A front server reads a body with ReadBody (size limit, gzip and deflate
// decoding), converts it with ParseRequest (answering HTTP 400 with the
// *RequestError's message, in the form ErrorBody writes, on a malformed
// request), sends Request.Proto over gRPC, and converts the answer with
// EncodeResponse. EncodeRequest and DecodeResponse are the client side of
// the same conversions, for tests and benchmark clients.
//
// ParseRequest never copies binary data: the raw contents of binary inputs
// alias the body, which must not change while the request is in use.
package tritonhttp
