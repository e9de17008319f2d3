// Package modelconfig reads Triton model configurations in their text form
// (config.pbtxt) and edits them in place.
//
// Parse reads the fields this project knows (package tritonpb's subset of
// Triton's model_config.proto) and ignores the others. The edits work on
// the text itself, token by token, so that everything else a user wrote —
// comments, layout, and the fields tritonpb does not declare
// (response_cache, sequence_batching, optimization, ...) — stays exactly as
// it was; each edit checks its result by parsing it again.
package modelconfig
