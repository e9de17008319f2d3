package evaluate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/react"
)

// Point is one preference of a Set, with the label that tables show.
type Point struct {
	Label string
	P     react.Preference
}

// Set is a named set of preferences, summarised together: its hypervolume
// and mean uniformity are computed over the tasks it focuses on (@k) and
// over every task (@T).
type Set struct {
	Name   string   // as given: "equal", "pairwise:a,b:11", ...
	Kind   string   // equal, priority, one-hot, pairwise, simplex or list
	Focus  []string // the tasks the set's preferences weigh; every task for equal, priority, one-hot and list
	Points []Point
}

// Defaults of the preference sets.
const (
	// DefaultPriority is the weight of the prioritised task in a priority
	// set; the others share the rest evenly.
	DefaultPriority = 0.5
	// DefaultPairwisePoints is the number of points of a pairwise sweep,
	// both one-hot ends included.
	DefaultPairwisePoints = 11
	// DefaultSimplexSteps is the grid resolution m of a simplex set: the
	// points (i, j, m−i−j)/m, (m+1)(m+2)/2 of them.
	DefaultSimplexSteps = 5
	// DefaultSimplexShare is the share of the weight a simplex set puts on
	// its three tasks (the paper's 60%); the rest is spread evenly.
	DefaultSimplexShare = 0.6
)

// SetHelp documents the grammar of ParseSet.
const SetHelp = `equal                  every task alike
priority[:W]           each task in turn at W (default 0.5), the others sharing the rest evenly
one-hot                each task alone
pairwise:A,B[:K]       K points (default 11) from A alone to B alone, the other tasks at 0
simplex:A,B,C[:M[:S]]  share S (default 0.6, the paper's) on A, B, C over the grid (i,j,M−i−j)/M
                       (M default 5: 21 points), the rest spread evenly over the other tasks
list:P[;P...]          explicit preferences, e.g. list:a=0.7,b=0.3;a=1`

// ParseSet parses one preference set over tasks (see SetHelp).
func ParseSet(spec string, tasks []string) (Set, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	var args []string
	if rest != "" {
		args = strings.Split(rest, ":")
	}
	var (
		focus  []string
		points []Point
		err    error
	)
	switch kind {
	case "equal":
		focus, points, err = equalSet(args, tasks)
	case "one-hot":
		focus, points, err = oneHotSet(args, tasks)
	case "priority":
		focus, points, err = prioritySet(args, tasks)
	case "pairwise":
		focus, points, err = pairwiseSet(args, tasks)
	case "simplex":
		focus, points, err = simplexSet(args, tasks)
	case "list":
		focus, points, err = listSet(rest, tasks)
	default:
		err = fmt.Errorf("unknown kind %q (want equal, priority, one-hot, pairwise, simplex or list)", kind)
	}
	if err != nil {
		return Set{}, fmt.Errorf("preference set %q: %s", spec, err)
	}
	return Set{Name: spec, Kind: kind, Focus: focus, Points: points}, nil
}

// equalSet is the set "equal": every task alike.
func equalSet(args, tasks []string) ([]string, []Point, error) {
	if len(args) != 0 {
		return nil, nil, errors.New("equal takes no arguments")
	}
	return tasks, []Point{{"equal", react.Uniform(tasks)}}, nil
}

// oneHotSet is the set "one-hot": each task alone.
func oneHotSet(args, tasks []string) ([]string, []Point, error) {
	if len(args) != 0 {
		return nil, nil, errors.New("one-hot takes no arguments")
	}
	var points []Point
	for _, t := range tasks {
		p, err := react.OneHot(tasks, t)
		if err != nil {
			return nil, nil, err
		}
		points = append(points, Point{t + "=1", p})
	}
	return tasks, points, nil
}

// prioritySet is the set "priority[:W]": each task in turn at W, the
// others sharing the rest evenly.
func prioritySet(args, tasks []string) ([]string, []Point, error) {
	w := DefaultPriority
	if len(args) > 1 {
		return nil, nil, errors.New("want priority[:W]")
	}
	if len(args) == 1 {
		v, err := strconv.ParseFloat(args[0], 64)
		if err != nil || !(v > 0 && v < 1) {
			return nil, nil, fmt.Errorf("weight %q: want a number strictly between 0 and 1", args[0])
		}
		w = v
	}
	if len(tasks) < 2 {
		return nil, nil, errors.New("needs at least 2 tasks")
	}
	var points []Point
	other := (1 - w) / float64(len(tasks)-1)
	for _, t := range tasks {
		ws := make([]float64, len(tasks))
		for i, u := range tasks {
			ws[i] = other
			if u == t {
				ws[i] = w
			}
		}
		p, err := react.NewPreference(tasks, ws)
		if err != nil {
			return nil, nil, err
		}
		points = append(points, Point{fmt.Sprintf("%s=%g, others %.3g", t, w, other), p})
	}
	return tasks, points, nil
}

