package decide

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText writes r as the table calibrate experiment report prints.
func (r *Report) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	what := map[string]string{"label": "labels", "reward": "rewards"}[r.Kind]
	if r.Task != "" {
		what += " of task " + r.Task
	}
	model := "every model"
	if r.Model != "" {
		model = "model " + r.Model
	}
	fmt.Fprintf(b, "experiment %s, %s: %s, from %s\n", r.Experiment, model, what, plural(len(r.Sources), "source"))
	each := fmt.Sprintf("%s per comparison", num(r.AlphaEach))
	if r.Comparisons > 1 {
		each = fmt.Sprintf("%s for each of %d comparisons", num(r.AlphaEach), r.Comparisons)
	}
	fmt.Fprintf(b, "control %s; α = %s (%s), τ = %s; a decision needs %s outcomes in each arm\n\n",
		r.Control, num(r.Alpha), each, num(r.Tau), num(r.MinOutcomes))

	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "arm\tweight\toutcomes\texpected\tmean\talways-valid interval\tvs %s\talways-valid interval\tp-value\tdecision\n", r.Control)
	for _, a := range r.Arms {
		diff, interval, p := "", "", ""
		if c := a.VsControl; c != nil {
			diff = signed(c.Diff)
			interval = "-"
			if !math.IsInf(float64(c.Lower), 0) && !math.IsInf(float64(c.Upper), 0) {
				interval = "[" + signed(c.Lower) + ", " + signed(c.Upper) + "]"
			}
			p = strconv.FormatFloat(c.PValue, 'g', 3, 64)
		}
		mean := "-"
		if !math.IsNaN(float64(a.Lower)) {
			mean = "[" + fixed(float64(a.Lower), 4) + ", " + fixed(float64(a.Upper), 4) + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, num(a.Weight), num(a.N), fixed(a.Expected, 1),
			fixed(float64(a.Mean), 4), mean, diff, interval, p, a.Decision)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	sr := r.SampleRatio
	verdict := "consistent with the weights"
	if sr.Mismatch {
		verdict = "MISMATCH: the arms' outcome counts do not follow their weights; check the assignment and the feedback's path before trusting any comparison"
	}
	fmt.Fprintf(b, "\nsample ratio: χ² = %s with %s, p = %s (a mismatch when p < %s): %s\n",
		fixed(sr.ChiSquare, 3), plural(sr.DF, "degree of freedom"), strconv.FormatFloat(sr.PValue, 'g', 3, 64), num(sr.Threshold), verdict)
	fmt.Fprintf(b, "decision: %s\n", r.Decision)
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	return b.Flush()
}

// num writes x in its shortest form.
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// fixed writes x with d decimals, or "-" for NaN.
func fixed(x float64, d int) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsInf(x, 0):
		return strings.Replace(fmt.Sprint(x), "+", "", 1)
	}
	return strconv.FormatFloat(x, 'f', d, 64)
}

// signed writes x with its sign and 4 decimals.
func signed(f Float) string {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fixed(x, 4)
	}
	return fmt.Sprintf("%+.4f", x)
}

// plural writes n and the noun, with an s for n ≠ 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasPrefix(noun, "degree") {
		return fmt.Sprintf("%d degrees%s", n, strings.TrimPrefix(noun, "degree"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
