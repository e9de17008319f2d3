// Package modelinfo is what calibrate fit, calibrate eval and the sidecar
// do with a model on Triton, over a triton.Client: Resolve asks about it
// once (ready, metadata, configuration) and returns an Info, whose methods
// are the one set of rules every caller applies to a model: the input or
// output picked by name, by fallback or as the only one, batched inputs, a
// feature's datatype (FP32, FP16 or BF16: IsFeatureDatatype) and size,
// each problem worded once and starting with the model
// (triton.DescribeModel). RunBatched runs a resolved model on many
// samples, in requests of BatchOptions' size (DefaultBatch, capped by
// max_batch_size), DefaultInFlight of them at once.
package modelinfo
