package pairs

// Source yields one task's calibration features in paired batches:
// row i of a merged batch and row i of the matching expert batch are the
// merged backbone's and the task expert's features of the same input.
//
// The .npy embeddings implement it (NPYPair); a source that runs the models
// on a Triton server can implement it too, and Accumulate serves both.
type Source interface {
	// Task returns the task's name.
	Task() string
	// Dim returns the feature dimension D.
	Dim() int
	// Len returns the total number of pairs, or -1 if it is not known in
	// advance.
	Len() int64
	// Next fills mtl and ind, which have the same length, a multiple of
	// Dim(), with up to len(mtl)/Dim() further pairs, row-major, and returns
	// how many it wrote. At the end it returns 0 and io.EOF.
	Next(mtl, ind []float64) (int, error)
	// Close releases the source's resources.
	Close() error
}
