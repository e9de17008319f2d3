package react

import (
	"math"
	"slices"
	"strings"
	"testing"
)

var prefTasks = []string{"cars", "dtd", "eurosat"}

func TestParsePreference(t *testing.T) {
	for _, tc := range []struct {
		spec      string
		canonical string
		weights   []float64
	}{
		{"cars=1", "cars=1", []float64{1, 0, 0}},
		{"cars=0.6,dtd=0.4", "cars=0.6,dtd=0.4", []float64{0.6, 0.4, 0}},
		{"dtd=0.4,cars=0.6", "cars=0.6,dtd=0.4", []float64{0.6, 0.4, 0}},
		{"cars=3,dtd=2", "cars=0.6,dtd=0.4", []float64{0.6, 0.4, 0}},
		{" cars = 3 , dtd=2 ", "cars=0.6,dtd=0.4", []float64{0.6, 0.4, 0}},
		{"cars=1,dtd=1,eurosat=1", "cars=0.3333333333333333,dtd=0.3333333333333333,eurosat=0.3333333333333333", []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{"eurosat=2,cars=0", "eurosat=1", []float64{0, 0, 1}},
		{"cars=0,dtd=1e-3", "dtd=1", []float64{0, 1, 0}},
		{"cars=0.0,dtd=1E+2", "dtd=1", []float64{0, 1, 0}},
		{"cars=2.,dtd=6", "cars=0.25,dtd=0.75", []float64{0.25, 0.75, 0}},
		{"cars=1e-400,dtd=1", "dtd=1", []float64{0, 1, 0}},
		{"cars=1e308,dtd=1e308", "cars=0.5,dtd=0.5", []float64{0.5, 0.5, 0}},
		{"cars=5e-324,dtd=5e-324", "cars=0.5,dtd=0.5", []float64{0.5, 0.5, 0}},
		{"cars=.25,dtd=.75", "cars=0.25,dtd=0.75", []float64{0.25, 0.75, 0}},
		{"cars=25,dtd=75", "cars=0.25,dtd=0.75", []float64{0.25, 0.75, 0}},
	} {
		p, err := ParsePreference(tc.spec, prefTasks)
		if err != nil {
			t.Errorf("ParsePreference(%q): %v", tc.spec, err)
			continue
		}
		if got := p.String(); got != tc.canonical {
			t.Errorf("ParsePreference(%q).String() = %q, want %q", tc.spec, got, tc.canonical)
		}
		if got := p.Weights(); !slices.Equal(got, tc.weights) {
			t.Errorf("ParsePreference(%q).Weights() = %v, want %v", tc.spec, got, tc.weights)
		}
		for i, task := range prefTasks {
			if p.Weight(task) != tc.weights[i] {
				t.Errorf("ParsePreference(%q).Weight(%s) = %v, want %v", tc.spec, task, p.Weight(task), tc.weights[i])
			}
		}
	}
}

func TestParsePreferenceErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "empty preference"},
		{"   ", "empty preference"},
		{"cars=0.6,foo=1", `preference "cars=0.6,foo=1": unknown task "foo" (known: cars, dtd, eurosat)`},
		{"cars=1,cars=2", `duplicate task "cars"`},
		{"cars=1, cars =2", `duplicate task "cars"`},
		{"cars=-1", `weight "-1" is negative`},
		{"cars=-0", `weight "-0" is negative`},
		{"cars=-1e-3", `weight "-1e-3" is negative`},
		{"cars=abc", `weight "abc" is not a plain decimal number`},
		// Syntax strconv.ParseFloat accepts but other languages do not, or
		// read differently.
		{"cars=1_0", `weight "1_0" is not a plain decimal number`},
		{"cars=0x1p-3", `weight "0x1p-3" is not a plain decimal number`},
		{"cars=+1", `weight "+1" is not a plain decimal number`},
		{"cars=inf", `weight "inf" is not a plain decimal number`},
		{"cars=Inf", `weight "Inf" is not a plain decimal number`},
		{"cars=-Inf", `weight "-Inf" is not a plain decimal number`},
		{"cars=infinity", `weight "infinity" is not a plain decimal number`},
		{"cars=nan", `weight "nan" is not a plain decimal number`},
		{"cars=NaN", `weight "NaN" is not a plain decimal number`},
		{"cars=1e", `weight "1e" is not a plain decimal number`},
		{"cars=1e+", `weight "1e+" is not a plain decimal number`},
		{"cars=.", `weight "." is not a plain decimal number`},
		{"cars=1.2.3", `weight "1.2.3" is not a plain decimal number`},
		{"cars=1 2", `weight "1 2" is not a plain decimal number`},
		{"cars=١", `weight "١" is not a plain decimal number`},
		{"cars=1e400", "out of range"},
		{"cars=", `task "cars": missing weight`},
		{"cars", `entry "cars" has no '='`},
		{"=1", "has no task name"},
		{"cars=1,", "entry 2 is empty"},
		{",cars=1", "entry 1 is empty"},
		{"cars=0", "weights sum to 0"},
		{"cars=0,dtd=0.0", "weights sum to 0"},
		{"cars=1=2", `weight "1=2" is not a plain decimal number`},
		{"CARS=1", `unknown task "CARS"`},
	} {
		_, err := ParsePreference(tc.spec, prefTasks)
		if err == nil {
			t.Errorf("ParsePreference(%q) succeeded, want an error containing %q", tc.spec, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePreference(%q) = %q, want it to contain %q", tc.spec, err, tc.want)
		}
		if !strings.HasPrefix(err.Error(), "preference ") {
			t.Errorf("ParsePreference(%q) = %q, want it to name the preference", tc.spec, err)
		}
	}
}

