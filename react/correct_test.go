package react

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/mat"
)

// TestCorrect compares Correct with a float64 matrix-vector product per row.
func TestCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 1))
	// D = 512: W is 1 MiB, so a batch of 7 rows is GEMVs and of 8 one
	// GEMM with OpenBLAS (gemmFor).
	for _, tc := range []struct{ b, d int }{{1, 1}, {1, 7}, {3, 7}, {64, 33}, {5, 128}, {7, 512}, {8, 512}} {
		w := mat.NewDense(tc.d, tc.d, nil)
		for i := 0; i < tc.d; i++ {
			for j := 0; j < tc.d; j++ {
				w.Set(i, j, rng.NormFloat64())
			}
		}
		w32, err := Float32Matrix(w)
		if err != nil {
			t.Fatal(err)
		}
		z := make([]float32, tc.b*tc.d)
		for i := range z {
			z[i] = float32(rng.NormFloat64())
		}
		dst := make([]float32, len(z))
		if err := Correct(dst, z, w32, tc.d); err != nil {
			t.Fatal(err)
		}
		for r := 0; r < tc.b; r++ {
			for i := 0; i < tc.d; i++ {
				want, scale := 0.0, 0.0
				for j := 0; j < tc.d; j++ {
					// Reference in float64 from the float32 inputs.
					x := float64(w32[i*tc.d+j]) * float64(z[r*tc.d+j])
					want += x
					scale += math.Abs(x)
				}
				if got := float64(dst[r*tc.d+i]); math.Abs(got-want) > 1e-6*scale {
					t.Fatalf("B=%d D=%d row %d [%d]: got %v, want %v", tc.b, tc.d, r, i, got, want)
				}
			}
		}
	}
}

// TestGemmFor checks when Correct multiplies a batch with one GEMM: never
// with a backend whose GEMM is not tuned, never for one row, and for a W
// of 1 MiB or more (D ≥ 512) only from 8 rows.
func TestGemmFor(t *testing.T) {
	defer func(old bool) { gemmBatch = old }(gemmBatch)
	for _, tc := range []struct {
		tuned   bool
		rows, d int
		want    bool
	}{
		{false, 64, 768, false},
		{false, 2, 64, false},
		{true, 1, 64, false},
		{true, 1, 768, false},
		{true, 2, 64, true},
		{true, 7, 511, true},
		{true, 2, 512, false}, // W 1 MiB
		{true, 7, 768, false},
		{true, 8, 512, true},
		{true, 8, 768, true},
		{true, 64, 1280, true},
	} {
		gemmBatch = tc.tuned
		if got := gemmFor(tc.rows, tc.d); got != tc.want {
			t.Errorf("tuned GEMM %v, %d rows, D=%d: gemmFor = %v, want %v", tc.tuned, tc.rows, tc.d, got, tc.want)
		}
	}
}

// TestCorrectFollowsGemmFor: Correct multiplies a batch the way gemmFor
// says, which shows in the bits: its rows equal, bit for bit, either one
// GEMM over the batch or one GEMV per row, whose sums run in different
// orders (with OpenBLAS; the pure-Go backend always takes the GEMVs).
func TestCorrectFollowsGemmFor(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 2))
	for _, tc := range []struct{ rows, d int }{{7, 512}, {8, 512}, {4, 256}, {3, 600}} {
		w := make([]float32, tc.d*tc.d)
		z := make([]float32, tc.rows*tc.d)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		for i := range z {
			z[i] = float32(rng.NormFloat64())
		}
		wm := blas32.General{Rows: tc.d, Cols: tc.d, Stride: tc.d, Data: w}
		gemm := make([]float32, len(z))
		blas32.Gemm(blas.NoTrans, blas.Trans, 1, blas32.General{Rows: tc.rows, Cols: tc.d, Stride: tc.d, Data: z}, wm, 0,
			blas32.General{Rows: tc.rows, Cols: tc.d, Stride: tc.d, Data: gemm})
		gemv := make([]float32, len(z))
		for r := 0; r < tc.rows; r++ {
			blas32.Gemv(blas.NoTrans, 1, wm, blas32.Vector{N: tc.d, Inc: 1, Data: z[r*tc.d : (r+1)*tc.d]}, 0,
				blas32.Vector{N: tc.d, Inc: 1, Data: gemv[r*tc.d : (r+1)*tc.d]})
		}
		if slices.Equal(gemm, gemv) {
			t.Fatalf("%d rows, D=%d: the GEMM and the GEMVs agree to the bit; the test cannot tell them apart", tc.rows, tc.d)
		}
		want, path := gemv, "GEMVs"
		if gemmFor(tc.rows, tc.d) {
			want, path = gemm, "one GEMM"
		}
		got := make([]float32, len(z))
		if err := Correct(got, z, w, tc.d); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d rows, D=%d: Correct's rows are not those of %s, which gemmFor picks", tc.rows, tc.d, path)
		}
	}
}

