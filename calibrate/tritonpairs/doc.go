// Package tritonpairs computes a fit's paired features on a Triton
// server: each chunk of a task's unlabelled calibration inputs (an .npy
// or .npz file of samples, or a folder of images, decoded here or sent
// encoded) goes to the merged backbone and to the task's expert at once,
// and the two feature outputs are the pairs, a pairs.Source. Open checks
// the inputs, the server and every model before any sample is sent.
package tritonpairs