func TestPreferenceConstructors(t *testing.T) {
	p, err := OneHot(prefTasks, "dtd")
	if err != nil || p.String() != "dtd=1" || !slices.Equal(p.Weights(), []float64{0, 1, 0}) {
		t.Errorf("OneHot(dtd) = %v, %v", p, err)
	}
	if _, err := OneHot(prefTasks, "svhn"); err == nil {
		t.Error("OneHot(unknown) succeeded")
	}
	u := Uniform([]string{"a", "b", "c", "d"})
	if u.String() != "a=0.25,b=0.25,c=0.25,d=0.25" {
		t.Errorf("Uniform = %q", u)
	}
	if !Uniform(nil).IsZero() || Uniform(nil).String() != "" {
		t.Error("Uniform(nil) is not the empty preference")
	}
	n, err := NewPreference(prefTasks, []float64{2, 0, 6})
	if err != nil || n.String() != "cars=0.25,eurosat=0.75" {
		t.Errorf("NewPreference = %v, %v", n, err)
	}
	for _, w := range [][]float64{{1, 2}, {-1, 1, 1}, {math.NaN(), 1, 1}, {0, 0, 0}, {math.Inf(1), 0, 0}} {
		if _, err := NewPreference(prefTasks, w); err == nil {
			t.Errorf("NewPreference(%v) succeeded", w)
		}
	}
	if _, err := NewPreference([]string{"a", "a"}, []float64{1, 1}); err == nil {
		t.Error("NewPreference(duplicate tasks) succeeded")
	}
	// The returned slices are copies.
	w := n.Weights()
	w[0] = 42
	tasks := n.Tasks()
	tasks[0] = "x"
	if n.Weight("cars") != 0.25 || n.Tasks()[0] != "cars" {
		t.Error("Preference shares its slices")
	}
}

