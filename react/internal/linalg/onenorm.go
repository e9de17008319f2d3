package linalg

import "math"

// EstimateOneNorm estimates the 1-norm of a symmetric n×n matrix M that is
// known only through products: apply(y, x) stores M x in y. It is Hager's
// method as refined by Higham (LAPACK's dlacn2, which Dpocon uses for
// C_p⁻¹), for a symmetric M, so that Mᵀ = M needs no second operator: at
// most five power-like steps on the sign vectors and one extra probe. The
// estimate never exceeds ‖M‖₁ and is usually within a small factor of it.
// The device solver uses it for both ‖C_p‖₁ and ‖C_p⁻¹‖₁, whose product is
// the condition estimate checked against react.MaxCondition.
//
// x, y and sign are scratch of n values each.
func EstimateOneNorm(n int, apply func(y, x []float64) error, x, y, sign []float64) (float64, error) {
	const maxSteps = 5
	x, y, sign = x[:n], y[:n], sign[:n]
	for i := range x {
		x[i] = 1 / float64(n)
	}
	est := 0.0
	for step := 0; step < maxSteps; step++ {
		if err := apply(y, x); err != nil {
			return 0, err
		}
		norm := oneNormVec(y)
		if step > 0 && norm <= est {
			break // no progress: the last estimate stands
		}
		est = norm
		same := step > 0
		for i, v := range y {
			s := 1.0
			if v < 0 {
				s = -1
			}
			if s != sign[i] {
				same = false
			}
			sign[i] = s
		}
		if same {
			break // the sign vector repeats: converged
		}
		// z = Mᵀ sign = M sign, into y; the next probe is e_j at its
		// largest entry, unless that cannot beat zᵀx.
		if err := apply(y, sign); err != nil {
			return 0, err
		}
		j, zj, ztx := 0, 0.0, 0.0
		for i, v := range y {
			ztx += v * x[i]
			if a := math.Abs(v); a > zj {
				j, zj = i, a
			}
		}
		if step > 0 && zj <= ztx {
			break
		}
		clear(x)
		x[j] = 1
	}
	// Higham's extra probe, for the matrices that fool the steps above.
	for i := range x {
		x[i] = 1 + float64(i)/float64(max(n-1, 1))
		if i%2 == 1 {
			x[i] = -x[i]
		}
	}
	if err := apply(y, x); err != nil {
		return 0, err
	}
	if alt := 2 * oneNormVec(y) / float64(3*n); alt > est || math.IsNaN(alt) {
		est = alt
	}
	return est, nil
}

// oneNormVec returns Σ|v_i|, or NaN if a value is NaN.
func oneNormVec(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += math.Abs(x)
	}
	return s
}

// OneNormUpper returns the 1-norm (the largest column sum of absolute
// values) of the symmetric matrix whose upper triangle is in c (D×D, stride
// D), using col (at least D long) as scratch: what LAPACK's Dlansy computes,
// in one pass over the triangle.
func OneNormUpper(c []float64, d int, col []float64) float64 {
	col = col[:d]
	clear(col)
	AddColumnSums(col, c, d, 0, d)
	return MaxNorm(col)
}

// AddColumnSums adds to col the absolute values of rows i0..i1 of the upper
// triangle in c, each entry to its column and, off the diagonal, to its
// mirror's: the column sums of the symmetric matrix, a block at a time.
func AddColumnSums(col, c []float64, d, i0, i1 int) {
	if i0 == 0 {
		clear(col[:d])
	}
	for i := i0; i < i1; i++ {
		row := c[i*d : i*d+d]
		col[i] += math.Abs(row[i])
		for j := i + 1; j < d; j++ {
			v := math.Abs(row[j])
			col[j] += v
			col[i] += v
		}
	}
}

// MaxNorm returns the largest of col, or NaN if one is NaN.
func MaxNorm(col []float64) float64 {
	norm := 0.0
	for _, v := range col {
		if v > norm || math.IsNaN(v) {
			norm = v
		}
	}
	return norm
}
