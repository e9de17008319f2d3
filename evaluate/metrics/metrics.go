package metrics

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// NormalizedAccuracy returns a_t = acc_t / expert_t, each task's accuracy
// relative to its expert's (paper, appendix A.3). The accuracies must be
// finite and ≥ 0 and the expert accuracies finite and > 0.
func NormalizedAccuracy(acc, expert []float64) ([]float64, error) {
	if len(acc) != len(expert) {
		return nil, fmt.Errorf("normalized accuracy: %d accuracies but %d expert accuracies", len(acc), len(expert))
	}
	a := make([]float64, len(acc))
	for t := range acc {
		if v := acc[t]; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("normalized accuracy: task %d: accuracy %v: want a finite number ≥ 0", t, v)
		}
		if v := expert[t]; math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return nil, fmt.Errorf("normalized accuracy: task %d: expert accuracy %v: want a finite number > 0", t, v)
		}
		a[t] = acc[t] / expert[t]
	}
	return a, nil
}

// Hypervolume returns the exact hypervolume of points with respect to the
// reference point ref, for maximisation: the Lebesgue measure of the union
// of the boxes {z : ref ≤ z ≤ a} over the points a (paper, appendix A.3,
// with ref the origin). A point with any coordinate at or below ref's spans
// no volume and is ignored. All points must have len(ref) finite
// coordinates; an empty set has volume 0.
//
// It drops dominated points and then runs the WFG algorithm (While, Bradstreet
// and Barone, 2012): the volume is the sum of the exclusive contributions of
// the points taken in increasing order of their last coordinate, each being
// its own box minus the hypervolume of the later points limited to that box,
// computed recursively in one dimension fewer; two dimensions are solved by a
// sweep. 100 points in 8 dimensions take tens of milliseconds.
func Hypervolume(points [][]float64, ref []float64) (float64, error) {
	d := len(ref)
	if d == 0 {
		return 0, errors.New("hypervolume: empty reference point")
	}
	for k, r := range ref {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return 0, fmt.Errorf("hypervolume: reference point coordinate %d is %v: want a finite number", k, r)
		}
	}
	// Shift to the reference point and drop points that do not dominate it.
	pts := make([][]float64, 0, len(points))
	for i, p := range points {
		if len(p) != d {
			return 0, fmt.Errorf("hypervolume: point %d has %d coordinates, want %d", i, len(p), d)
		}
		q := make([]float64, d)
		inside := true
		for k, v := range p {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("hypervolume: point %d coordinate %d is %v: want a finite number", i, k, v)
			}
			q[k] = v - ref[k]
			if !(q[k] > 0) {
				inside = false
			}
		}
		if inside {
			pts = append(pts, q)
		}
	}
	h := newHVScratch(len(pts), d)
	kept := nondominated(make([][]float64, 0, len(pts)), pts, make([]keyedPoint, 0, len(pts)))
	return h.wfg(kept), nil
}

// dominates reports whether a weakly dominates b: a ≥ b in every coordinate.
func dominates(a, b []float64) bool {
	for k := range a {
		if a[k] < b[k] {
			return false
		}
	}
	return true
}

// hvScratch holds the buffers of one hypervolume computation, one set per
// dimension: the recursion goes down one dimension per level, and sibling
// calls at a level run one after the other, so they can share buffers.
type hvScratch struct {
	levels []hvLevel // indexed by dimension
}

type hvLevel struct {
	buf     []float64   // the limited points' coordinates
	limited [][]float64 // the limited points
	keys    []keyedPoint
	kept    [][]float64 // their non-dominated subset
}

type keyedPoint struct {
	p   []float64
	sum float64
}

func newHVScratch(n, d int) *hvScratch {
	h := &hvScratch{levels: make([]hvLevel, d+1)}
	for k := 3; k <= d; k++ {
		h.levels[k] = hvLevel{
			buf:     make([]float64, n*(k-1)),
			limited: make([][]float64, 0, n),
			keys:    make([]keyedPoint, 0, n),
			kept:    make([][]float64, 0, n),
		}
	}
	return h
}

// nondominated appends to kept the points of pts that no other point weakly
// dominates, keeping one of a set of equal points, and returns it. keys is
// scratch of capacity len(pts).
//
// Points are visited in decreasing order of their coordinate sum, so a point
// can only be dominated by one visited before it, and it is compared only
// with the points kept so far. (Should rounding tie the sums of a point and
// one that strictly dominates it, both may be kept; that is harmless, as the
// volume computation does not rely on non-domination.)
func nondominated(kept, pts [][]float64, keys []keyedPoint) [][]float64 {
	keys = keys[:0]
	for _, p := range pts {
		s := 0.0
		for _, x := range p {
			s += x
		}
		keys = append(keys, keyedPoint{p, s})
	}
	slices.SortFunc(keys, func(a, b keyedPoint) int { return cmp.Compare(b.sum, a.sum) })
	for _, k := range keys {
		dominated := false
		for _, q := range kept {
			if dominates(q, k.p) {
				dominated = true
				break
			}
		}
		if !dominated {
			kept = append(kept, k.p)
		}
	}
	return kept
}

