package figures

import (
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mergectl/react-triton/evaluate"
)

// curve is a named series of points.
type curve struct {
	name     string
	backbone string // the backbone label it belongs to, if any
	xy       plotter.XYs
}

// pairwiseCurves returns, for a pairwise set over tasks A and B, each
// corrected model's trade-off curve (accuracy of A, accuracy of B, in %, in
// the set's order), each backbone's uncorrected point and the experts'.
func pairwiseCurves(res *evaluate.Result, s evaluate.SetInfo) (curves []curve, uncorrected []curve, expert plotter.XY, ok bool) {
	if len(s.Focus) != 2 {
		return nil, nil, expert, false
	}
	a, b := slices.Index(res.Tasks, s.Focus[0]), slices.Index(res.Tasks, s.Focus[1])
	if a < 0 || b < 0 {
		return nil, nil, expert, false
	}
	keys, rows, options := corrected(res, s.Name)
	model := map[string]string{}
	for _, b := range res.Backbones {
		model[b.Label] = b.Model
	}
	seen := map[string]bool{} // backbone models: files of one model share its features
	for _, k := range keys {
		c := curve{name: k.name(options)}
		for _, r := range rows[k] {
			c.xy = append(c.xy, plotter.XY{X: 100 * r.Accuracy[a], Y: 100 * r.Accuracy[b]})
		}
		curves = append(curves, c)
		if m, found := merged(res, k.backbone); found && !seen[model[k.backbone]] {
			seen[model[k.backbone]] = true
			uncorrected = append(uncorrected, curve{name: k.backbone + " uncorrected",
				xy: plotter.XYs{{X: 100 * m.Accuracy[a], Y: 100 * m.Accuracy[b]}}})
		}
	}
	if len(res.Individual) > max(a, b) {
		expert = plotter.XY{X: 100 * res.Individual[a], Y: 100 * res.Individual[b]}
	}
	return curves, uncorrected, expert, len(curves) > 0
}

// pairwise draws a pairwise set's trade-off curves.
func pairwise(res *evaluate.Result, s evaluate.SetInfo) (figure, bool) {
	curves, unc, expert, ok := pairwiseCurves(res, s)
	if !ok {
		return figure{}, false
	}
	p := plot.New()
	p.Title.Text = "Trade-off " + s.Focus[0] + " ↔ " + s.Focus[1] + " (pairwise preferences)"
	p.X.Label.Text = s.Focus[0] + " accuracy (%)"
	p.Y.Label.Text = s.Focus[1] + " accuracy (%)"
	p.Add(plotter.NewGrid())
	for i, c := range curves {
		if _, sc, ok := addCurve(p, i, c); ok {
			sc.Radius = vg.Points(2.5)
		}
	}
	for i, u := range unc {
		sc, err := plotter.NewScatter(u.xy)
		if err != nil {
			continue
		}
		sc.Shape, sc.Radius = draw.CrossGlyph{}, vg.Points(5)
		sc.Color, _ = style(i)
		sc.GlyphStyle.Color = sc.Color
		p.Add(sc)
		p.Legend.Add(u.name, sc)
	}
	if expert != (plotter.XY{}) {
		sc, err := plotter.NewScatter(plotter.XYs{expert})
		if err == nil {
			sc.Shape, sc.Radius = draw.PyramidGlyph{}, vg.Points(5)
			p.Add(sc)
			p.Legend.Add("experts (each task's own)", sc)
		}
	}
	all := []curve{{xy: plotter.XYs{expert}}}
	all = append(append(all, curves...), unc...)
	legendBelow(p, all, len(curves)+len(unc)+1, 4*vg.Inch)
	lo, hi := expert.X, expert.X
	for _, c := range all {
		for _, q := range c.xy {
			lo, hi = min(lo, q.X), max(hi, q.X)
		}
	}
	pad := 0.05 * max(hi-lo, 1)
	p.X.Min, p.X.Max = lo-pad, hi+pad
	return figure{name: fileName("pairwise", s.Focus[0], s.Focus[1]), plots: [][]*plot.Plot{{p}},
		width: 5.5 * vg.Inch, height: 4 * vg.Inch}, true
}
