package evaluate

import (
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
	fail := func(format string, args ...any) (Set, error) {
		return Set{}, fmt.Errorf("preference set %q: %s", spec, fmt.Sprintf(format, args...))
	}
	parts := []string{}
	if rest != "" {
		parts = strings.Split(rest, ":")
	}
	switch kind {
	case "equal":
		if len(parts) != 0 {
			return fail("equal takes no arguments")
		}
		return Set{Name: spec, Kind: kind, Focus: tasks, Points: []Point{{"equal", react.Uniform(tasks)}}}, nil
	case "one-hot":
		if len(parts) != 0 {
			return fail("one-hot takes no arguments")
		}
		s := Set{Name: spec, Kind: kind, Focus: tasks}
		for _, t := range tasks {
			p, err := react.OneHot(tasks, t)
			if err != nil {
				return fail("%v", err)
			}
			s.Points = append(s.Points, Point{t + "=1", p})
		}
		return s, nil
	case "priority":
		w := DefaultPriority
		if len(parts) > 1 {
			return fail("want priority[:W]")
		}
		if len(parts) == 1 {
			v, err := strconv.ParseFloat(parts[0], 64)
			if err != nil || !(v > 0 && v < 1) {
				return fail("weight %q: want a number strictly between 0 and 1", parts[0])
			}
			w = v
		}
		if len(tasks) < 2 {
			return fail("needs at least 2 tasks")
		}
		s := Set{Name: spec, Kind: kind, Focus: tasks}
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
				return fail("%v", err)
			}
			s.Points = append(s.Points, Point{fmt.Sprintf("%s=%g, others %.3g", t, w, other), p})
		}
		return s, nil
	case "pairwise":
		if len(parts) < 1 || len(parts) > 2 {
			return fail("want pairwise:A,B[:K]")
		}
		focus, err := focusTasks(parts[0], tasks, 2)
		if err != nil {
			return fail("%v", err)
		}
		k := DefaultPairwisePoints
		if len(parts) == 2 {
			if k, err = strconv.Atoi(parts[1]); err != nil || k < 2 {
				return fail("points %q: want an integer ≥ 2", parts[1])
			}
		}
		s := Set{Name: spec, Kind: kind, Focus: focus}
		for i := range k {
			a := 1 - float64(i)/float64(k-1)
			p, err := weightsOf(tasks, map[string]float64{focus[0]: a, focus[1]: 1 - a})
			if err != nil {
				return fail("%v", err)
			}
			s.Points = append(s.Points, Point{fmt.Sprintf("%s=%.3g,%s=%.3g", focus[0], a, focus[1], 1-a), p})
		}
		return s, nil
	case "simplex":
		if len(parts) < 1 || len(parts) > 3 {
			return fail("want simplex:A,B,C[:M[:S]]")
		}
		focus, err := focusTasks(parts[0], tasks, 3)
		if err != nil {
			return fail("%v", err)
		}
		m, share := DefaultSimplexSteps, DefaultSimplexShare
		if len(parts) >= 2 {
			if m, err = strconv.Atoi(parts[1]); err != nil || m < 1 {
				return fail("steps %q: want an integer ≥ 1", parts[1])
			}
		}
		if len(parts) == 3 {
			if share, err = strconv.ParseFloat(parts[2], 64); err != nil || !(share > 0 && share <= 1) {
				return fail("share %q: want a number in (0, 1]", parts[2])
			}
		}
		if share < 1 && len(tasks) == 3 {
			return fail("share %g < 1 leaves weight for other tasks, but there are none", share)
		}
		s := Set{Name: spec, Kind: kind, Focus: focus}
		rest := 0.0
		if len(tasks) > 3 {
			rest = (1 - share) / float64(len(tasks)-3)
		}
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
					return fail("%v", err)
				}
				s.Points = append(s.Points, Point{fmt.Sprintf("%s=%.3g,%s=%.3g,%s=%.3g", focus[0], q[0], focus[1], q[1], focus[2], q[2]), p})
			}
		}
		return s, nil
	case "list":
		if rest == "" {
			return fail("want list:P[;P...]")
		}
		s := Set{Name: spec, Kind: kind, Focus: tasks}
		for _, one := range strings.Split(rest, ";") {
			p, err := react.ParsePreference(one, tasks)
			if err != nil {
				return fail("%v", err)
			}
			s.Points = append(s.Points, Point{p.Rounded().String(), p})
		}
		return s, nil
	}
	return fail("unknown kind %q (want equal, priority, one-hot, pairwise, simplex or list)", kind)
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
