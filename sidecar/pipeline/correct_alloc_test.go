package pipeline

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/triton"
)

// correctionCase is a model's correction step on a batch: the feature, W
// and the model (only its heads' input datatypes matter).
func correctionCase(d, rows int, featureType, headType string) (*Model, feature, *control.Matrix) {
	w := make([]float32, d*d)
	for i := range w {
		w[i] = float32(i%7)*0.01 - 0.03
	}
	z := make([]float32, rows*d)
	for i := range z {
		z[i] = float32(i%11)*0.1 - 0.5
	}
	raw, _ := triton.EncodeFloat32(nil, featureType, z)
	m := &Model{name: "bench", heads: []head{{inputType: headType}}}
	return m, feature{datatype: featureType, shape: []int64{int64(rows), int64(d)}, raw: raw},
		&control.Matrix{Key: "a=1", D: d, W: w}
}

// TestCorrectionDoesNotAllocate: in steady state (pooled buffers warm), the
// correction of a request's batch (decoding the feature, applying W_p,
// encoding it for the head) allocates nothing, in every datatype pair.
func TestCorrectionDoesNotAllocate(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	for _, dts := range [][2]string{{triton.FP32, triton.FP32}, {triton.FP16, triton.FP32}, {triton.BF16, triton.FP16}} {
		m, f, w := correctionCase(64, 32, dts[0], dts[1])
		run := func() {
			b := getBuffers()
			if _, err := m.correct(b, f, w); err != nil {
				t.Fatal(err)
			}
			putBuffers(b)
		}
		run() // warm the pool
		if n := testing.AllocsPerRun(100, run); n != 0 {
			t.Errorf("%s feature, %s head: %v allocations per correction, want 0", dts[0], dts[1], n)
		}
	}
}

// TestCorrectionEncodesTheProduct: the bytes sent to the head are W z per
// row, in the head's datatype, computed here in float64.
func TestCorrectionEncodesTheProduct(t *testing.T) {
	const d, rows = 5, 3
	m, f, w := correctionCase(d, rows, triton.FP32, triton.FP32)
	b := getBuffers()
	defer putBuffers(b)
	enc, err := m.correct(b, f, w)
	if err != nil {
		t.Fatal(err)
	}
	out := enc.of(triton.FP32)
	if len(out) != rows*d*4 {
		t.Fatalf("%d bytes, want %d", len(out), rows*d*4)
	}
	for r := 0; r < rows; r++ {
		for i := 0; i < d; i++ {
			want := 0.0
			for j := 0; j < d; j++ {
				z := math.Float32frombits(binary.LittleEndian.Uint32(f.raw[4*(r*d+j):]))
				want += float64(w.W[i*d+j]) * float64(z)
			}
			got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*(r*d+i):]))
			if math.Abs(float64(got)-want) > 1e-5 {
				t.Errorf("row %d, [%d] = %v, want %v", r, i, got, want)
			}
		}
	}
}

// BenchmarkCorrection measures the sidecar's own work on a request: the
// feature decoded, corrected and encoded for the head, at the zoo's D=64
// and the synthetic D=768.
func BenchmarkCorrection(b *testing.B) {
	for _, d := range []int{64, 768} {
		for _, rows := range []int{1, 64, 256} {
			m, f, w := correctionCase(d, rows, triton.FP32, triton.FP32)
			b.Run(fmt.Sprintf("D=%d/B=%d", d, rows), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					buf := getBuffers()
					if _, err := m.correct(buf, f, w); err != nil {
						b.Fatal(err)
					}
					putBuffers(buf)
				}
			})
		}
	}
}
