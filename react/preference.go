package react

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Preference is a preference p over an ordered list of tasks: one weight per
// task, each finite and ≥ 0, summing to 1. The zero value is the empty
// preference, which no solver accepts.
//
// A Preference is immutable; the slices it returns are copies.
type Preference struct {
	tasks   []string
	weights []float64
}

// ErrUnknownTask is wrapped by the errors that name a task a preference or
// a solver does not have; their messages list the known tasks.
var ErrUnknownTask = errors.New("unknown task")

// ParsePreference parses a preference spec against the ordered task list
// tasks (usually Components.TaskNames()).
//
// The grammar is
//
//	spec   = entry { "," entry }
//	entry  = task "=" weight
//
// where task is one of tasks and weight is a plain decimal number ≥ 0:
// digits with an optional fraction and an optional exponent, matching
// WeightPattern ("1", "0.25", ".5", "2.", "1e-3", "5E+2"). Signs, digit
// separators, hexadecimal floats, "Inf" and "NaN", which strconv.ParseFloat
// would accept, are refused, so that clients in other languages agree on
// what a spec means. Whitespace around tasks and weights is ignored. Tasks that the spec omits weigh 0. The
// weights must have a positive sum and are normalised to sum to 1.
//
// An empty spec, an empty entry, an entry without '=', an unknown or
// duplicate task, a negative weight, a weight that is not a plain decimal or
// overflows float64, and a zero sum are errors that name the problem, for example
//
//	preference "cars=0.6,foo=1": unknown task "foo" (known: cars, dtd)
//
// An unknown task's error wraps ErrUnknownTask.
func ParsePreference(spec string, tasks []string) (Preference, error) {
	fail := func(format string, args ...any) (Preference, error) {
		return Preference{}, fmt.Errorf("preference %q: %s", spec, fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(spec) == "" {
		return fail("empty preference: want task=weight[,task=weight...]")
	}
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t] = i
	}
	weights := make([]float64, len(tasks))
	seen := make([]bool, len(tasks))
	for i, entry := range strings.Split(spec, ",") {
		name, value, ok := strings.Cut(entry, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case strings.TrimSpace(entry) == "":
			return fail("entry %d is empty: want task=weight", i+1)
		case !ok:
			return fail("entry %q has no '=': want task=weight", strings.TrimSpace(entry))
		case name == "":
			return fail("entry %q has no task name", strings.TrimSpace(entry))
		}
		k, known := index[name]
		if !known {
			return Preference{}, fmt.Errorf("preference %q: %w %q (known: %s)", spec, ErrUnknownTask, name, strings.Join(tasks, ", "))
		}
		if seen[k] {
			return fail("duplicate task %q", name)
		}
		seen[k] = true
		w, err := parseWeight(value)
		if err != nil {
			return fail("task %q: %v", name, err)
		}
		weights[k] = w
	}
	p, err := newNormalized(tasks, weights)
	if err != nil {
		return fail("%v", err)
	}
	return p, nil
}