// TestCorrectPaths runs both of Correct's paths (one GEMM for the batch,
// one GEMV per row) on the backend in use, for every batch of 1 to 9 rows
// (gemmMinRows is 8), with W just under and just at gemvMinBytes
// (D = 511, 512), and checks each
// value against a float64 product of the same float32 inputs: within the
// float32 error bound of a dot product of D terms, γ(D+1)·Σ|w z|, and the
// relative row error within TestPrecision's documented 1e-6. z and dst are
// windows of larger buffers: the values around z are NaN (a path that read
// them would spread NaN), those around dst a sentinel that must stay, and
// dst starts as NaN (a path that read it, beta ≠ 0, would keep NaN), as
// the uninitialised output memory the server gives may hold.
func TestCorrectPaths(t *testing.T) {
	defer func(old bool) { gemmBatch = old }(gemmBatch)
	const pad, sentinel = 7, float32(-12345.5)
	nan := float32(math.NaN())
	u := math.Ldexp(1, -24) // float32's unit roundoff
	rng := rand.New(rand.NewPCG(51, 3))
	for _, d := range []int{511, 512} {
		w := make([]float32, d*d)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		gamma := float64(d+1) * u / (1 - float64(d+1)*u)
		for rows := 1; rows <= 9; rows++ {
			n := rows * d
			zbuf, dbuf := make([]float32, n+2*pad), make([]float32, n+2*pad)
			for i := range zbuf {
				zbuf[i], dbuf[i] = nan, sentinel
			}
			z, dst := zbuf[pad:pad+n], dbuf[pad:pad+n]
			for i := range z {
				z[i] = float32(rng.NormFloat64())
			}
			for _, tuned := range []bool{false, true} {
				gemmBatch = tuned
				path := map[bool]string{false: "GEMV per row", true: "GEMM"}[gemmFor(rows, d)]
				for i := range dst {
					dst[i] = nan
				}
				if err := Correct(dst, z, w, d); err != nil {
					t.Fatal(err)
				}
				for i := range dbuf {
					if (i < pad || i >= pad+n) && dbuf[i] != sentinel {
						t.Fatalf("D=%d, %d rows, %s: wrote %v at %d outside dst", d, rows, path, dbuf[i], i-pad)
					}
				}
				for r := 0; r < rows; r++ {
					num, den := 0.0, 0.0
					for i := 0; i < d; i++ {
						want, scale := 0.0, 0.0
						for j := 0; j < d; j++ {
							x := float64(w[i*d+j]) * float64(z[r*d+j])
							want += x
							scale += math.Abs(x)
						}
						got := float64(dst[r*d+i])
						if e := math.Abs(got - want); !(e <= gamma*scale) {
							t.Fatalf("D=%d, %d rows, %s: row %d [%d] = %v, want %v (error %.3g over the bound %.3g)",
								d, rows, path, r, i, got, want, e, gamma*scale)
						}
						num += (got - want) * (got - want)
						den += want * want
					}
					if e := math.Sqrt(num / den); e > 1e-6 {
						t.Errorf("D=%d, %d rows, %s: row %d relative error %.3g, want ≤ 1e-6", d, rows, path, r, e)
					}
				}
			}
		}
	}
}

