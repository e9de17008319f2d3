// Package ensemble reads a Triton ensemble's step graph from its model
// configuration (ensemble_scheduling: each step's model, version,
// input_map and output_map), checks it and the tensor a controllable model
// corrects (New), and runs the steps one request needs, each as soon as
// the tensors it reads are ready, with a hook on the tensor to correct
// (Run). It knows nothing of preferences or transports: package pipeline
// calls Triton and corrects the tensor through it.
package ensemble
