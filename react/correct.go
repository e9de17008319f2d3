package react

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/mat"
)

// Correct applies the correction ẑ = W z to every row of a batch: z is
// row-major B×d with one feature per row, w is the row-major d×d matrix W
// (see Float32Matrix), and dst, of the same length as z, receives the
// corrected rows, that is dst = z Wᵀ. dst must not overlap z. It is the hot
// path of the sidecar: with the OpenBLAS backend a batch is one SGEMM
// (one SGEMV per row for a batch of fewer than 8 rows when W is 1 MiB or
// more, D ≥ 512: see gemmFor); with the pure-Go backend, one GEMV per row,
// and nothing is allocated.
func Correct(dst, z, w []float32, d int) error {
	if d <= 0 {
		return fmt.Errorf("correct: invalid feature dimension %d", d)
	}
	if len(w) != d*d {
		return fmt.Errorf("correct: W has %d values, want D×D = %d", len(w), d*d)
	}
	rows, err := CheckBatch(dst, z, d)
	if err != nil || rows == 0 {
		return err
	}
	wm := blas32.General{Rows: d, Cols: d, Stride: d, Data: w}
	if gemmFor(rows, d) {
		// One GEMM for the whole batch, dst = z Wᵀ, with a tuned BLAS
		// (the backend in use, see UseBackend).
		blas32.Gemm(blas.NoTrans, blas.Trans, 1, blas32.General{Rows: rows, Cols: d, Stride: d, Data: z}, wm, 0,
			blas32.General{Rows: rows, Cols: d, Stride: d, Data: dst})
		return nil
	}
	// One matrix-vector product per row: for the small batches gemmFor
	// leaves to it, and always with gonum's pure-Go kernels, where this is
	// faster than a single Sgemm over the batch on one core (about 35 µs
	// against 53 µs per row at D = 512, gonum v0.17) and, unlike Sgemm,
	// which fans out to goroutines, does not allocate. Parallelism comes
	// from the sidecar serving requests concurrently.
	for r := 0; r < rows; r++ {
		x := blas32.Vector{N: d, Inc: 1, Data: z[r*d : r*d+d]}
		y := blas32.Vector{N: d, Inc: 1, Data: dst[r*d : r*d+d]}
		blas32.Gemv(blas.NoTrans, 1, wm, x, 0, y)
	}
	return nil
}

// A GEMM packs W into its blocked layout on every call, which for a W that
// does not stay in a core's L2 cache reads and writes it once more than the
// rows' GEMVs, which read it straight (the first from memory, the others
// mostly from cache): below gemmMinRows rows, one GEMV per row is faster.
// Measured with OpenBLAS 0.3.21 on AMD EPYC (Zen 4, 1 MiB of L2 per core),
// one core, BenchmarkGemmOrGemv (bench/README.md, "The react step inside
// Triton, profiled"), GEMM against GEMVs, W in cache / in memory: D = 768,
// 2 rows 157/36 and 193/77 µs, 4 rows 178/74 and 233/145, 6 rows 187/127
// and 238/180, 16 rows 221/370 and 285/342; D = 512, 4 rows 72/30 and
// 139/92. At 8 and 12 rows the GEMVs were ahead in that run and behind in
// a noisier one; by 16 the GEMM wins everywhere. With a smaller W (D = 256)
// the GEMM is as fast or faster from 2 rows.
const (
	gemmMinRows  = 8
	gemvMinBytes = 1 << 20
)

// gemmFor reports whether Correct multiplies a batch of rows rows by a d×d
// W with one GEMM, rather than one GEMV per row: with a backend whose GEMM
// is tuned (gemmBatch), for more than one row, and for fewer than
// gemmMinRows only while W (4·d² bytes) is under gemvMinBytes.
func gemmFor(rows, d int) bool {
	return gemmBatch && rows > 1 && (rows >= gemmMinRows || 4*d*d < gemvMinBytes)
}

// CheckBatch checks a batch to correct and its destination, as Correct
// does, and returns its number of rows: z is a whole number of rows of d,
// dst has z's length and does not overlap it. DeviceMatrix.Apply checks
// its host batches with it.
func CheckBatch(dst, z []float32, d int) (int, error) {
	if len(z)%d != 0 {
		return 0, fmt.Errorf("correct: batch of %d values is not a whole number of rows of D=%d", len(z), d)
	}
	if len(dst) != len(z) {
		return 0, fmt.Errorf("correct: destination has %d values, want %d", len(dst), len(z))
	}
	if len(z) > 0 && overlap(dst, z) {
		return 0, fmt.Errorf("correct: destination and batch overlap in memory")
	}
	return len(z) / d, nil
}

// overlap reports whether two non-empty slices share memory.
func overlap(a, b []float32) bool {
	const size = unsafe.Sizeof(float32(0))
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b))*size && pb < pa+uintptr(len(a))*size
}

// ErrFloat32Range is wrapped by the errors of Float32Matrix and
// Float32MatrixTo when an entry of W is NaN, infinite, or too large in
// magnitude for float32 (above about 3.4e38).
var ErrFloat32Range = errors.New("W does not fit in float32")

// Float32Matrix returns w as a row-major float32 slice, the layout Correct
// takes. See Float32MatrixTo for the errors.
func Float32Matrix(w mat.Matrix) ([]float32, error) {
	r, c := w.Dims()
	return Float32MatrixTo(make([]float32, r*c), w)
}

// Float32MatrixTo stores w row-major in dst, which must have r×c elements,
// and returns dst. It returns an error wrapping ErrFloat32Range, naming the
// first offending entry, if any entry is not finite once converted: a
// float64 entry beyond float32's range becomes ±Inf, and a correction with
// infinite entries would turn every feature into Inf or NaN. Such a W comes
// from statistics on very different scales (merged features far smaller
// than the expert's) with little regularisation, so the message suggests
// rescaling the features or raising β.
func Float32MatrixTo(dst []float32, w mat.Matrix) ([]float32, error) {
	r, c := w.Dims()
	if len(dst) != r*c {
		return nil, fmt.Errorf("float32 matrix: destination has %d elements, want %d", len(dst), r*c)
	}
	if rm, ok := w.(mat.RawMatrixer); ok {
		raw := rm.RawMatrix()
		for i := 0; i < r; i++ {
			row := raw.Data[i*raw.Stride : i*raw.Stride+c]
			out := dst[i*c : i*c+c]
			for j, v := range row {
				out[j] = float32(v)
			}
		}
	} else {
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				dst[i*c+j] = float32(w.At(i, j))
			}
		}
	}
	for k, v := range dst {
		if f := float64(v); math.IsInf(f, 0) || math.IsNaN(f) {
			i, j := k/c, k%c
			return nil, fmt.Errorf("%w: entry [%d][%d] = %g is beyond float32's range of ±%.3g; "+
				"rescale the features to comparable magnitudes, or raise β", ErrFloat32Range, i, j, w.At(i, j), math.MaxFloat32)
		}
	}
	return dst, nil
}
