package fit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mergectl/react-triton/calibrate/pairs"
	"github.com/mergectl/react-triton/calibrate/tritonpairs"
	"github.com/mergectl/react-triton/internal/atomicfile"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/heldout"
	"github.com/mergectl/react-triton/react/partialfile"
)

// BetaReport is what beta_select.report (--beta-report) writes, as JSON:
// the share held out, the samples held out per task, every candidate of
// the grid and the one chosen.
type BetaReport struct {
	Holdout    float64          `json:"holdout"`
	Held       map[string]int64 `json:"held_out"` // samples held out per task
	Candidates []BetaCandidate  `json:"candidates"`
	Chosen     BetaCandidate    `json:"chosen"`
}

// BetaCandidate is one option of the grid and its held-out reconstruction
// errors: with the one-hot preferences, with the equal one, and the score
// that chooses.
type BetaCandidate struct {
	Beta   float64 `json:"beta"`
	Norm   string  `json:"normalize"`
	OneHot float64 `json:"one_hot"`
	Equal  float64 `json:"equal"`
	Score  float64 `json:"score"`
}

// selectBeta chooses the file's β and normalisation without labels (--beta
// auto): it reads again a seeded random share of each task's samples,
// subtracts their sums from the task's (tasks hold every sample's), fits
// every option of the grid on the rest and keeps the one with the lowest
// held-out reconstruction error (heldout.Select).
func (r *fitRun) selectBeta(ctx context.Context, tasks []*partialfile.Task) error {
	cfg := r.cfg
	srcs, closeAll, err := r.open(ctx)
	if err != nil {
		return fmt.Errorf("beta auto: %w", err)
	}
	defer closeAll()
	d := tasks[0].Acc.D()
	fit := &react.Components{D: d, Normalization: react.NormSum, Backbone: r.backbone}
	var held []heldout.Task
	rep := BetaReport{Holdout: cfg.BetaSelect.Holdout, Held: map[string]int64{}}
	for i, src := range srcs {
		t := tasks[i]
		available := int(src.Len())
		h := pairs.Holdout(available, pairs.Select(available, r.subset(), r.shard), cfg.BetaSelect.Holdout, uint64(cfg.Sample.Seed))
		if h == nil {
			return fmt.Errorf("beta auto: task %s has %d samples: too few to hold any out", t.Name, t.Acc.N())
		}
		var s pairs.Source = src
		if tp, ok := src.(*tritonpairs.Pair); ok {
			tp.Use(h, 0)
		} else {
			s = pairs.NewSelected(src, h, 0)
		}
		acc := react.NewAccumulator(d)
		yy := 0.0
		chunk := r.chunkRows(src)
		mtl, ind := make([]float64, chunk*d), make([]float64, chunk*d)
		for {
			n, err := s.Next(mtl, ind)
			if n > 0 {
				if err := acc.AddFloat64(mtl[:n*d], ind[:n*d]); err != nil {
					return fmt.Errorf("beta auto: task %s: %w", t.Name, err)
				}
				for _, v := range ind[:n*d] {
					yy += v * v
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("beta auto: task %s: %w", t.Name, err)
			}
		}
		if acc.N() != int64(len(h)) {
			return fmt.Errorf("beta auto: task %s: read %d held-out samples, want %d", t.Name, acc.N(), len(h))
		}
		hs, err := acc.Stats(t.Name, t.Expert)
		if err != nil {
			return fmt.Errorf("beta auto: %w", err)
		}
		rest, err := subtract(t.Acc, acc)
		if err != nil {
			return fmt.Errorf("beta auto: task %s: %w", t.Name, err)
		}
		fs, err := rest.Stats(t.Name, t.Expert)
		if err != nil {
			return fmt.Errorf("beta auto: %w", err)
		}
		fit.Tasks = append(fit.Tasks, fs)
		held = append(held, heldout.Task{Stats: hs, YY: yy})
		rep.Held[t.Name] = acc.N()
	}
	cands, best, err := heldout.Select(fit, held, heldout.BetaGrid([]react.Normalization{react.NormSum, react.NormMean}))
	if err != nil {
		return fmt.Errorf("beta auto: %w", err)
	}
	fmt.Fprintf(r.stdout, "beta auto: held-out relative reconstruction error (%.0f%% of each task's samples), one-hot + equal:\n", 100*cfg.BetaSelect.Holdout)
	for k, c := range cands {
		out := BetaCandidate{Beta: c.Beta, Norm: string(c.Normalization), OneHot: c.OneHot, Equal: c.Equal, Score: c.Score}
		rep.Candidates = append(rep.Candidates, out)
		mark := ""
		if k == best {
			mark, rep.Chosen = "  ← chosen", out
		}
		fmt.Fprintf(r.stdout, "  %-4s β=%-7s %.5f + %.5f = %.5f%s\n", c.Normalization, formatFloat(c.Beta), c.OneHot, c.Equal, c.Score, mark)
	}
	cfg.Beta, r.norm = cands[best].Beta, cands[best].Normalization
	if cfg.BetaSelect.Report != "" {
		b, err := json.MarshalIndent(rep, "", " ")
		if err != nil {
			return err
		}
		if err := atomicfile.Write(cfg.BetaSelect.Report, 0o644, func(w io.Writer) error {
			_, err := w.Write(append(b, '\n'))
			return err
		}); err != nil {
			return fmt.Errorf("--beta-report: %w", err)
		}
	}
	return nil
}

// subtract returns the sums of all less those of part.
func subtract(all, part *react.Accumulator) (*react.Accumulator, error) {
	n, s, g := all.State()
	pn, ps, pg := part.State()
	if pn >= n {
		return nil, fmt.Errorf("%d held-out samples of %d leave none to fit", pn, n)
	}
	s2, g2 := make([]float64, len(s)), make([]float64, len(g))
	for i := range s {
		s2[i] = s[i] - ps[i]
	}
	for i := range g {
		g2[i] = g[i] - pg[i]
	}
	yy, ok := all.SumSquares()
	pyy, pok := part.SumSquares()
	if ok && pok {
		return react.RestoreAccumulatorSquares(all.D(), n-pn, s2, g2, max(yy-pyy, 0))
	}
	return react.RestoreAccumulator(all.D(), n-pn, s2, g2)
}