// pairwiseSet is the set "pairwise:A,B[:K]": K points from A alone to B
// alone, the other tasks at 0.
func pairwiseSet(args, tasks []string) ([]string, []Point, error) {
	if len(args) < 1 || len(args) > 2 {
		return nil, nil, errors.New("want pairwise:A,B[:K]")
	}
	focus, err := focusTasks(args[0], tasks, 2)
	if err != nil {
		return nil, nil, err
	}
	k := DefaultPairwisePoints
	if len(args) == 2 {
		if k, err = strconv.Atoi(args[1]); err != nil || k < 2 {
			return nil, nil, fmt.Errorf("points %q: want an integer ≥ 2", args[1])
		}
	}
	var points []Point
	for i := range k {
		a := 1 - float64(i)/float64(k-1)
		p, err := weightsOf(tasks, map[string]float64{focus[0]: a, focus[1]: 1 - a})
		if err != nil {
			return nil, nil, err
		}
		points = append(points, Point{fmt.Sprintf("%s=%.3g,%s=%.3g", focus[0], a, focus[1], 1-a), p})
	}
	return focus, points, nil
}

// simplexSet is the set "simplex:A,B,C[:M[:S]]": share S on A, B and C
// over the grid (i, j, M−i−j)/M, the rest spread evenly over the other
// tasks.
func simplexSet(args, tasks []string) ([]string, []Point, error) {
	if len(args) < 1 || len(args) > 3 {
		return nil, nil, errors.New("want simplex:A,B,C[:M[:S]]")
	}
	focus, err := focusTasks(args[0], tasks, 3)
	if err != nil {
		return nil, nil, err
	}
	m, share := DefaultSimplexSteps, DefaultSimplexShare
	if len(args) >= 2 {
		if m, err = strconv.Atoi(args[1]); err != nil || m < 1 {
			return nil, nil, fmt.Errorf("steps %q: want an integer ≥ 1", args[1])
		}
	}
	if len(args) == 3 {
		if share, err = strconv.ParseFloat(args[2], 64); err != nil || !(share > 0 && share <= 1) {
			return nil, nil, fmt.Errorf("share %q: want a number in (0, 1]", args[2])
		}
	}
	if share < 1 && len(tasks) == 3 {
		return nil, nil, fmt.Errorf("share %g < 1 leaves weight for other tasks, but there are none", share)
	}
	points, err := simplexPoints(tasks, focus, m, share)
	return focus, points, err
}

// simplexPoints are the points of a simplex set of m steps with share on
// the three focus tasks, in the order i = m…0, j = m−i…0.
func simplexPoints(tasks, focus []string, m int, share float64) ([]Point, error) {
	rest := 0.0
	if len(tasks) > 3 {
		rest = (1 - share) / float64(len(tasks)-3)
	}
	var points []Point
	for i := m; i >= 0; i-- {
		for j := m - i; j >= 0; j-- {
			q := [3]float64{float64(i) / float64(m), float64(j) / float64(m), float64(m-i-j) / float64(m)}
			w := map[string]float64{}
			for _, t := range tasks {
				w[t] = rest
			}
			for k, t := range focus {
				w[t] = share * q[k]
			}
			p, err := weightsOf(tasks, w)
			if err != nil {
				return nil, err
			}
			points = append(points, Point{fmt.Sprintf("%s=%.3g,%s=%.3g,%s=%.3g", focus[0], q[0], focus[1], q[1], focus[2], q[2]), p})
		}
	}
	return points, nil
}

// listSet is the set "list:P[;P...]": the preferences given, each in
// react.ParsePreference's grammar.
func listSet(rest string, tasks []string) ([]string, []Point, error) {
	if rest == "" {
		return nil, nil, errors.New("want list:P[;P...]")
	}
	var points []Point
	for _, one := range strings.Split(rest, ";") {
		p, err := react.ParsePreference(one, tasks)
		if err != nil {
			return nil, nil, err
		}
		points = append(points, Point{p.Rounded().String(), p})
	}
	return tasks, points, nil
}

// focusTasks parses a comma-separated list of want distinct known tasks.
func focusTasks(list string, tasks []string, want int) ([]string, error) {
	focus := strings.Split(list, ",")
	if len(focus) != want {
		return nil, fmt.Errorf("want %d tasks, got %q", want, list)
	}
	for i, t := range focus {
		if !slices.Contains(tasks, t) {
			return nil, fmt.Errorf("unknown task %q (known: %s)", t, strings.Join(tasks, ", "))
		}
		if slices.Contains(focus[:i], t) {
			return nil, fmt.Errorf("task %q twice", t)
		}
	}
	return focus, nil
}

// weightsOf builds a preference from weights by task name.
func weightsOf(tasks []string, w map[string]float64) (react.Preference, error) {
	ws := make([]float64, len(tasks))
	for i, t := range tasks {
		ws[i] = w[t]
	}
	return react.NewPreference(tasks, ws)
}
