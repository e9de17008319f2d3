package decide

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/experiment/sequential"
)

// mixture is the normal-mixture likelihood ratio of a difference delta0,
// written out here from its formula (Johari, Koomen, Pekelis and Walsh,
// "Peeking at A/B tests", KDD 2017), with the variances computed from
// the sums by the textbook formula.
func mixture(c, a sequential.Sample, tau, delta0 float64) float64 {
	variance := func(s sequential.Sample) float64 {
		m := s.Sum / s.N
		return (s.SumSq - s.N*m*m) / (s.N - 1)
	}
	v := variance(c)/c.N + variance(a)/a.N
	d := a.Sum/a.N - c.Sum/c.N - delta0
	t2 := tau * tau
	return math.Sqrt(v/(v+t2)) * math.Exp(t2*d*d/(2*v*(v+t2)))
}

func outcomesOfSamples(kind string, samples map[string]sequential.Sample) Outcomes {
	o := NewOutcomes()
	for arm, s := range samples {
		o.Samples[ArmKind{arm, kind}] = s
	}
	o.Experiments["e"] = true
	return o
}

// TestDecideNumbers: the recorded replicas' labels, and three arms of
// rewards, against the formulas written out again: the p-value is 1/Λ(0),
// each comparison's bounds are where Λ reaches k/α (α/k each), the mean's
// where the one-sample ratio reaches 1/α, and the sample ratio's χ² and
// its upper tail in closed form.
func TestDecideNumbers(t *testing.T) {
	labels := map[string]sequential.Sample{"merged": {N: 1210, Sum: 862, SumSq: 862}, "react": {N: 1190, Sum: 914, SumSq: 914}}
	r, err := Decide(Config{Selector: Selector{Experiment: "e"}, Arms: []Arm{{"merged", 50}, {"react", 50}}}, outcomesOfSamples("label", labels))
	if err != nil {
		t.Fatal(err)
	}
	c := r.Arms[1].VsControl
	if p := 1 / mixture(labels["merged"], labels["react"], 0.05, 0); math.Abs(c.PValue-p) > 1e-12 {
		t.Errorf("p-value %v, 1/Λ(0) = %v", c.PValue, p)
	}
	for _, b := range []Float{c.Lower, c.Upper} {
		if l := mixture(labels["merged"], labels["react"], 0.05, float64(b)); math.Abs(l*0.05-1) > 1e-9 {
			t.Errorf("Λ at the bound %v is %v, want 1/α", b, l)
		}
	}
	if want := 914.0/1190 - 862.0/1210; math.Abs(float64(c.Diff)-want) > 1e-15 {
		t.Errorf("diff %v, want %v", c.Diff, want)
	}
	if c.Outcome != "better" || r.Arms[1].Decision != "react better than merged" || r.Decision != "react better than merged" {
		t.Errorf("decisions %q, %q, %q", c.Outcome, r.Arms[1].Decision, r.Decision)
	}
	chi2 := 2 * 10.0 * 10 / 1200 // (1210 − 1200)² / 1200 + (1190 − 1200)² / 1200
	if sr := r.SampleRatio; math.Abs(sr.ChiSquare-chi2) > 1e-12 || sr.DF != 1 || math.Abs(sr.PValue-math.Erfc(math.Sqrt(chi2/2))) > 1e-12 || sr.Mismatch {
		t.Errorf("sample ratio %+v, want χ² %v", sr, chi2)
	}
	for _, a := range r.Arms {
		s := labels[a.Name]
		m := s.Sum / s.N
		v := m * (1 - m) * s.N / (s.N - 1) / s.N
		for _, b := range []Float{a.Lower, a.Upper} {
			d := m - float64(b)
			l := math.Sqrt(v/(v+0.0025)) * math.Exp(0.0025*d*d/(2*v*(v+0.0025)))
			if math.Abs(l*0.05-1) > 1e-9 {
				t.Errorf("arm %s: Λ at the mean's bound %v is %v, want 1/α", a.Name, b, l)
			}
		}
	}

	// Three arms: each comparison at α/2.
	rewards := map[string]sequential.Sample{
		"A": {N: 3000, Sum: 1500, SumSq: 900}, "B": {N: 3000, Sum: 1560, SumSq: 950}, "C": {N: 3000, Sum: 1290, SumSq: 700}}
	r, err = Decide(Config{Selector: Selector{Experiment: "e"}, Arms: []Arm{{"A", 1}, {"B", 1}, {"C", 1}}, Options: sequential.Options{Alpha: 0.1}},
		outcomesOfSamples("reward", rewards))
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != "reward" || r.Comparisons != 2 || r.AlphaEach != 0.05 {
		t.Errorf("kind %s, %d comparisons at %v", r.Kind, r.Comparisons, r.AlphaEach)
	}
	for i, arm := range []string{"B", "C"} {
		c := r.Arms[i+1].VsControl
		for _, b := range []Float{c.Lower, c.Upper} {
			if l := mixture(rewards["A"], rewards[arm], 0.05, float64(b)); math.Abs(l*0.05-1) > 1e-9 {
				t.Errorf("arm %s: Λ at the bound %v is %v, want 2/α = 20", arm, b, l)
			}
		}
	}
	if r.Arms[2].Decision != "C worse than A" || !strings.Contains(r.Decision, "C worse than A") {
		t.Errorf("decisions %q, %q", r.Arms[2].Decision, r.Decision)
	}
}

