package linalg

// The block sizes, for the tests of package linalg_test.
const (
	TrsmBlock        = trsmBlock
	MinRowsPerWorker = minRowsPerWorker
	InvertRows       = invertRows
)
