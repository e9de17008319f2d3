package evaluate

import (
	"fmt"
	"io"
	"strings"
)

// model names a row's model for tables: "Individual", "Merged TA",
// "ReACT TA", "naive TA", "polar TA", "oracle TA".
func model(backbone, method string) string {
	switch method {
	case MethodIndividual:
		return "Individual"
	case MethodMerged:
		return "Merged " + backbone
	case AggReACT:
		return "ReACT " + backbone
	}
	return method + " " + backbone
}

// setting describes a correction's options, "β=0.1 sum", or "".
func setting(beta *float64, norm string) string {
	if beta == nil {
		return ""
	}
	return fmt.Sprintf("β=%g %s", *beta, norm)
}

// WriteMarkdown writes the result as two Markdown tables: the accuracy (%)
// of every row on every task, with the mean and the mean normalised
// accuracy, then the summaries of the preference sets.
func (r *Result) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Test accuracy (%%) per task (%s samples); normalised = mean of accuracy / Individual accuracy.\n\n", sampleCounts(r))
	fmt.Fprintf(&b, "| model | setting | preference | %s | average | normalised |\n", strings.Join(r.Tasks, " | "))
	b.WriteString("|---|---|---|" + strings.Repeat("---|", len(r.Tasks)+2) + "\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s |", model(row.Backbone, row.Method), setting(row.Beta, row.Norm), row.Label)
		for _, a := range row.Accuracy {
			fmt.Fprintf(&b, " %.1f |", 100*a)
		}
		fmt.Fprintf(&b, " %.1f | %.1f |\n", 100*row.Mean, 100*row.NormMean)
	}
	if len(r.Summaries) > 0 {
		b.WriteString("\nPreference sets, on normalised accuracies: HV with the origin as reference over the set's tasks (@k) and all T tasks (@T); U = 1 − KL(ŝ ‖ uniform) averaged over the points that weigh two or more of those tasks; \"beats merged\" counts the points whose p-weighted accuracy exceeds the uncorrected backbone's.\n\n")
		b.WriteString("| model | setting | set | points | HV@k | HV@T | U@k | U@T | beats merged |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range r.Summaries {
			beats := "—"
			if s.Method != MethodMerged {
				beats = fmt.Sprintf("%d/%d", s.Beats, s.Points)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %.4f | %.4f | %s | %s | %s |\n", model(s.Backbone, s.Method),
				setting(s.Beta, s.Norm), s.Set, s.Points, s.HVk, s.HVT, opt(s.Uk), opt(s.UT), beats)
		}
	}
	if len(r.Linear) > 0 {
		b.WriteString("\nThe best linear map backbone → expert (least squares, no intercept) on the evaluation features: R² = 1 − residual / total variance of the expert features, fitted and scored on every sample (in-sample) and on seeded random halves, each scored on the other (held-out), with the least-squares map and with the best ridge of a grid (relative to the mean diagonal of Σ z zᵀ).\n\n")
		b.WriteString("| backbone | task | samples | R² in-sample | R² held-out | R² held-out, ridge | ridge |\n|---|---|---|---|---|---|---|\n")
		for _, l := range r.Linear {
			fmt.Fprintf(&b, "| %s | %s | %d | %.3f | %.3f | %.3f | %g |\n", l.Backbone, l.Task, l.Samples, l.InSample, l.Heldout, l.Ridged, l.Ridge)
		}
	}
	if len(r.Served) > 0 {
		b.WriteString("\nServed through the sidecar: each task's controllable model at each preference (the react-preference header), against the evaluation at the same preference; Δ logit is the largest |served − evaluated| over every logit, relative to the largest logit.\n\n")
		b.WriteString("| components | set | preference | task | model | evaluated | served | max Δ logit | relative | predictions differ |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range r.Served {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.1f | %.1f | %.2g | %.2g | %d |\n", c.Backbone, c.Set, c.Label,
				c.Task, c.Model, 100*c.Evaluated, 100*c.Served, c.MaxDiff, c.Relative(), c.Differ)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func opt(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.4f", *v)
}

func sampleCounts(r *Result) string {
	total := 0
	parts := make([]string, len(r.Tasks))
	for i, t := range r.Tasks {
		parts[i] = fmt.Sprintf("%s %d", t, r.Samples[i])
		total += r.Samples[i]
	}
	return fmt.Sprintf("%d: %s", total, strings.Join(parts, ", "))
}
