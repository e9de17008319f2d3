package evaluate

import (
	"slices"

	"github.com/mergectl/react-triton/evaluate/metrics"
)

// summarize computes, for every model and preference set, the set's
// hypervolume and mean uniformity (Summary).
func (e *evaluation) summarize() {
	type key struct {
		backbone, method, norm, set string
		beta                        float64
	}
	groups := map[key][]Row{}
	var order []key
	merged := map[string]Row{}
	for _, r := range e.res.Rows {
		switch r.Method {
		case MethodIndividual:
			continue
		case MethodMerged:
			merged[r.Backbone] = r
			continue
		}
		k := key{r.Backbone, r.Method, r.Norm, r.Set, *r.Beta}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	sets := map[string]*Set{}
	for i := range e.cfg.Sets {
		sets[e.cfg.Sets[i].Name] = &e.cfg.Sets[i]
	}
	// The uncorrected backbone answers every preference alike.
	for _, b := range e.cfg.Backbones {
		m, ok := merged[b.Label]
		if !ok {
			continue
		}
		for _, s := range e.cfg.Sets {
			rows := make([]Row, len(s.Points))
			for k, pt := range s.Points {
				rows[k] = m
				rows[k].Preference = pt.P.Weights()
			}
			e.res.Summaries = append(e.res.Summaries, e.summary(b.Label, MethodMerged, nil, "", &s, rows, nil))
		}
	}
	for _, k := range order {
		rows := groups[k]
		beta := k.beta
		m, ok := merged[k.backbone]
		var ref *Row
		if ok {
			ref = &m
		}
		e.res.Summaries = append(e.res.Summaries, e.summary(k.backbone, k.method, &beta, k.norm, sets[k.set], rows, ref))
	}
}

// summary computes one Summary over rows, the points of set s.
func (e *evaluation) summary(backbone, method string, beta *float64, norm string, s *Set, rows []Row, merged *Row) Summary {
	focus := make([]int, len(s.Focus))
	for i, t := range s.Focus {
		focus[i] = slices.Index(e.tasks, t)
	}
	sum := Summary{Backbone: backbone, Method: method, Beta: beta, Norm: norm, Set: s.Name, Focus: s.Focus, Points: len(rows)}
	var ptsK, ptsT [][]float64
	var uk, ut []float64
	for _, r := range rows {
		ptsT = append(ptsT, r.Normalized)
		ak, pk := pick(r.Normalized, focus), pick(r.Preference, focus)
		ptsK = append(ptsK, ak)
		if weighs(pk) >= 2 {
			if u, err := metrics.Uniformity(ak, pk); err == nil {
				uk = append(uk, u)
			}
		}
		if weighs(r.Preference) >= 2 {
			if u, err := metrics.Uniformity(r.Normalized, r.Preference); err == nil {
				ut = append(ut, u)
			}
		}
		if merged != nil && r.Weighted != nil {
			mw := 0.0
			for i, p := range r.Preference {
				mw += p * merged.Accuracy[i]
			}
			if *r.Weighted > mw {
				sum.Beats++
			}
		}
	}
	// Errors cannot happen: the points are finite and of one dimension.
	sum.HVk, _ = metrics.Hypervolume(ptsK, make([]float64, len(focus)))
	sum.HVT, _ = metrics.Hypervolume(ptsT, make([]float64, len(e.tasks)))
	sum.Uk, sum.UT = mean(uk), mean(ut)
	return sum
}

func pick(v []float64, idx []int) []float64 {
	out := make([]float64, len(idx))
	for i, k := range idx {
		out[i] = v[k]
	}
	return out
}

// weighs counts the positive weights.
func weighs(p []float64) int {
	n := 0
	for _, w := range p {
		if w > 0 {
			n++
		}
	}
	return n
}

func mean(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	s /= float64(len(v))
	return &s
}

// LabelOwnOneHot labels the row that takes, for each task, its accuracy at
// its own one-hot preference.
const LabelOwnOneHot = "one-hot, each task at its own"

// addOwnOneHot appends, for every model evaluated on a one-hot set, the row
// of each task's accuracy at its own one-hot preference.
func (e *evaluation) addOwnOneHot() {
	var extra []Row
	for i, r := range e.res.Rows {
		if r.Set != "one-hot" || r.SetPosition != 0 {
			continue
		}
		own := Row{Backbone: r.Backbone, Method: r.Method, Beta: r.Beta, Norm: r.Norm, Set: r.Set, Label: LabelOwnOneHot}
		acc := make([]float64, len(e.tasks))
		n := 0
		for _, q := range e.res.Rows[i:] {
			if q.Backbone == r.Backbone && q.Method == r.Method && q.Set == r.Set && q.Norm == r.Norm && *q.Beta == *r.Beta &&
				q.SetPosition < len(acc) && q.Preference[q.SetPosition] == 1 {
				acc[q.SetPosition] = q.Accuracy[q.SetPosition]
				n++
			}
		}
		if n == len(acc) {
			own.Accuracy = acc
			extra = append(extra, own)
		}
	}
	for _, r := range extra {
		e.addRow(r, r.Accuracy)
	}
}
