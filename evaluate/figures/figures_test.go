package figures

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/mergectl/react-triton/evaluate"
)

func ptr(v float64) *float64 { return &v }

// row builds a corrected (or merged, with beta nil) row; the normalised
// accuracies are acc / ind.
func row(backbone, method string, beta *float64, set, label string, pref, acc, ind []float64) evaluate.Row {
	r := evaluate.Row{Backbone: backbone, Method: method, Beta: beta, Set: set, Label: label, Preference: pref, Accuracy: acc}
	if beta != nil {
		r.Norm = "sum"
	}
	for i, a := range acc {
		r.Normalized = append(r.Normalized, a/ind[i])
		r.Mean += a / float64(len(acc))
		r.NormMean += a / ind[i] / float64(len(acc))
	}
	return r
}

// testResult is a result over tasks a, b, c with experts at 0.8, 0.5 and
// 1: backbone X (2 files of one model, 100 and 1000 samples) at β 0.1 and
// 10, a pairwise set over a, b (3 points) and a simplex set (3 corners and
// the centre).
func testResult() *evaluate.Result {
	ind := []float64{0.8, 0.5, 1}
	res := &evaluate.Result{Tasks: []string{"a", "b", "c"}, Individual: ind,
		Sets: []evaluate.SetInfo{
			{Name: "pairwise:a,b:3", Kind: "pairwise", Focus: []string{"a", "b"}},
			{Name: "simplex:a,b,c:1", Kind: "simplex", Focus: []string{"a", "b", "c"}},
			{Name: "equal", Kind: "equal", Focus: []string{"a", "b", "c"}},
		},
		Backbones: []evaluate.BackboneInfo{{Label: "X", Model: "m", Samples: 1000}, {Label: "X small", Model: "m", Samples: 100}},
	}
	res.Rows = append(res.Rows,
		row("", evaluate.MethodIndividual, nil, "", "expert", nil, ind, ind),
		row("X", evaluate.MethodMerged, nil, "", "none", nil, []float64{0.4, 0.25, 0.5}, ind),
		row("X small", evaluate.MethodMerged, nil, "", "none", nil, []float64{0.4, 0.25, 0.5}, ind),
	)
	for _, beta := range []float64{10, 0.1} { // unsorted on purpose
		bump := 0.0
		if beta == 10 {
			bump = 0.1
		}
		res.Rows = append(res.Rows,
			row("X", "react", ptr(beta), "pairwise:a,b:3", "a=1", []float64{1, 0, 0}, []float64{0.6 + bump, 0.2, 0.5}, ind),
			row("X", "react", ptr(beta), "pairwise:a,b:3", "a=0.5,b=0.5", []float64{0.5, 0.5, 0}, []float64{0.5, 0.3, 0.5}, ind),
			row("X", "react", ptr(beta), "pairwise:a,b:3", "b=1", []float64{0, 1, 0}, []float64{0.4, 0.4, 0.5}, ind),
			row("X", "react", ptr(beta), "equal", "equal", []float64{1. / 3, 1. / 3, 1. / 3}, []float64{0.6, 0.3 + bump, 0.9}, ind),
			row("X small", "react", ptr(beta), "equal", "equal", []float64{1. / 3, 1. / 3, 1. / 3}, []float64{0.4, 0.3, 0.6}, ind),
		)
	}
	res.Rows = append(res.Rows,
		row("X", "react", ptr(0.1), "simplex:a,b,c:1", "a", []float64{0.6, 0.2, 0.2}, []float64{0.4, 0.1, 0.1}, ind),
		row("X", "react", ptr(0.1), "simplex:a,b,c:1", "b", []float64{0.2, 0.6, 0.2}, []float64{0.1, 0.4, 0.1}, ind),
		row("X", "react", ptr(0.1), "simplex:a,b,c:1", "c", []float64{0.2, 0.2, 0.6}, []float64{0.1, 0.1, 0.9}, ind),
	)
	return res
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPairwiseCurves(t *testing.T) {
	res := testResult()
	curves, unc, expert, ok := pairwiseCurves(res, res.Sets[0])
	if !ok {
		t.Fatal("no curves")
	}
	if len(curves) != 2 || curves[0].name != "X react β=10 sum" || curves[1].name != "X react β=0.1 sum" {
		t.Fatalf("curves %+v", curves)
	}
	want := plotter.XYs{{X: 70, Y: 20}, {X: 50, Y: 30}, {X: 40, Y: 40}}
	for i, p := range curves[0].xy {
		if !near(p.X, want[i].X) || !near(p.Y, want[i].Y) {
			t.Errorf("point %d = %v, want %v", i, p, want[i])
		}
	}
	// One uncorrected point per backbone model, the experts at (80, 50).
	if len(unc) != 1 || !near(unc[0].xy[0].X, 40) || !near(unc[0].xy[0].Y, 25) {
		t.Errorf("uncorrected %+v", unc)
	}
	if !near(expert.X, 80) || !near(expert.Y, 50) {
		t.Errorf("expert %v", expert)
	}
}

func TestSimplexCells(t *testing.T) {
	res := testResult()
	keys, cells, _ := simplexCells(res, res.Sets[1])
	if len(keys) != 1 {
		t.Fatalf("keys %v", keys)
	}
	c := cells[keys[0]]
	// Corner a: weights (0.6, 0.2, 0.2)/1 of normalised (0.5, 0.2, 0.1):
	// 0.3 + 0.04 + 0.02.
	wants := []cell{
		{X: 0.2 + 0.1, Y: 0.2 * math.Sqrt(3) / 2, Value: 0.6*0.5 + 0.2*0.2 + 0.2*0.1},
		{X: 0.6 + 0.1, Y: 0.2 * math.Sqrt(3) / 2, Value: 0.2*0.125 + 0.6*0.8 + 0.2*0.1},
		{X: 0.2 + 0.3, Y: 0.6 * math.Sqrt(3) / 2, Value: 0.2*0.125 + 0.2*0.2 + 0.6*0.9},
	}
	for i, w := range wants {
		if !near(c[i].X, w.X) || !near(c[i].Y, w.Y) || !near(c[i].Value, w.Value) {
			t.Errorf("cell %d = %+v, want %+v", i, c[i], w)
		}
	}
	if d := spacing(c); !near(d, 0.4) {
		t.Errorf("spacing %g, want 0.4", d)
	}
}

func TestSweepCurves(t *testing.T) {
	res := testResult()
	b := betaCurves(res)
	names := []string{}
	for _, c := range b {
		names = append(names, c.name)
	}
	if !slices.Equal(names, []string{"X sum, equal", "X small sum, equal"}) {
		t.Fatalf("β curves %v", names)
	}
	// Sorted by β: 0.1 then 10; X's equal normalised mean (0.75+0.6+0.9)/3
	// then (0.75+0.8+0.9)/3.
	if b[0].xy[0].X != 0.1 || !near(b[0].xy[0].Y, 75) || !near(b[0].xy[1].Y, 100*(0.75+0.8+0.9)/3) {
		t.Errorf("β curve %v", b[0].xy)
	}
	f := fractionCurves(res)
	if len(f) != 2 || f[0].name != "m β=10 sum, equal" {
		t.Fatalf("fraction curves %+v", f)
	}
	if f[0].xy[0].X != 100 || f[0].xy[1].X != 1000 || !near(f[0].xy[0].Y, 100*(0.5+0.6+0.6)/3) {
		t.Errorf("fraction curve %v", f[0].xy)
	}
	lines := uncorrectedLines(res, b)
	if len(lines) != 1 || !near(lines[0].xy[0].Y, 50) || lines[0].xy[0].X != 0.1 || lines[0].xy[1].X != 10 {
		t.Errorf("uncorrected lines %+v", lines)
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	paths, err := Write(testResult(), filepath.Join(dir, "figs"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	want := []string{"pairwise-a-b.png", "simplex-a-b-c.png", "beta.png", "fraction.png"}
	if !slices.Equal(names, want) {
		t.Fatalf("wrote %v, want %v", names, want)
	}
	f, err := os.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 528 || b.Dy() != 384 { // 5.5 × 4 inches at 96 dpi
		t.Errorf("pairwise figure is %d×%d", b.Dx(), b.Dy())
	}

	// Nothing to draw: no files, no directory.
	empty := &evaluate.Result{Tasks: []string{"a"}, Sets: []evaluate.SetInfo{{Name: "equal", Kind: "equal"}}}
	paths, err = Write(empty, filepath.Join(dir, "none"))
	if err != nil || paths != nil {
		t.Fatalf("Write(empty) = %v, %v", paths, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); !os.IsNotExist(err) {
		t.Errorf("Write(empty) made its directory: %v", err)
	}
}

func TestFileName(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"pairwise", "a", "b"}, "pairwise-a-b.png"},
		{[]string{"simplex", "x/y", "ü"}, "simplex-x_y-_.png"},
	} {
		if got := fileName(c.in...); got != c.want {
			t.Errorf("fileName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