func TestDecideDecisions(t *testing.T) {
	s := func(n, sum float64) sequential.Sample { return sequential.Sample{N: n, Sum: sum, SumSq: sum} }
	for _, tc := range []struct {
		name     string
		arms     []Arm
		control  string
		samples  map[string]sequential.Sample
		rewards  map[string]sequential.Sample // outcomes of the other kind
		decision []string                     // per arm
		overall  string
		notes    []string
	}{
		{"better", []Arm{{"a", 1}, {"b", 1}}, "", map[string]sequential.Sample{"a": s(2000, 1200), "b": s(2000, 1500)}, nil,
			[]string{"control", "b better than a"}, "b better than a", nil},
		{"worse, control second", []Arm{{"a", 1}, {"b", 1}}, "b", map[string]sequential.Sample{"a": s(2000, 1200), "b": s(2000, 1500)}, nil,
			[]string{"a worse than b", "control"}, "a worse than b", nil},
		{"alike", []Arm{{"a", 1}, {"b", 1}}, "", map[string]sequential.Sample{"a": s(2000, 1200), "b": s(2000, 1210)}, nil,
			[]string{"control", "no decision yet"}, "no decision yet", nil},
		{"too few", []Arm{{"a", 1}, {"b", 1}}, "", map[string]sequential.Sample{"a": s(90, 10), "b": s(90, 80)}, nil,
			[]string{"control", "no decision yet: fewer than 100 outcomes"}, "no decision yet", nil},
		{"mismatch", []Arm{{"a", 1}, {"b", 1}}, "", map[string]sequential.Sample{"a": s(3000, 1200), "b": s(2000, 1500)}, nil,
			[]string{"control", MismatchDecision}, MismatchDecision, nil},
		{"an arm without outcomes", []Arm{{"a", 1}, {"b", 1}, {"c", 0}}, "", map[string]sequential.Sample{"a": s(2000, 1200), "b": s(2000, 1500)}, nil,
			[]string{"control", "b better than a", "not compared: weight 0"}, "b better than a", []string{"arm c has no label outcomes yet"}},
		{"an unconfigured arm, and a weighted arm without outcomes", []Arm{{"a", 1}, {"b", 1}}, "", map[string]sequential.Sample{"a": s(2000, 1200), "z": s(5, 1)}, nil,
			[]string{"control", "no outcomes yet"}, MismatchDecision,
			[]string{"arm b has no label outcomes yet", "arm z has 5 label outcomes but is not an arm of the configuration: left out"}},
		{"a zero-weight arm that got outcomes", []Arm{{"a", 1}, {"b", 1}, {"c", 0}}, "", map[string]sequential.Sample{"a": s(2000, 1200), "b": s(2000, 1210), "c": s(3, 1)}, nil,
			[]string{"control", MismatchDecision, "not compared: weight 0"}, MismatchDecision, nil},
		// Only the control is short of outcomes (the weights match the
		// counts: no mismatch).
		{"too few in the control", []Arm{{"a", 90}, {"b", 2000}}, "", map[string]sequential.Sample{"a": s(90, 45), "b": s(2000, 1000)}, nil,
			[]string{"control", "no decision yet: fewer than 100 outcomes"}, "no decision yet", nil},
		// Exactly the minimum on both sides is not fewer.
		{"exactly the minimum", []Arm{{"a", 1}, {"b", 1}}, "", map[string]sequential.Sample{"a": s(100, 50), "b": s(100, 52)}, nil,
			[]string{"control", "no decision yet"}, "no decision yet", nil},
		// An arm the configuration does not name, with rewards only, is
		// not in a report of labels, not even as a note.
		{"an unconfigured arm with outcomes of the other kind", []Arm{{"a", 1}, {"b", 1}}, "", map[string]sequential.Sample{"a": s(2000, 1200), "b": s(2000, 1500)},
			map[string]sequential.Sample{"z": s(5, 1)},
			[]string{"control", "b better than a"}, "b better than a", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := outcomesOfSamples("label", tc.samples)
			for arm, r := range tc.rewards {
				o.Samples[ArmKind{arm, "reward"}] = r
			}
			r, err := Decide(Config{Selector: Selector{Experiment: "e"}, Arms: tc.arms, Control: tc.control}, o)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range r.Arms {
				if a.Decision != tc.decision[i] {
					t.Errorf("arm %s: %q, want %q", a.Name, a.Decision, tc.decision[i])
				}
			}
			if r.Decision != tc.overall {
				t.Errorf("decision %q, want %q", r.Decision, tc.overall)
			}
			if strings.Join(r.Notes, "|") != strings.Join(tc.notes, "|") {
				t.Errorf("notes %q, want %q", r.Notes, tc.notes)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("JSON: %v", err)
			}
		})
	}
}

