package pairs

import (
	"errors"
	"fmt"
	"io"

	"github.com/mergectl/react-triton/react"
)

// DefaultChunkRows is the number of pairs Accumulate reads at a time.
const DefaultChunkRows = 4096

// Accumulate reads every pair from src, chunkRows pairs at a time, into a
// new accumulator. Its memory is O(D² + chunkRows·D), whatever the number of
// pairs. progress, if not nil, is called with the number of pairs of each
// chunk once it is accumulated.
func Accumulate(src Source, chunkRows int, progress func(pairs int)) (*react.Accumulator, error) {
	d := src.Dim()
	if d <= 0 {
		return nil, fmt.Errorf("task %s: invalid feature dimension %d", src.Task(), d)
	}
	if chunkRows <= 0 {
		chunkRows = DefaultChunkRows
	}
	acc := react.NewAccumulator(d)
	mtl := make([]float64, chunkRows*d)
	ind := make([]float64, chunkRows*d)
	for {
		n, err := src.Next(mtl, ind)
		if n > 0 {
			if addErr := acc.AddFloat64(mtl[:n*d], ind[:n*d]); addErr != nil {
				return nil, fmt.Errorf("task %s: rows %d to %d: %w", src.Task(), acc.N(), acc.N()+int64(n), addErr)
			}
			if progress != nil {
				progress(n)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", src.Task(), err)
		}
	}
	if want := src.Len(); want >= 0 && acc.N() != want {
		return nil, fmt.Errorf("task %s: read %d pairs, want %d", src.Task(), acc.N(), want)
	}
	return acc, nil
}
