// Package fit runs a fit of calibrate: from a configuration
// (config.Calibrate) it opens every task's pair source (.npy embeddings
// through calibrate/embeddings, or the models on Triton through
// calibrate/tritonpairs) and checks them all before any sample is read,
// accumulates each task's statistics with checkpoints and resume
// (react/partialfile), chooses β and the normalisation without labels
// when asked (beta_select.auto), and writes the components file, a
// shard's partial-statistics file, or one task into an existing file.
//
// Run is the whole fit; the calibrate command only loads the
// configuration and calls it, so another program fits the same way.
package fit