// TestDecideProblems: what keeps a report from being made, all at once.
func TestDecideProblems(t *testing.T) {
	s := func(n, sum, sq float64) sequential.Sample { return sequential.Sample{N: n, Sum: sum, SumSq: sq} }
	both := NewOutcomes()
	both.Samples[ArmKind{"a", "label"}] = s(10, 5, 5)
	both.Samples[ArmKind{"b", "reward"}] = s(10, 5, 3)
	both.Experiments["e"] = true
	for _, tc := range []struct {
		name string
		cfg  Config
		o    Outcomes
		want []string
	}{
		{"both kinds", Config{Arms: []Arm{{"a", 1}, {"b", 1}}}, both,
			[]string{"outcome: experiment e has both labels (10) and rewards (10): choose one with --outcome"}},
		{"the kind asked for is not there", Config{Kind: "reward", Selector: Selector{Model: "m"}, Arms: []Arm{{"a", 1}, {"x", 1}}}, both,
			[]string{"arms: no reward outcomes of any arm of experiment e, model m in the sources (its arms there: a, b)"}},
		{"no experiment", Config{Selector: Selector{Experiment: "f"}, Arms: []Arm{{"a", 1}, {"b", 1}}}, Outcomes{Experiments: both.Experiments},
			[]string{"experiment: no outcomes of experiment f in the sources (experiments with outcomes there: e)"}},
		{"counters no outcomes give", Config{Arms: []Arm{{"a", 1}, {"b", 1}}},
			outcomesOfSamples("label", map[string]sequential.Sample{"a": s(10, 11, 11), "b": s(10, 5, 6)}),
			[]string{"arms.a: label outcomes: sum 11 of 10 outcomes", "arms.b: label outcomes: sum of squares 6 with sum 5"}},
		{"one arm", Config{Arms: []Arm{{"a", 1}}}, both, []string{"arms: want at least two arms, got 1"}},
		{"configuration", Config{Selector: Selector{Task: "t"}, Kind: "reward", Arms: []Arm{{"a", 1}, {"a", -1}, {"", 1}}, Control: "z",
			Options: sequential.Options{Alpha: 2}}, both,
			[]string{"experiment: missing", "task: a reward has no task", "alpha 2: want a number in (0, 1)", `arms[1]: arm "a" given twice`, "arms[2]: an arm needs a name", `control: "z" is not an arm`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.Experiment == "" && tc.name != "configuration" {
				tc.cfg.Experiment = "e"
			}
			_, err := Decide(tc.cfg, tc.o)
			if err == nil {
				t.Fatal("decided")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant %q in it", err, w)
				}
			}
		})
	}
}
