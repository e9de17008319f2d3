package figures

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/mergectl/react-triton/evaluate"
)

// cell is one point of a simplex set, placed on the triangle: corners A at
// (0, 0), B at (1, 0) and C at (1/2, √3/2).
type cell struct {
	X, Y  float64
	Value float64 // the point's weighted normalised accuracy over A, B, C
}

// ternary places the weights (a, b, c), normalised to sum to 1, on the
// triangle.
func ternary(a, b, c float64) (x, y float64) {
	s := a + b + c
	return (b + c/2) / s, c / s * math.Sqrt(3) / 2
}

// simplexCells returns, per corrected model of a simplex set over A, B, C,
// each point's cell: the mean of the three tasks' normalised accuracies
// weighted by the point's preference among them, Σ q_t a_t with q_t = p_t /
// (p_A + p_B + p_C). It is the task's own normalised accuracy at a corner.
func simplexCells(res *evaluate.Result, s evaluate.SetInfo) (keys []rowKey, cells map[rowKey][]cell, options bool) {
	if len(s.Focus) != 3 {
		return nil, nil, false
	}
	idx := make([]int, 3)
	for i, t := range s.Focus {
		if idx[i] = slices.Index(res.Tasks, t); idx[i] < 0 {
			return nil, nil, false
		}
	}
	keys, rows, options := corrected(res, s.Name)
	cells = map[rowKey][]cell{}
	for _, k := range keys {
		for _, r := range rows[k] {
			p := [3]float64{r.Preference[idx[0]], r.Preference[idx[1]], r.Preference[idx[2]]}
			sum := p[0] + p[1] + p[2]
			if sum <= 0 {
				continue
			}
			v := 0.0
			for i := range 3 {
				v += p[i] / sum * r.Normalized[idx[i]]
			}
			x, y := ternary(p[0], p[1], p[2])
			cells[k] = append(cells[k], cell{X: x, Y: y, Value: v})
		}
	}
	return keys, cells, options
}

// spacing returns the smallest distance between two cells: the grid step.
func spacing(cells []cell) float64 {
	d := math.Inf(1)
	for i := range cells {
		for j := range i {
			d = min(d, math.Hypot(cells[i].X-cells[j].X, cells[i].Y-cells[j].Y))
		}
	}
	return d
}

// simplex draws a heat map per corrected model of a simplex set: each
// point is a hexagon (its cell in the triangular grid), coloured and
// labelled by its weighted normalised accuracy (%), on one colour scale
// for all panels.
func simplex(res *evaluate.Result, s evaluate.SetInfo) (figure, bool) {
	keys, cells, options := simplexCells(res, s)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, k := range keys {
		for _, c := range cells[k] {
			lo, hi = min(lo, c.Value), max(hi, c.Value)
		}
	}
	if len(keys) == 0 || math.IsInf(lo, 0) {
		return figure{}, false
	}
	if hi-lo < 1e-9 {
		hi = lo + 1e-9
	}
	cm := moreland.SmoothBlueRed()
	cm.SetMin(lo)
	cm.SetMax(hi)
	const cols = 3
	var grid [][]*plot.Plot
	for i, k := range keys {
		if i%cols == 0 {
			grid = append(grid, nil)
		}
		p := plot.New()
		p.Title.Text = k.name(options)
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.HideAxes()
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -0.15, 1.15, -0.18, math.Sqrt(3)/2+0.16
		cs := cells[k]
		r := spacing(cs) / math.Sqrt(3)
		var labels plotter.XYLabels
		for _, c := range cs {
			var hex plotter.XYs
			for j := range 6 {
				a := math.Pi/6 + float64(j)*math.Pi/3
				hex = append(hex, plotter.XY{X: c.X + r*math.Cos(a), Y: c.Y + r*math.Sin(a)})
			}
			poly, err := plotter.NewPolygon(hex)
			if err != nil {
				continue
			}
			poly.Color, _ = cm.At(c.Value)
			poly.LineStyle.Width = 0
			p.Add(poly)
			labels.XYs = append(labels.XYs, plotter.XY{X: c.X, Y: c.Y})
			labels.Labels = append(labels.Labels, fmt.Sprintf("%.0f", 100*c.Value))
		}
		if l, err := plotter.NewLabels(labels); err == nil {
			for j := range l.TextStyle {
				l.TextStyle[j].Font.Size = vg.Points(6)
				l.TextStyle[j].XAlign, l.TextStyle[j].YAlign = -0.5, -0.5
			}
			p.Add(l)
		}
		corners := plotter.XYLabels{XYs: []plotter.XY{{X: -0.05, Y: -0.14}, {X: 1.05, Y: -0.14}, {X: 0.5, Y: math.Sqrt(3)/2 + 0.1}},
			Labels: []string{s.Focus[0], s.Focus[1], s.Focus[2]}}
		if l, err := plotter.NewLabels(corners); err == nil {
			for j := range l.TextStyle {
				l.TextStyle[j].Font.Size = vg.Points(9)
				l.TextStyle[j].XAlign = -0.5
			}
			p.Add(l)
		}
		grid[len(grid)-1] = append(grid[len(grid)-1], p)
	}
	// Every panel states the shared scale.
	for _, r := range grid {
		for _, p := range r {
			p.Title.Text += fmt.Sprintf("\nweighted normalised acc.: blue %.0f%% … red %.0f%%", 100*lo, 100*hi)
		}
	}
	return figure{name: fileName(append([]string{"simplex"}, s.Focus...)...), plots: grid, width: 3.2 * vg.Inch, height: 3 * vg.Inch}, true
}
