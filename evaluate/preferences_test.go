package evaluate

import (
	"math"
	"strings"
	"testing"
)

func TestParseSet(t *testing.T) {
	tasks := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		spec   string
		focus  []string
		labels []string
		want   [][]float64
	}{
		{"equal", tasks, []string{"equal"}, [][]float64{{0.25, 0.25, 0.25, 0.25}}},
		{"one-hot", tasks, []string{"a=1", "b=1", "c=1", "d=1"},
			[][]float64{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}},
		{"priority", tasks, []string{"a=0.5, others 0.167", "b=0.5, others 0.167", "c=0.5, others 0.167", "d=0.5, others 0.167"},
			[][]float64{{0.5, 1. / 6, 1. / 6, 1. / 6}, {1. / 6, 0.5, 1. / 6, 1. / 6}, {1. / 6, 1. / 6, 0.5, 1. / 6}, {1. / 6, 1. / 6, 1. / 6, 0.5}}},
		{"priority:0.7", tasks, nil, [][]float64{{0.7, 0.1, 0.1, 0.1}, {0.1, 0.7, 0.1, 0.1}, {0.1, 0.1, 0.7, 0.1}, {0.1, 0.1, 0.1, 0.7}}},
		{"pairwise:c,a:3", []string{"c", "a"}, []string{"c=1,a=0", "c=0.5,a=0.5", "c=0,a=1"},
			[][]float64{{0, 0, 1, 0}, {0.5, 0, 0.5, 0}, {1, 0, 0, 0}}},
		// m = 1: the three corners, 60% on the chosen task, 40% on the fourth.
		{"simplex:a,b,c:1", []string{"a", "b", "c"}, []string{"a=1,b=0,c=0", "a=0,b=1,c=0", "a=0,b=0,c=1"},
			[][]float64{{0.6, 0, 0, 0.4}, {0, 0.6, 0, 0.4}, {0, 0, 0.6, 0.4}}},
		{"simplex:a,b,c:2:1", []string{"a", "b", "c"}, nil,
			[][]float64{{1, 0, 0, 0}, {0.5, 0.5, 0, 0}, {0.5, 0, 0.5, 0}, {0, 1, 0, 0}, {0, 0.5, 0.5, 0}, {0, 0, 1, 0}}},
		{"list:a=3,b=1;d=2", tasks, []string{"a=0.75,b=0.25", "d=1"}, [][]float64{{0.75, 0.25, 0, 0}, {0, 0, 0, 1}}},
	} {
		s, err := ParseSet(tc.spec, tasks)
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if strings.Join(s.Focus, ",") != strings.Join(tc.focus, ",") {
			t.Errorf("%s: focus %v, want %v", tc.spec, s.Focus, tc.focus)
		}
		if len(s.Points) != len(tc.want) {
			t.Errorf("%s: %d points, want %d", tc.spec, len(s.Points), len(tc.want))
			continue
		}
		for k, pt := range s.Points {
			if tc.labels != nil && pt.Label != tc.labels[k] {
				t.Errorf("%s: point %d label %q, want %q", tc.spec, k, pt.Label, tc.labels[k])
			}
			for i, w := range pt.P.Weights() {
				if math.Abs(w-tc.want[k][i]) > 1e-12 {
					t.Errorf("%s: point %d weights %v, want %v", tc.spec, k, pt.P.Weights(), tc.want[k])
					break
				}
			}
		}
	}
	// The default simplex grid has (m+1)(m+2)/2 = 21 points.
	if s, err := ParseSet("simplex:a,b,c", tasks); err != nil || len(s.Points) != 21 {
		t.Errorf("simplex default: %d points, %v", len(s.Points), err)
	}
}

func TestParseSetErrors(t *testing.T) {
	tasks := []string{"a", "b", "c"}
	for _, tc := range []struct{ spec, want string }{
		{"uniform", `unknown kind "uniform"`},
		{"equal:1", "takes no arguments"},
		{"priority:1", "strictly between 0 and 1"},
		{"pairwise:a", "want 2 tasks"},
		{"pairwise:a,z", `unknown task "z"`},
		{"pairwise:a,a", `task "a" twice`},
		{"pairwise:a,b:1", "integer ≥ 2"},
		{"simplex:a,b", "want 3 tasks"},
		{"simplex:a,b,c:0", "integer ≥ 1"},
		{"simplex:a,b,c:3:1.5", "in (0, 1]"},
		{"simplex:a,b,c:3:0.6", "there are none"},
		{"list:a=-1", "a=-1"},
		{"list:", "want list:P"},
	} {
		_, err := ParseSet(tc.spec, tasks)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSet(%q) = %v, want an error with %q", tc.spec, err, tc.want)
		}
	}
}