// WeightPattern is the syntax of a weight in a preference spec: a plain
// decimal number without a sign. Every client language parses these the same
// way.
var WeightPattern = regexp.MustCompile(`^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// parseWeight parses one weight: a plain decimal number ≥ 0 (WeightPattern)
// whose value is finite.
func parseWeight(s string) (float64, error) {
	if s == "" {
		return 0, errors.New("missing weight")
	}
	if !WeightPattern.MatchString(s) {
		if rest, neg := strings.CutPrefix(s, "-"); neg && WeightPattern.MatchString(rest) {
			return 0, fmt.Errorf("weight %q is negative: want a finite number ≥ 0", s)
		}
		return 0, fmt.Errorf("weight %q is not a plain decimal number: want digits with an optional fraction and exponent, such as 0.25 or 1e-3", s)
	}
	w, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(w, 0) {
		// The syntax admits nothing but a finite value or an overflow.
		return 0, fmt.Errorf("weight %q is out of range", s)
	}
	return w, nil
}

// NewPreference returns the preference over tasks with the given weights,
// normalised to sum to 1. The weights must be finite, ≥ 0, with a positive
// sum, and tasks must be unique.
func NewPreference(tasks []string, weights []float64) (Preference, error) {
	if len(tasks) != len(weights) {
		return Preference{}, fmt.Errorf("preference: %d tasks but %d weights", len(tasks), len(weights))
	}
	seen := make(map[string]bool, len(tasks))
	for i, t := range tasks {
		if seen[t] {
			return Preference{}, fmt.Errorf("preference: duplicate task %q", t)
		}
		seen[t] = true
		if w := weights[i]; math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return Preference{}, fmt.Errorf("preference: task %q: weight %v: want a finite number ≥ 0", t, w)
		}
	}
	w := make([]float64, len(weights))
	for i, v := range weights {
		w[i] = v + 0
	}
	p, err := newNormalized(tasks, w)
	if err != nil {
		return Preference{}, fmt.Errorf("preference: %w", err)
	}
	return p, nil
}

// newNormalized normalises w (finite, ≥ 0) in place to sum to 1 and returns
// the preference that owns it.
//
// Weights that already sum to 1 up to rounding are left as they are, so that
// normalisation is idempotent: the canonical String() of a preference
// re-parses to bit-identical weights. Dividing n weights by their sum leaves
// the computed sum of the quotients within about 1.5·n·ε of 1 (ε/2 per
// quotient plus (n−1)·ε for the summation), so the tolerance 2·n·ε recognises
// every output of this function as normalised.
func newNormalized(tasks []string, w []float64) (Preference, error) {
	sum := 0.0
	for _, v := range w {
		sum += v
	}
	if math.IsInf(sum, 0) {
		// The weights are finite but their sum overflows: scale by the largest
		// first.
		m := 0.0
		for _, v := range w {
			m = math.Max(m, v)
		}
		sum = 0
		for i := range w {
			w[i] /= m
			sum += w[i]
		}
	}
	if !(sum > 0) {
		return Preference{}, errors.New("weights sum to 0: want at least one positive weight")
	}
	if math.Abs(sum-1) > 2*float64(len(w))*epsilon {
		for i := range w {
			w[i] /= sum
		}
	}
	return Preference{tasks: append([]string(nil), tasks...), weights: w}, nil
}

// epsilon is the float64 machine epsilon, 2⁻⁵².
const epsilon = 0x1p-52

// OneHot returns the preference that puts all weight on task.
func OneHot(tasks []string, task string) (Preference, error) {
	w := make([]float64, len(tasks))
	found := false
	for i, t := range tasks {
		if t == task {
			w[i] = 1
			found = true
		}
	}
	if !found {
		return Preference{}, fmt.Errorf("one-hot preference: unknown task %q (known: %s)", task, strings.Join(tasks, ", "))
	}
	return NewPreference(tasks, w)
}

// Uniform returns the preference with equal weights 1/len(tasks). It returns
// the empty preference when tasks is empty.
func Uniform(tasks []string) Preference {
	if len(tasks) == 0 {
		return Preference{}
	}
	w := make([]float64, len(tasks))
	for i := range w {
		w[i] = 1 / float64(len(tasks))
	}
	return Preference{tasks: append([]string(nil), tasks...), weights: w}
}

// RoundingUnits is the number of equal parts Rounded divides the unit
// weight into: rounded weights are multiples of 1/RoundingUnits = 10⁻⁶.
const RoundingUnits = 1_000_000

// Rounded returns p with every weight rounded to a multiple of 10⁻⁶ such
// that the rounded weights still sum to exactly 1: each weight is rounded
// down, and the units that leaves over go to the tasks with the largest
// remainders, ties to the earlier task (the largest-remainder method). A
// weight below 10⁻⁶ may round to 0, which drops the task.
//
// The canonical form of a rounded preference is short (at most six decimals
// per weight, "a=0.333334,b=0.333333,c=0.333333") and stable: it parses
// back to bit-identical weights, which round to themselves. The sidecar
// echoes it and keys its W_p cache by it, so that every spelling of one
// preference shares one W_p, solved from the rounded weights. Rounding
// moves each weight by less than 10⁻⁶, and W_p moves accordingly little.
func (p Preference) Rounded() Preference { return p.RoundedTo(RoundingUnits) }

// RoundedTo returns p with each weight rounded to a multiple of 1/units by
// the rule of Rounded: down, then the units lost given to the largest
// remainders (ties to the earlier task), so that the weights sum to
// exactly 1. A coarse grid (units 20: steps of 0.05) makes nearby
// preferences equal; a weight may round to 0 and drop out. units must be
// positive.
func (p Preference) RoundedTo(units int) Preference {
	if p.IsZero() || units < 1 {
		return p
	}
	weights := make([]int64, len(p.weights))
	rem := make([]float64, len(p.weights))
	left := int64(units)
	for i, w := range p.weights {
		x := w * float64(units)
		weights[i] = int64(math.Floor(x))
		rem[i] = x - float64(weights[i])
		left -= weights[i]
	}
	// 0 ≤ left < len(p.weights) up to rounding: hand out the units left.
	for ; left > 0; left-- {
		best := -1
		for i, r := range rem {
			if r >= 0 && (best < 0 || r > rem[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		weights[best]++
		rem[best] = -1
	}
	w := make([]float64, len(weights))
	for i, u := range weights {
		w[i] = float64(u) / float64(units)
	}
	return Preference{tasks: append([]string(nil), p.tasks...), weights: w}
}

// IsZero reports whether p is the empty preference.
func (p Preference) IsZero() bool { return len(p.tasks) == 0 }

// Tasks returns the ordered task list of p.
func (p Preference) Tasks() []string { return append([]string(nil), p.tasks...) }

// Weights returns the normalised weights, aligned with Tasks().
func (p Preference) Weights() []float64 { return append([]float64(nil), p.weights...) }

// Weight returns the normalised weight of task, or 0 if p does not name it.
func (p Preference) Weight(task string) float64 {
	for i, t := range p.tasks {
		if t == task {
			return p.weights[i]
		}
	}
	return 0
}

// String returns the canonical form of p: task=weight pairs separated by
// ',', in task order, omitting zero weights, with the normalised weights
// formatted by strconv.FormatFloat(w, 'g', -1, 64). Two specs that denote the
// same normalised weights have the same canonical form, and the canonical form
// re-parses to the same weights, so it serves as a cache key and is what the
// sidecar reports to clients. The empty preference formats as "".
func (p Preference) String() string {
	var b strings.Builder
	for i, t := range p.tasks {
		if p.weights[i] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(p.weights[i], 'g', -1, 64))
	}
	return b.String()
}
