//go:build cuda

package cuda

import (
	"math"
	"testing"
)

// TestDsymvReadsLowerTriangle: Dsymv uses only the lower triangle
// (column-major) of its matrix: the upper one holds NaN here, and the
// product must equal the host's from the lower triangle mirrored.
func TestDsymvReadsLowerTriangle(t *testing.T) {
	d := openOrSkip(t)
	const n = 7
	a := make([]float64, n*n) // column-major
	x := make([]float64, n)
	for j := range n {
		x[j] = float64(j) - 2.5
		for i := range n {
			if i >= j {
				a[j*n+i] = 1 + float64(i*n+j)/10
			} else {
				a[j*n+i] = math.NaN()
			}
		}
	}
	lower := func(i, j int) float64 {
		if i < j {
			i, j = j, i
		}
		return a[j*n+i]
	}
	got := make([]float64, n)
	var pa, px, py Ptr
	err := d.Do(func() error {
		var err error
		if pa, err = d.Alloc(8 * n * n); err != nil {
			return err
		}
		if px, err = d.Alloc(8 * n); err != nil {
			return err
		}
		if py, err = d.Alloc(8 * n); err != nil {
			return err
		}
		if err := d.Upload64(pa, a); err != nil {
			return err
		}
		if err := d.Upload64(px, x); err != nil {
			return err
		}
		if err := d.Zero(py, 8*n); err != nil {
			return err
		}
		if err := d.Dsymv(n, 1, pa, n, px, 0, py); err != nil {
			return err
		}
		return d.Download64(got, py)
	})
	defer func() { d.Free(pa); d.Free(px); d.Free(py) }()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		want := 0.0
		for j := range n {
			want += lower(i, j) * x[j]
		}
		if !(math.Abs(got[i]-want) <= 1e-12*math.Abs(want)+1e-12) {
			t.Errorf("y[%d] = %v, want %v", i, got[i], want)
		}
	}
}
