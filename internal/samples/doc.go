// Package samples reads the samples that calibrate fit --triton and
// calibrate eval send to Triton models, and matches them with the models'
// inputs: arrays of .npy form, one .npy file for a model of one input or
// an .npz archive of one array per input named as the input, each of any
// dtype Triton has a datatype for (float32, float16, float64, integers,
// bool, fixed-width byte strings as BYTES), with the samples along the
// first axis. Rows are read when they are sent, not held in memory.
package samples
