package figures

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/mergectl/react-triton/evaluate"
)

// DPI is the resolution of the PNG files: small files that read well in a
// Markdown page.
const DPI = 96

// figure is one drawn file: a grid of plots (rows of columns).
type figure struct {
	name   string // file name, e.g. "beta.png"
	plots  [][]*plot.Plot
	width  vg.Length // of one plot
	height vg.Length
}

// Write draws every figure that res supports into dir (created if need
// be) and returns the paths written, in order:
//   - pairwise-A-B.png for each pairwise set;
//   - simplex-A-B-C.png for each simplex set;
//   - beta.png when some components were evaluated at two or more β;
//   - fraction.png when two or more components of one backbone model
//     differ in their number of calibration samples.
func Write(res *evaluate.Result, dir string) ([]string, error) {
	var figs []figure
	for _, s := range res.Sets {
		switch s.Kind {
		case "pairwise":
			if f, ok := pairwise(res, s); ok {
				figs = append(figs, f)
			}
		case "simplex":
			if f, ok := simplex(res, s); ok {
				figs = append(figs, f)
			}
		}
	}
	if f, ok := betaFigure(res); ok {
		figs = append(figs, f)
	}
	if f, ok := fractionFigure(res); ok {
		figs = append(figs, f)
	}
	if len(figs) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	var paths []string
	for _, f := range figs {
		path := filepath.Join(dir, f.name)
		if err := f.save(path); err != nil {
			return paths, fmt.Errorf("figures: %s: %w", f.name, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// save draws the figure's plots side by side and writes the PNG.
func (f figure) save(path string) error {
	rows, cols := len(f.plots), 0
	for _, r := range f.plots {
		cols = max(cols, len(r))
	}
	img := vgimg.NewWith(vgimg.UseWH(f.width*vg.Length(cols), f.height*vg.Length(rows)), vgimg.UseDPI(DPI))
	dc := draw.New(img)
	grid := make([][]*plot.Plot, rows)
	for i, r := range f.plots {
		grid[i] = make([]*plot.Plot, cols)
		copy(grid[i], r)
	}
	canvases := plot.Align(grid, draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter, PadY: vg.Millimeter}, dc)
	for i, r := range grid {
		for j, p := range r {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fileName joins parts into a safe file name: "pairwise-a-b.png".
func fileName(parts ...string) string {
	s := strings.Join(parts, "-")
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
	return s + ".png"
}

// style returns the i-th line colour and glyph shape.
func style(i int) (color.Color, draw.GlyphDrawer) {
	return plotutil.Color(i), plotutil.Shape(i)
}

// addCurve draws curve i as a line through its points, in style(i), with a
// legend entry; a curve without points is left out.
func addCurve(p *plot.Plot, i int, c curve) (*plotter.Line, *plotter.Scatter, bool) {
	l, sc, err := plotter.NewLinePoints(c.xy)
	if err != nil {
		return nil, nil, false
	}
	col, shape := style(i)
	l.Color, sc.Color, sc.Shape = col, col, shape
	p.Add(l, sc)
	p.Legend.Add(c.name, l, sc)
	return l, sc, true
}

// rowKey identifies a corrected model: its rows at every preference.
type rowKey struct {
	backbone, method, norm string
	beta                   float64
}

func keyOf(r *evaluate.Row) rowKey {
	k := rowKey{backbone: r.Backbone, method: r.Method, norm: r.Norm}
	if r.Beta != nil {
		k.beta = *r.Beta
	}
	return k
}

// name says which corrected model a series is: "AdaMerging react", with β
// and the normalisation when the result has several.
func (k rowKey) name(withOptions bool) string {
	s := k.backbone + " " + k.method
	if withOptions {
		s += fmt.Sprintf(" β=%g %s", k.beta, k.norm)
	}
	return s
}

// corrected groups the corrected rows of set (every method but individual
// and merged) by model, in order of first appearance, and says whether
// they differ in β or normalisation.
func corrected(res *evaluate.Result, set string) (keys []rowKey, rows map[rowKey][]*evaluate.Row, options bool) {
	rows = map[rowKey][]*evaluate.Row{}
	for i := range res.Rows {
		r := &res.Rows[i]
		if r.Set != set || r.Preference == nil {
			continue
		}
		k := keyOf(r)
		if _, ok := rows[k]; !ok {
			keys = append(keys, k)
		}
		rows[k] = append(rows[k], r)
	}
	opts := map[[2]string]bool{}
	for _, k := range keys {
		opts[[2]string{fmt.Sprint(k.beta), k.norm}] = true
	}
	return keys, rows, len(opts) > 1
}

// merged returns the uncorrected row of a backbone label.
func merged(res *evaluate.Result, backbone string) (*evaluate.Row, bool) {
	for i := range res.Rows {
		if r := &res.Rows[i]; r.Method == evaluate.MethodMerged && r.Backbone == backbone {
			return r, true
		}
	}
	return nil, false
}
