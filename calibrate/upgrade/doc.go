// Package upgrade makes an ensemble of a Triton model repository
// controllable in backend mode, the library under calibrate upgrade: Plan
// checks the ensemble, the tensor to correct and the components file, and
// computes the react model and the ensemble's react step; Describe prints
// that plan and Write writes it atomically; Rollout brings it into a
// running Triton over its HTTP endpoint, react model first.
package upgrade
