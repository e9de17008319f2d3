package evaluate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
)

// fakeSidecar serves, for each task, a controllable model named after the
// task: the head of head(W_p · backbone(x)), in float64, with W_p the
// reference wp for the preference of the react-preference header of the
// outgoing metadata, solved with beta (the sidecar's components' β).
type fakeSidecar struct {
	f       *fixture
	beta    float64
	headers []string // every header received
}

func (s *fakeSidecar) Run(ctx context.Context, m react.ModelRef, in Samples) ([]float32, int, error) {
	x, shape, err := floatsOf(in)
	if err != nil {
		return nil, 0, err
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	h := md.Get(control.KeyPreference)
	if len(h) != 1 {
		return nil, 0, fmt.Errorf("want one react-preference header, got %q", h)
	}
	s.headers = append(s.headers, h[0])
	var w *mat.Dense
	if h[0] != control.None {
		p, err := react.ParsePreference(h[0], s.f.comps.TaskNames())
		if err != nil {
			return nil, 0, err
		}
		w = wp(s.f.comps, p.Weights(), s.beta)
	}
	head, ok := s.f.models.maps["head_"+m.Name]
	if !ok || len(shape) != 1 || shape[0] != fixD {
		return nil, 0, fmt.Errorf("no model %q of shape %v", m.Name, shape)
	}
	n := len(x) / fixD
	var out []float32
	for i := range n {
		z := apply(s.f.models.maps["merged"], widen(x[i*fixD:(i+1)*fixD]))
		if w != nil {
			z = apply(w, z)
		}
		for _, v := range apply(head, z) {
			out = append(out, float32(v))
		}
	}
	r, _ := head.Dims()
	return out, r, nil
}

func servedFixture(t *testing.T, beta float64) (*fixture, *fakeSidecar) {
	f := newFixture(t)
	for _, spec := range []string{"equal", "pairwise:a,b:3"} {
		s, err := ParseSet(spec, f.cfg.TaskNames())
		if err != nil {
			t.Fatal(err)
		}
		f.cfg.Sets = append(f.cfg.Sets, s)
	}
	f.cfg.Backbones = []Backbone{{"X", f.comps}}
	side := &fakeSidecar{f: f, beta: beta}
	f.cfg.Served = []Served{{Models: side, Heads: map[string]react.ModelRef{"a": {Name: "a"}, "b": {Name: "b"}}}}
	return f, side
}

func TestServedMatchesEvaluation(t *testing.T) {
	f, side := servedFixture(t, f0Beta)
	res, err := Run(context.Background(), f.models, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// none, equal and three pairwise points, for each of the two tasks.
	if len(res.Served) != 2*5 {
		t.Fatalf("%d checks, want 10", len(res.Served))
	}
	wantHeaders := []string{"none", "a=0.5,b=0.5", "a=1", "a=0.5,b=0.5", "b=1"}
	for i, c := range res.Served {
		if c.Header != wantHeaders[i%5] || side.headers[i] != c.Header {
			t.Errorf("check %d: header %q (sent %q), want %q", i, c.Header, side.headers[i], wantHeaders[i%5])
		}
		// The fake serves in float64: the evaluation's float32 W_p and
		// products differ by rounding only.
		if c.Relative() > 1e-5 || c.Scale == 0 {
			t.Errorf("%s at %s: max |Δ| %g of %g", c.Task, c.Header, c.MaxDiff, c.Scale)
		}
		// The served accuracy is the same as the evaluated row's.
		row := findRow(t, res, c)
		task := map[string]int{"a": 0, "b": 1}[c.Task]
		if c.Evaluated != row.Accuracy[task] || c.Served != c.Evaluated || c.Differ != 0 {
			t.Errorf("%s at %s: evaluated %v, served %v, row %v, %d differ", c.Task, c.Header, c.Evaluated, c.Served, row.Accuracy, c.Differ)
		}
	}
	if err := res.CheckServed(1e-4); err != nil {
		t.Error(err)
	}
	var md strings.Builder
	if err := res.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| X | pairwise:a,b:3 | a=1,b=0 | a | a |") {
		t.Errorf("no served row in the Markdown:\n%s", md.String())
	}
}

const f0Beta = 0.1 // the fixture's components' β

func findRow(t *testing.T, res *Result, c ServedCheck) Row {
	t.Helper()
	for _, r := range res.Rows {
		if c.Set == "" && r.Method == MethodMerged || c.Set != "" && r.Method == AggReACT && r.Set == c.Set && r.Label == c.Label {
			return r
		}
	}
	t.Fatalf("no row for %s %s", c.Set, c.Label)
	return Row{}
}

// A sidecar that serves other components (here another β) is caught.
func TestServedDetectsAMismatch(t *testing.T) {
	f, _ := servedFixture(t, 50)
	res, err := Run(context.Background(), f.models, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = res.CheckServed(1e-4)
	if err == nil {
		t.Fatal("a sidecar with β=50 passed the check")
	}
	// The uncorrected answer does not depend on β: only corrected points fail.
	if strings.Contains(err.Error(), "at none") || !strings.Contains(err.Error(), "at a=0.5,b=0.5") {
		t.Errorf("error: %v", err)
	}
}

func TestServedConfigErrors(t *testing.T) {
	f, _ := servedFixture(t, f0Beta)
	delete(f.cfg.Served[0].Heads, "b")
	if _, err := Run(context.Background(), f.models, f.cfg); err == nil || !strings.Contains(err.Error(), "components X: task b has no controllable model") {
		t.Errorf("got %v", err)
	}
	f, _ = servedFixture(t, f0Beta)
	f.cfg.Served[0].Backbone = "Z"
	if _, err := Run(context.Background(), f.models, f.cfg); err == nil || !strings.Contains(err.Error(), `no components labelled "Z"`) {
		t.Errorf("got %v", err)
	}
	f, _ = servedFixture(t, f0Beta)
	f.cfg.Served = append(f.cfg.Served, f.cfg.Served[0])
	f.cfg.Served[1].Backbone = "X"
	if _, err := Run(context.Background(), f.models, f.cfg); err == nil || !strings.Contains(err.Error(), "components X checked twice") {
		t.Errorf("got %v", err)
	}
}

// Two components files, each checked against the sidecar models that serve
// it; swapped, both fail.
func TestServedSeveralComponents(t *testing.T) {
	for _, swap := range []bool{false, true} {
		f, side := servedFixture(t, f0Beta)
		other := *f.comps
		other.Beta = 50
		f.cfg.Backbones = append(f.cfg.Backbones, Backbone{"Y", &other})
		sideY := &fakeSidecar{f: f, beta: 50}
		f.cfg.Served[0].Backbone = "X"
		f.cfg.Served = append(f.cfg.Served, Served{Models: sideY, Backbone: "Y", Heads: f.cfg.Served[0].Heads})
		if swap {
			f.cfg.Served[0].Models, f.cfg.Served[1].Models = sideY, side
		}
		res, err := Run(context.Background(), f.models, f.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Served) != 2*2*5 || res.Served[0].Backbone != "X" || res.Served[10].Backbone != "Y" {
			t.Fatalf("swap %v: %d checks", swap, len(res.Served))
		}
		err = res.CheckServed(1e-4)
		if swap != (err != nil) {
			t.Errorf("swap %v: %v", swap, err)
		}
	}
}