// wfg returns the hypervolume of points whose boxes are anchored at the
// origin. All points have the same dimension d ≥ 1; wfg reorders pts.
//
// The points are sorted by increasing last coordinate. The box of point k
// then meets the box of every later point j in a box whose last extent is
// p_k's own, so the volume that p_k dominates and no later point does is
//
//	p_k[d−1] · (vol(p_k') − HV(nondominated({min(p_k', q_j') : j > k}))),
//
// where ' drops the last coordinate. Summed over k this is the union's
// volume, and each recursion has one dimension fewer. Two dimensions are
// solved by a sweep.
func (h *hvScratch) wfg(pts [][]float64) float64 {
	switch {
	case len(pts) == 0:
		return 0
	case len(pts) == 1:
		return boxVolume(pts[0])
	case len(pts[0]) == 1:
		m := 0.0
		for _, p := range pts {
			m = math.Max(m, p[0])
		}
		return m
	case len(pts[0]) == 2:
		return sweep2D(pts)
	}
	d := len(pts[0])
	last := d - 1
	lv := &h.levels[d]
	slices.SortFunc(pts, func(a, b []float64) int { return cmp.Compare(a[last], b[last]) })
	v := 0.0
	for k, p := range pts {
		limited := lv.limited[:0]
		for j, q := range pts[k+1:] {
			l := lv.buf[j*last : (j+1)*last]
			for i := range l {
				l[i] = math.Min(p[i], q[i])
			}
			limited = append(limited, l)
		}
		kept := nondominated(lv.kept[:0], limited, lv.keys)
		v += p[last] * (boxVolume(p[:last]) - h.wfg(kept))
	}
	return v
}

func boxVolume(p []float64) float64 {
	v := 1.0
	for _, x := range p {
		v *= x
	}
	return v
}

// sweep2D returns the area dominated by 2-D points anchored at the origin.
// It reorders pts.
func sweep2D(pts [][]float64) float64 {
	slices.SortFunc(pts, func(a, b []float64) int { return cmp.Compare(b[0], a[0]) })
	area, top := 0.0, 0.0
	for _, p := range pts {
		if p[1] > top {
			area += p[0] * (p[1] - top)
			top = p[1]
		}
	}
	return area
}

// Uniformity returns U = 1 − KL(ŝ ‖ u), how well the normalised accuracies a
// follow the preference p (paper, appendix A.3). With the shortfalls
// s_t = 1 − a_t, ŝ_t = p_t s_t / Σ_i p_i s_i and u the uniform distribution
// over the T tasks,
//
//	U = 1 − Σ_t ŝ_t log(T ŝ_t),
//
// with the natural logarithm and 0·log 0 = 0. U = 1 when p_t s_t is the same
// for every task, and U ≥ 1 − log T.
//
// Edge cases, which the paper leaves open:
//   - a task that matches or beats its expert (a_t ≥ 1) has no shortfall:
//     s_t is clamped to 0, so that ŝ is a distribution;
//   - if every weighted shortfall p_t s_t is 0, every task that the
//     preference cares about matches its expert, which is perfect alignment:
//     U = 1.
//
// p must be finite, ≥ 0, with a positive sum (it need not be normalised),
// and a finite, with len(a) = len(p) ≥ 1.
func Uniformity(a, p []float64) (float64, error) {
	if len(a) != len(p) {
		return 0, fmt.Errorf("uniformity: %d normalized accuracies but %d preference weights", len(a), len(p))
	}
	if len(a) == 0 {
		return 0, errors.New("uniformity: no tasks")
	}
	psum := 0.0
	for t := range a {
		if v := a[t]; math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("uniformity: task %d: normalized accuracy %v: want a finite number", t, v)
		}
		if v := p[t]; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("uniformity: task %d: preference weight %v: want a finite number ≥ 0", t, v)
		}
		psum += p[t]
	}
	if !(psum > 0) {
		return 0, errors.New("uniformity: preference weights sum to 0")
	}
	ws := make([]float64, len(a))
	total := 0.0
	for t := range a {
		ws[t] = p[t] / psum * math.Max(0, 1-a[t])
		total += ws[t]
	}
	if total == 0 {
		return 1, nil
	}
	T := float64(len(a))
	kl := 0.0
	for _, w := range ws {
		if s := w / total; s > 0 {
			kl += s * math.Log(T*s)
		}
	}
	return 1 - kl, nil
}
