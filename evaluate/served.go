package evaluate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
)

// Served asks an evaluation to check, end to end, that what is served is
// what was evaluated: each task's inputs are sent to that task's
// controllable model on the sidecar (images in, logits out) with each
// preference of the sets in the react-preference header, and the logits
// that come back are compared with the ones the evaluation computes itself
// at the same preference (W_p with the components' own β and
// normalisation, as the sidecar applies them). The uncorrected backbone is
// checked too, with the preference "none".
type Served struct {
	// Models runs the sidecar's controllable models, e.g. a Triton whose
	// Client is dialled to the sidecar. The preference reaches it as
	// outgoing gRPC metadata of the context (PreferenceContext).
	Models Models
	// Backbone is the label of the Backbone whose components file the
	// sidecar serves with Heads; empty: the first.
	Backbone string
	// Heads is each task's controllable model on the sidecar.
	Heads map[string]react.ModelRef
}

// ServedCheck compares one task at one preference as served and as
// evaluated.
type ServedCheck struct {
	Backbone string `json:"backbone"`
	Set      string `json:"set,omitempty"` // empty for the uncorrected backbone
	Label    string `json:"label"`
	// Header is the react-preference header sent: the canonical
	// preference, or "none".
	Header     string    `json:"header"`
	Preference []float64 `json:"preference,omitempty"`
	Task       string    `json:"task"`
	Model      string    `json:"model"` // the controllable model
	// Evaluated and Served are the accuracies computed in process and
	// from the sidecar's logits.
	Evaluated float64 `json:"evaluated_accuracy"`
	Served    float64 `json:"served_accuracy"`
	// MaxDiff is the largest |served − evaluated| over every logit, Scale
	// the largest |evaluated| logit.
	MaxDiff float64 `json:"max_logit_diff"`
	Scale   float64 `json:"max_logit"`
	// Differ counts the samples whose predicted class differs.
	Differ int `json:"predictions_differ"`
}

// Relative returns MaxDiff / Scale.
func (c ServedCheck) Relative() float64 {
	return c.MaxDiff / math.Max(c.Scale, 1e-30)
}

// PreferenceContext returns ctx with spec (a preference, or "none") in the
// outgoing gRPC metadata as the react-preference header.
func PreferenceContext(ctx context.Context, spec string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, control.KeyPreference, spec)
}

// CheckServed returns an error naming every check whose logits differ by
// more than rel times the largest evaluated logit; nil if there are none.
func (r *Result) CheckServed(rel float64) error {
	var bad []string
	for _, c := range r.Served {
		if !(c.Relative() <= rel) {
			bad = append(bad, fmt.Sprintf("task %s, model %s, at %s: max |Δ logit| %.3g (%.2g of the largest logit), accuracy %.2f%% served against %.2f%% evaluated",
				c.Task, c.Model, c.Header, c.MaxDiff, c.Relative(), 100*c.Served, 100*c.Evaluated))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("what is served differs from what was evaluated (tolerance %g):\n  %s", rel, strings.Join(bad, "\n  "))
	}
	return nil
}

// servedBackbone returns the Backbone that s names.
func (c *Config) servedBackbone(s *Served) (Backbone, error) {
	if s.Backbone == "" {
		return c.Backbones[0], nil
	}
	for _, b := range c.Backbones {
		if b.Label == s.Backbone {
			return b, nil
		}
	}
	return Backbone{}, fmt.Errorf("served: no components labelled %q", s.Backbone)
}

// validateServed checks cfg.Served.
func (c *Config) validateServed() error {
	seen := map[string]bool{}
	for k := range c.Served {
		s := &c.Served[k]
		if s.Models == nil {
			return errors.New("served: no models")
		}
		b, err := c.servedBackbone(s)
		if err != nil {
			return err
		}
		if seen[b.Label] {
			return fmt.Errorf("served: components %s checked twice", b.Label)
		}
		seen[b.Label] = true
		for _, t := range c.Tasks {
			if _, ok := s.Heads[t.Name]; !ok {
				return fmt.Errorf("served: components %s: task %s has no controllable model", b.Label, t.Name)
			}
		}
	}
	return nil
}

// served runs the checks of one Served.
func (e *evaluation) served(ctx context.Context, s *Served) error {
	b, err := e.cfg.servedBackbone(s)
	if err != nil {
		return err
	}
	c := b.Components
	solver, err := react.NewSolver(c, react.Options{Beta: c.Beta, Normalization: c.Normalization})
	if err != nil {
		return err
	}
	type point struct {
		set, label, header string
		p                  []float64
		w                  []float32 // nil: uncorrected
	}
	points := []point{{label: "none (no correction)", header: control.None}}
	for _, set := range e.cfg.Sets {
		for _, pt := range set.Points {
			p, err := expand(pt.P, solver.Tasks())
			if err != nil {
				return err
			}
			w, err := solver.Solve(p)
			if err != nil {
				return fmt.Errorf("preference %s: %w", pt.Label, err)
			}
			w32, err := react.Float32Matrix(w)
			if err != nil {
				return err
			}
			points = append(points, point{set.Name, pt.Label, p.String(), pt.P.Weights(), w32})
		}
	}
	z := e.features[c.Backbone]
	for i, t := range e.cfg.Tasks {
		head := s.Heads[t.Name]
		for _, pt := range points {
			feat := z[i]
			if pt.w != nil {
				feat = make([]float32, len(z[i]))
				if err := react.Correct(feat, z[i], pt.w, e.d); err != nil {
					return err
				}
			}
			want, classes, err := e.models.Run(ctx, e.cfg.Heads[t.Name], &Floats{X: feat, Shape: []int64{int64(e.d)}})
			if err != nil {
				return fmt.Errorf("task %s: head: %w", t.Name, err)
			}
			got, gotClasses, err := s.Models.Run(PreferenceContext(ctx, pt.header), head, t.Samples)
			if err != nil {
				return fmt.Errorf("task %s: served at %s: %w", t.Name, pt.header, err)
			}
			if gotClasses != classes || len(got) != len(want) {
				return fmt.Errorf("task %s: served %s answers %d values of %d classes, the head %d of %d",
					t.Name, describeRef(head), len(got), gotClasses, len(want), classes)
			}
			chk := ServedCheck{Backbone: b.Label, Set: pt.set, Label: pt.label, Header: pt.header, Preference: pt.p,
				Task: t.Name, Model: head.Name}
			if chk.Evaluated, err = Accuracy(want, classes, t.Labels); err != nil {
				return fmt.Errorf("task %s: %w", t.Name, err)
			}
			if chk.Served, err = Accuracy(got, classes, t.Labels); err != nil {
				return fmt.Errorf("task %s: served: %w", t.Name, err)
			}
			for k := range want {
				chk.MaxDiff = math.Max(chk.MaxDiff, math.Abs(float64(got[k])-float64(want[k])))
				chk.Scale = math.Max(chk.Scale, math.Abs(float64(want[k])))
			}
			for n := range t.N() {
				if argmaxRow(got[n*classes:(n+1)*classes]) != argmaxRow(want[n*classes:(n+1)*classes]) {
					chk.Differ++
				}
			}
			e.res.Served = append(e.res.Served, chk)
		}
	}
	return nil
}

// argmaxRow returns the index of the largest value, the first of ties.
func argmaxRow(v []float32) int {
	best := 0
	for k, x := range v {
		if x > v[best] {
			best = k
		}
	}
	return best
}
