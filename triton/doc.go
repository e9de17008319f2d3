// Package triton is a Go client for NVIDIA Triton Inference Server's gRPC
// protocol (inference.GRPCInferenceService), built on our own wire-compatible
// protocol files in triton/proto and the code generated from them in
// triton/tritonpb.
//
// A Client holds one shared *grpc.ClientConn, so every call reuses the same
// HTTP/2 connection. The maximum message size is math.MaxInt32 in both
// directions, as in Triton and its own clients.
//
//	c, err := triton.Dial(ctx, "localhost:8001", triton.WithTimeout(10*time.Second))
//	if err != nil { ... }
//	defer c.Close()
//	resp, err := c.Infer(ctx, &triton.InferRequest{
//		Model:  "affine_fp32",
//		Inputs: []triton.Tensor{triton.NewFP32("INPUT0", []int64{1, 4}, x)},
//	})
//
// Tensors carry their elements as little-endian bytes (Tensor.Raw), the
// layout of raw_input_contents and raw_output_contents. Constructors such
// as NewFP32, NewFP16 and NewBytes build them from Go slices, and accessors
// such as Tensor.FP32 and Tensor.AsFloat32 read them back. FP16 and BF16 are
// converted exactly, rounding to nearest even.
//
// Infer validates a request against the model's metadata (fetched once per
// model and version, then cached) before anything is sent. Every error the
// client returns carries a gRPC status code that status.Code reads:
// INVALID_ARGUMENT for a request that does not fit the model, NOT_FOUND for
// an unknown model, UNAVAILABLE when the server cannot be reached.
//
// What calibrate fit, calibrate eval and the sidecar do with a model
// (resolve it once, pick its inputs and outputs by one set of rules, check
// its feature, run it in batches) is triton/modelinfo's; DescribeModel
// names a model in their messages. Signature is what a client sees of a
// model (inputs, outputs, platform, max_batch_size), and
// Signature.Differences says, one line each, how a model standing in for
// another under its name differs from it.
//
// Metadata, health and configuration calls are retried on UNAVAILABLE with
// bounded, jittered backoff within the caller's deadline. Infer is never
// retried: a request that may have reached the server is not sent twice.
package triton
