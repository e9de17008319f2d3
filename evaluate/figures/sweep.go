package figures

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/mergectl/react-triton/evaluate"
)

// The rows a sweep plots: the mean normalised accuracy at equal preference
// and with each task at its own one-hot preference.
var sweepRows = []struct{ set, label, name string }{
	{"equal", "equal", "equal"},
	{"one-hot", evaluate.LabelOwnOneHot, "one-hot, own"},
}

// betaCurves returns, per backbone label, normalisation and sweep row, the
// mean normalised accuracy (%) against β; only backbones evaluated at two
// or more β take part.
func betaCurves(res *evaluate.Result) []curve {
	type key struct{ backbone, norm, row string }
	var order []key
	pts := map[key]plotter.XYs{}
	betas := map[string]map[float64]bool{}
	for _, r := range res.Rows {
		if r.Method != evaluate.AggReACT || r.Beta == nil {
			continue
		}
		if betas[r.Backbone] == nil {
			betas[r.Backbone] = map[float64]bool{}
		}
		betas[r.Backbone][*r.Beta] = true
		for _, s := range sweepRows {
			if r.Set == s.set && r.Label == s.label {
				k := key{r.Backbone, r.Norm, s.name}
				if _, ok := pts[k]; !ok {
					order = append(order, k)
				}
				pts[k] = append(pts[k], plotter.XY{X: *r.Beta, Y: 100 * r.NormMean})
			}
		}
	}
	var out []curve
	for _, k := range order {
		if len(betas[k.backbone]) < 2 {
			continue
		}
		xy := pts[k]
		slices.SortFunc(xy, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		out = append(out, curve{name: fmt.Sprintf("%s %s, %s", k.backbone, k.norm, k.row), backbone: k.backbone, xy: xy})
	}
	return out
}

// betaFigure draws accuracy against β.
func betaFigure(res *evaluate.Result) (figure, bool) {
	curves := betaCurves(res)
	if len(curves) == 0 {
		return figure{}, false
	}
	p := sweepPlot("Accuracy against β", "β (log scale)", curves, uncorrectedLines(res, curves))
	return figure{name: "beta.png", plots: [][]*plot.Plot{{p}}, width: 5.5 * vg.Inch, height: 4 * vg.Inch}, true
}

// fractionCurves returns, per backbone model, options and sweep row, the
// mean normalised accuracy (%) against the number of calibration samples;
// only models with two or more sizes take part.
func fractionCurves(res *evaluate.Result) []curve {
	info := map[string]evaluate.BackboneInfo{}
	sizes := map[string]map[int64]bool{}
	for _, b := range res.Backbones {
		info[b.Label] = b
		if sizes[b.Model] == nil {
			sizes[b.Model] = map[int64]bool{}
		}
		sizes[b.Model][b.Samples] = true
	}
	type key struct {
		model, norm, row string
		beta             float64
	}
	var order []key
	pts := map[key]plotter.XYs{}
	for _, r := range res.Rows {
		b, ok := info[r.Backbone]
		if r.Method != evaluate.AggReACT || r.Beta == nil || !ok || len(sizes[b.Model]) < 2 {
			continue
		}
		for _, s := range sweepRows {
			if r.Set == s.set && r.Label == s.label {
				k := key{b.Model, r.Norm, s.name, *r.Beta}
				if _, ok := pts[k]; !ok {
					order = append(order, k)
				}
				pts[k] = append(pts[k], plotter.XY{X: float64(b.Samples), Y: 100 * r.NormMean})
			}
		}
	}
	var out []curve
	for _, k := range order {
		xy := pts[k]
		slices.SortFunc(xy, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		out = append(out, curve{name: fmt.Sprintf("%s β=%g %s, %s", k.model, k.beta, k.norm, k.row), xy: xy})
	}
	return out
}

// fractionFigure draws accuracy against the calibration data's size.
func fractionFigure(res *evaluate.Result) (figure, bool) {
	curves := fractionCurves(res)
	if len(curves) == 0 {
		return figure{}, false
	}
	p := sweepPlot("Accuracy against calibration data", "calibration samples, all tasks (log scale)", curves, nil)
	return figure{name: "fraction.png", plots: [][]*plot.Plot{{p}}, width: 5.5 * vg.Inch, height: 4 * vg.Inch}, true
}

// uncorrectedLines returns a flat line, over the curves' x range, at the
// uncorrected mean normalised accuracy of each backbone model the curves
// belong to (once per model: files of one model share its features).
func uncorrectedLines(res *evaluate.Result, curves []curve) []curve {
	lo, hi := curves[0].xy[0].X, curves[0].xy[0].X
	used := map[string]bool{}
	for _, c := range curves {
		used[c.backbone] = true
		for _, p := range c.xy {
			lo, hi = min(lo, p.X), max(hi, p.X)
		}
	}
	model := map[string]string{}
	for _, b := range res.Backbones {
		model[b.Label] = b.Model
	}
	var out []curve
	done := map[string]bool{}
	for _, r := range res.Rows {
		if r.Method != evaluate.MethodMerged || !used[r.Backbone] || done[model[r.Backbone]] {
			continue
		}
		done[model[r.Backbone]] = true
		y := 100 * r.NormMean
		out = append(out, curve{name: r.Backbone + " uncorrected", backbone: r.Backbone, xy: plotter.XYs{{X: lo, Y: y}, {X: hi, Y: y}}})
	}
	return out
}

// legendBelow puts the legend at the bottom left, and lowers the y axis's
// minimum so that the legend's entries (n of them, on a plot of the given
// height) sit below every point of curves.
func legendBelow(p *plot.Plot, curves []curve, n int, height vg.Length) {
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range curves {
		for _, q := range c.xy {
			lo, hi = min(lo, q.Y), max(hi, q.Y)
		}
	}
	if math.IsInf(lo, 0) {
		return
	}
	span := max(hi-lo, 1)
	// The data area is about 3/4 of the height; a legend entry about 10 pt.
	frac := min(0.6, float64(n)*10/(0.75*float64(height/vg.Points(1))))
	p.Y.Min = max(0, lo-span*frac/(1-frac)-0.02*span) // accuracies: never below 0
	p.Y.Max = hi + 0.04*span
}

// sweepPlot draws curves on a logarithmic x axis, with dashed reference
// lines.
func sweepPlot(title, xlabel string, curves, refs []curve) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "mean normalised accuracy (%)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	for i, c := range curves {
		l, _, ok := addCurve(p, i, c)
		if ok && i%2 == 1 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
	}
	for _, r := range refs {
		l, err := plotter.NewLine(r.xy)
		if err != nil {
			continue
		}
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(r.name, l)
	}
	legendBelow(p, append(append([]curve{}, curves...), refs...), len(curves)+len(refs), 4*vg.Inch)
	return p
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
