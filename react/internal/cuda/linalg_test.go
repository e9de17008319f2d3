//go:build cuda

package cuda

import (
	"fmt"
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

// TestDcholsolve: with the factor of Dpotrf (its other triangle NaN), the
// two triangular solves give x with A·x = b, checked on the host.
func TestDcholsolve(t *testing.T) {
	d := openOrSkip(t)
	const n = 9
	a := make([]float64, n*n) // column-major, symmetric positive definite
	for i := range n {
		for j := range n {
			a[j*n+i] = 1 / float64(1+i+j)
		}
		a[i*n+i] += 2
	}
	b := make([]float64, n)
	for i := range b {
		b[i] = float64(i%4) - 1.5
	}
	factor := make([]float64, n*n)
	x := make([]float64, n)
	var pa, pb, work, info Ptr
	defer func() { d.Free(pa); d.Free(pb); d.Free(work); d.Free(info) }()
	err := d.Do(func() error {
		var err error
		if pa, err = d.Alloc(8 * n * n); err != nil {
			return err
		}
		if pb, err = d.Alloc(8 * n); err != nil {
			return err
		}
		if info, err = d.Alloc(4); err != nil {
			return err
		}
		lwork, err := d.DpotrfWork(n, pa)
		if err != nil {
			return err
		}
		if work, err = d.Alloc(8 * max(lwork, 1)); err != nil {
			return err
		}
		if err := d.Upload64(pa, a); err != nil {
			return err
		}
		if err := d.Dpotrf(n, pa, work, lwork, info); err != nil {
			return err
		}
		if v, err := d.DownloadInt32(info); err != nil || v != 0 {
			return fmt.Errorf("Dpotrf: devInfo %d, %v", v, err)
		}
		if err := d.Download64(factor, pa); err != nil {
			return err
		}
		return d.Sync()
	})
	if err != nil {
		t.Fatal(err)
	}
	for j := range n {
		for i := range j {
			factor[j*n+i] = math.NaN() // above the diagonal: not to be read
		}
	}
	err = d.Do(func() error {
		if err := d.Upload64(pa, factor); err != nil {
			return err
		}
		if err := d.Upload64(pb, b); err != nil {
			return err
		}
		if err := d.Dcholsolve(n, pa, pb); err != nil {
			return err
		}
		return d.Download64(x, pb)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := -b[i]
		for j := range n {
			r += a[j*n+i] * x[j]
		}
		if !(math.Abs(r) <= 1e-12) {
			t.Errorf("(A·x - b)[%d] = %g", i, r)
		}
	}
}

// TestDgemvN: y = A x for an m×n A with lda > m (the rows between m and
// lda NaN, never read) and y full of NaN beforehand (beta 0 does not read
// it), against the product on the host.
func TestDgemvN(t *testing.T) {
	d := openOrSkip(t)
	const m, n, lda = 9, 4, 11
	a := make([]float64, lda*n) // column-major
	x := make([]float64, n)
	for j := range n {
		x[j] = 0.5*float64(j) - 1
		for i := range lda {
			if i < m {
				a[j*lda+i] = float64(i) - float64(j*j)/3
			} else {
				a[j*lda+i] = math.NaN()
			}
		}
	}
	nan := make([]float64, m)
	for i := range nan {
		nan[i] = math.NaN()
	}
	got := make([]float64, m)
	var pa, px, py Ptr
	err := d.Do(func() error {
		var err error
		if pa, err = d.Alloc(8 * lda * n); err != nil {
			return err
		}
		if px, err = d.Alloc(8 * n); err != nil {
			return err
		}
		if py, err = d.Alloc(8 * m); err != nil {
			return err
		}
		for _, c := range []struct {
			p Ptr
			v []float64
		}{{pa, a}, {px, x}, {py, nan}} {
			if err := d.Upload64(c.p, c.v); err != nil {
				return err
			}
		}
		if err := d.DgemvN(m, n, 1, pa, lda, px, 0, py); err != nil {
			return err
		}
		return d.Download64(got, py)
	})
	defer func() { d.Free(pa); d.Free(px); d.Free(py) }()
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		want := 0.0
		for j := range n {
			want += a[j*lda+i] * x[j]
		}
		if !(math.Abs(got[i]-want) <= 1e-12*math.Abs(want)+1e-12) {
			t.Errorf("y[%d] = %v, want %v", i, got[i], want)
		}
	}
}
