package images

import "math"

// resize resizes a row-major plane of w×h values to ow×oh with a bilinear
// (triangle) filter whose support widens with the downscaling factor, as
// Pillow's Image.resize(BILINEAR) does, in float64: horizontally, then
// vertically.
func resize(plane []float64, w, h, ow, oh int) []float64 {
	tmp := make([]float64, ow*h)
	kx := coefficients(w, ow)
	for y := range h {
		row := plane[y*w : (y+1)*w]
		for x, k := range kx {
			var s float64
			for i, c := range k.weights {
				s += c * row[k.first+i]
			}
			tmp[y*ow+x] = s
		}
	}
	out := make([]float64, ow*oh)
	for y, k := range coefficients(h, oh) {
		for x := range ow {
			var s float64
			for i, c := range k.weights {
				s += c * tmp[(k.first+i)*ow+x]
			}
			out[y*ow+x] = s
		}
	}
	return out
}

// kernel is the weights of one output pixel over the input pixels from
// first on.
type kernel struct {
	first   int
	weights []float64
}

// coefficients returns the kernel of each of out output pixels over in
// input pixels: the triangle filter 1 − |x| centred on the output pixel's
// centre in input coordinates, stretched by the scale when downscaling,
// normalised to sum to 1 (Pillow's precompute_coeffs).
func coefficients(in, out int) []kernel {
	scale := float64(in) / float64(out)
	filterScale := max(scale, 1)
	support := filterScale // the triangle's support is 1
	ks := make([]kernel, out)
	for i := range out {
		center := (float64(i) + 0.5) * scale
		first := max(int(center-support+0.5), 0) // int truncates, as in C
		last := min(int(center+support+0.5), in)
		k := kernel{first: first, weights: make([]float64, max(last-first, 0))}
		var sum float64
		for j := range k.weights {
			wt := 1 - math.Abs((float64(first+j)-center+0.5)/filterScale)
			wt = max(wt, 0)
			k.weights[j] = wt
			sum += wt
		}
		if sum != 0 {
			for j := range k.weights {
				k.weights[j] /= sum
			}
		}
		ks[i] = k
	}
	return ks
}