// FuzzParsePreference checks that the parser never panics, that an accepted
// preference has finite weights ≥ 0 summing to 1, and that its canonical form
// re-parses to the same weights and the same canonical form.
func FuzzParsePreference(f *testing.F) {
	for _, seed := range []string{
		"cars=1", "cars=0.6,dtd=0.4", " dtd = 2 , cars=1 ", "cars=1,dtd=1,eurosat=1",
		"cars=1e308,dtd=1e308,eurosat=1e308", "cars=5e-324", "cars=0x1p-1074,dtd=1",
		"cars=-0", "cars=0,dtd=0", "cars=NaN", "cars=1,,dtd=2", "foo=1", "=", ",", "",
		"cars=1,cars=1", "cars=1_0", "cars=Inf", "eurosat=.1,dtd=.2,cars=.7",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := ParsePreference(spec, prefTasks)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "preference ") {
				t.Errorf("error %q does not name the preference", err)
			}
			return
		}
		w := p.Weights()
		if len(w) != len(prefTasks) {
			t.Fatalf("%d weights for %d tasks", len(w), len(prefTasks))
		}
		sum := 0.0
		for _, v := range w {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("ParsePreference(%q): weight %v", spec, v)
			}
			sum += v
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("ParsePreference(%q): weights %v sum to %v", spec, w, sum)
		}
		canon := p.String()
		q, err := ParsePreference(canon, prefTasks)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, spec, err)
		}
		if !slices.Equal(q.Weights(), w) {
			t.Fatalf("canonical form %q of %q re-parses to %v, want %v", canon, spec, q.Weights(), w)
		}
		if q.String() != canon {
			t.Fatalf("canonical form is not a fixed point: %q → %q", canon, q.String())
		}
	})
}

func TestRoundedIsShortStableAndSumsToOne(t *testing.T) {
	tasks := []string{"a", "b", "c", "d", "e", "f"}
	cases := []struct {
		spec, want string
	}{
		{"a=1,b=1,c=1,d=1,e=1,f=1", "a=0.166667,b=0.166667,c=0.166667,d=0.166667,e=0.166666,f=0.166666"},
		{"a=1,b=1,c=1", "a=0.333334,b=0.333333,c=0.333333"},
		{"a=0.6,b=0.4", "a=0.6,b=0.4"},
		{"c=1", "c=1"},
		{"a=1,b=1e-9", "a=1"}, // a weight below 1e-6 drops out
		{"a=2,b=1", "a=0.666667,b=0.333333"},
	}
	for _, c := range cases {
		p, err := ParsePreference(c.spec, tasks)
		if err != nil {
			t.Fatal(err)
		}
		r := p.Rounded()
		if got := r.String(); got != c.want {
			t.Errorf("Rounded(%s) = %s, want %s", c.spec, got, c.want)
		}
		// Stable: the short form parses back to bit-identical weights, which round to themselves.
		back, err := ParsePreference(r.String(), tasks)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back.Weights(), r.Weights()) || back.Rounded().String() != r.String() {
			t.Errorf("%s: not stable: %v -> %v", c.spec, r.Weights(), back.Weights())
		}
		// Exactly 1 in units of 1e-6, and each weight within 1e-6 of the original.
		var units int64
		for i, w := range r.Weights() {
			u := math.Round(w * RoundingUnits)
			if w != u/RoundingUnits {
				t.Errorf("%s: weight %v is not a multiple of 1e-6", c.spec, w)
			}
			units += int64(u)
			if d := math.Abs(w - p.Weights()[i]); d >= 1e-6 {
				t.Errorf("%s: weight %d moved by %g", c.spec, i, d)
			}
		}
		if units != RoundingUnits {
			t.Errorf("%s: rounded weights sum to %d units, want %d", c.spec, units, RoundingUnits)
		}
	}
}

func FuzzRoundedIsIdempotent(f *testing.F) {
	f.Add(1.0, 1.0, 1.0)
	f.Add(0.3, 1e-7, 5.0)
	f.Fuzz(func(t *testing.T, a, b, c float64) {
		tasks := []string{"x", "y", "z"}
		p, err := NewPreference(tasks, []float64{math.Abs(a), math.Abs(b), math.Abs(c)})
		if err != nil {
			return
		}
		r := p.Rounded()
		back, err := ParsePreference(r.String(), tasks)
		if err != nil {
			t.Fatalf("%s does not parse: %v", r, err)
		}
		if back.Rounded().String() != r.String() || !slices.Equal(back.Weights(), r.Weights()) {
			t.Fatalf("not idempotent: %s -> %s", r, back.Rounded())
		}
	})
}