func TestCorrectErrors(t *testing.T) {
	w := make([]float32, 9)
	z := make([]float32, 6)
	for _, tc := range []struct {
		name      string
		dst, z, w []float32
		d         int
		want      string
	}{
		{"bad d", make([]float32, 6), z, w, 0, "invalid feature dimension"},
		{"bad W", make([]float32, 6), z, w[:8], 3, "W has 8 values"},
		{"partial row", make([]float32, 5), z[:5], w, 3, "not a whole number of rows"},
		{"short dst", make([]float32, 3), z, w, 3, "destination has 3 values"},
		{"aliased", z, z, w, 3, "overlap"},
		{"overlapping", z[2:5], z[:3], w, 3, "overlap"},
		{"overlapping other way", z[:3], z[2:5], w, 3, "overlap"},
	} {
		if err := Correct(tc.dst, tc.z, tc.w, tc.d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	// Adjacent but disjoint parts of one array are fine.
	if err := Correct(z[3:6], z[:3], w, 3); err != nil {
		t.Errorf("disjoint slices: %v", err)
	}
	if err := Correct(nil, nil, w, 3); err != nil {
		t.Errorf("empty batch: %v", err)
	}
}

// TestCorrectAllocs: Correct allocates nothing, on either backend; with
// the pure-Go one that takes keeping off gonum's Sgemm, which fans a batch
// this large out to goroutines.
func TestCorrectAllocs(t *testing.T) {
	for _, tc := range []struct{ b, d int }{{1, 64}, {8, 64}, {256, 256}} {
		w := make([]float32, tc.d*tc.d)
		z, dst := make([]float32, tc.b*tc.d), make([]float32, tc.b*tc.d)
		if n := testing.AllocsPerRun(5, func() { _ = Correct(dst, z, w, tc.d) }); n != 0 {
			t.Errorf("B=%d D=%d: Correct allocates %v times per call", tc.b, tc.d, n)
		}
	}
}

func TestFloat32Matrix(t *testing.T) {
	w := mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6.5})
	got, err := Float32Matrix(w)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 2, 3, 4, 5, 6.5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Float32Matrix = %v, want %v", got, want)
		}
	}
	// A view with a stride, and a non-raw matrix (a transpose).
	v := mat.NewDense(3, 3, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}).Slice(1, 3, 0, 2)
	if got, err := Float32Matrix(v); err != nil || got[0] != 4 || got[1] != 5 || got[2] != 7 || got[3] != 8 {
		t.Errorf("Float32Matrix(view) = %v, %v", got, err)
	}
	if got, err := Float32Matrix(w.T()); err != nil || got[1] != 4 || got[2] != 2 {
		t.Errorf("Float32Matrix(transpose) = %v, %v", got, err)
	}
	if _, err := Float32MatrixTo(make([]float32, 5), w); err == nil {
		t.Error("Float32MatrixTo(short destination) succeeded")
	}
}

func TestFloat32MatrixRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    float64
		want string // "" for success
	}{
		{"largest float32", math.MaxFloat32, ""},
		{"tiny", 1e-50, ""},
		{"above float32", 1e39, "entry [1][0] = 1e+39 is beyond float32's range"},
		{"below -float32", -1e300, "entry [1][0] = -1e+300 is beyond"},
		{"+Inf", math.Inf(1), "entry [1][0] = +Inf"},
		{"NaN", math.NaN(), "entry [1][0] = NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mat.NewDense(2, 2, []float64{1, 2, tc.v, 4})
			for _, m := range []mat.Matrix{w, w.T().T()} {
				_, err := Float32Matrix(m)
				if tc.want == "" {
					if err != nil {
						t.Errorf("Float32Matrix: %v", err)
					}
					continue
				}
				if !errors.Is(err, ErrFloat32Range) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "raise β") {
					t.Errorf("Float32Matrix = %v, want ErrFloat32Range containing %q and advice", err, tc.want)
				}
			}
		})
	}
}
