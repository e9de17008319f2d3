// Package npyfile reads and writes 2-D float32 and float64 arrays in NumPy's
// .npy format (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
//
// The reader parses the header strictly and never trusts it: a matrix file
// is refused, with a message that says why, when its dtype is not a float32
// or float64, when it is not 2-D, when it is in Fortran order, or when its
// size does not match its header. Data is read in chunks of rows, so memory
// stays bounded whatever the file's size.
package npyfile
