package model

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/experiment"
	"github.com/mergectl/react-triton/triton"
)

// zooTasks are the zoo's tasks, in its components file's order.
var zooTasks = []string{"fashion", "mnist", "digits", "letters", "greek", "fontdigits"}

// params writes parameters as the JSON members of a configuration's
// "parameters".
func params(kv ...string) string {
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: {\"string_value\": %q}", kv[i], kv[i+1])
	}
	return b.String()
}

// experimentParams are the parameters of an experiment named name over
// arms ("A=50,B=50"), the arm at index i applying zooTasks[i]=1, with the
// key in the parameter user_id and, past the arms, more parameters.
func experimentParams(name, arms string, more ...string) string {
	kv := []string{ParamExperimentName, name, ParamExperimentArms, arms, ParamExperimentKeyParameter, "user_id"}
	parsed, err := experiment.ParseArms(arms)
	if err != nil {
		panic(err)
	}
	for i, a := range parsed {
		kv = append(kv, ParamExperimentArmPrefix+a.Name+".preference", zooTasks[i]+"=1")
	}
	return params(append(kv, more...)...)
}

func TestParseConfigExperiment(t *testing.T) {
	js := config(8, "TYPE_FP32", `["64"]`, params("components", "c.safetensors", "preset.uniform", "a=1,b=1",
		"experiment.name", "fashion-ab", "experiment.arms", "merged=50, react=30,uniform=20",
		"experiment.arm.merged.preference", "none", "experiment.arm.react.preference", "fashion=1",
		"experiment.arm.uniform.preset", "uniform", "experiment.traffic", " 0.25",
		"experiment.start", "2026-03-01T09:00:00Z", "experiment.end", "2026-04-01T00:00:00+02:00",
		"experiment.key.header", "X-User-Id", "experiment.key.parameter", "user_id"))
	got, err := ParseConfig(js, "")
	if err != nil {
		t.Fatal(err)
	}
	want := &Experiment{
		ExperimentSpec: control.ExperimentSpec{
			Name: "fashion-ab",
			Arms: []control.ArmSpec{
				{Name: "merged", Weight: 50, Preference: "none"},
				{Name: "react", Weight: 30, Preference: "fashion=1"},
				{Name: "uniform", Weight: 20, Preset: "uniform"},
			},
			Traffic: 0.25,
			Start:   time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC),
			End:     time.Date(2026, 3, 31, 22, 0, 0, 0, time.UTC),
		},
		KeyHeader:    "X-User-Id",
		KeyParameter: "user_id",
	}
	e := got.Experiment
	if e == nil || !e.Start.Equal(want.Start) || !e.End.Equal(want.End) {
		t.Fatalf("experiment %+v, want %+v", e, want)
	}
	e.Start, e.End = want.Start, want.End // equal instants, their locations aside
	if !reflect.DeepEqual(e, want) {
		t.Errorf("experiment\n %+v\nwant\n %+v", e, want)
	}

	// Without experiment parameters there is none.
	got, err = ParseConfig(config(8, "TYPE_FP32", `["64"]`, params("components", "c")), "")
	if err != nil || got.Experiment != nil {
		t.Errorf("no experiment parameters: %+v, %v", got, err)
	}
}

// TestParseConfigChecksArmsWithEverythingElse: with the version directory,
// the arms' preferences are checked against the components file's tasks and
// their presets against the model's, beside every other problem.
func TestParseConfigChecksArmsWithEverythingElse(t *testing.T) {
	js := config(64, "TYPE_FP32", `["64"]`, params("components", "components.safetensors", "beta", "-1",
		"preset.fine", "mnist=1",
		"experiment.name", "ab", "experiment.arms", "A=1,B=1,C=1", "experiment.key.parameter", "user_id",
		"experiment.arm.A.preference", "fashion=1,foo=1", "experiment.arm.B.preset", "nosuch",
		"experiment.arm.C.preset", "fine", "experiment.traffic", "2"))
	_, err := ParseConfig(js, zooDir)
	if err == nil {
		t.Fatal("ParseConfig succeeded")
	}
	want := []string{
		"parameters.beta: invalid beta -1: want a finite number ≥ 0",
		`parameters.experiment.arm.A.preference: preference "fashion=1,foo=1": unknown task "foo" (known: fashion, mnist, digits, letters, greek, fontdigits)`,
		`parameters.experiment.arm.B.preset: "nosuch" is not a preset of components "react_test", which model "react_test" uses`,
		"parameters.experiment.traffic: traffic share 2: want a number in (0, 1]",
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("problems\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// execute runs one batch and returns its outcomes and outputs.
func execute(t *testing.T, m *Model, reqs []Request) ([]Outcome, [][]byte) {
	t.Helper()
	outs := make([][]byte, len(reqs))
	var sc Scratch
	got := m.Execute(context.Background(), reqs, func(i int) ([]byte, error) {
		outs[i] = make([]byte, len(reqs[i].Data))
		return outs[i], nil
	}, &sc)
	return got, outs
}

// keyed returns parameters carrying the experiment key in user_id.
func keyed(key string) control.Values { return control.Values{Key: key, HasKey: true} }

// armOf is an outcome's arm as calibrate experiment assign prints it: "-"
// for a key outside the traffic share.
func armOf(t *testing.T, o Outcome) string {
	t.Helper()
	switch {
	case o.Err != nil:
		t.Fatalf("request failed: %v", o.Err)
	case o.Choice.Assignment == control.AssignExcluded && o.Choice.Arm == "":
		return "-"
	case o.Choice.Assignment != control.AssignKey || o.Choice.Source != control.SourceArm:
		t.Fatalf("choice %+v: not assigned by its key", o.Choice)
	}
	return o.Choice.Arm
}

// TestExperimentArmsEqualPublishedVectors: the arm of each key of
// experiment/testdata/vectors.tsv (written by the Python reference,
// experiment/assign.py) is the vector's, for every experiment there.
func TestExperimentArmsEqualPublishedVectors(t *testing.T) {
	f, err := os.Open("../../experiment/testdata/vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type vector struct{ key, arm string }
	type group struct{ name, arms, traffic string }
	vectors := map[group][]vector{}
	var order []group
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		fs := strings.Split(line, "\t")
		if len(fs) != 5 {
			t.Fatalf("bad vector %q", line)
		}
		g := group{fs[0], fs[1], fs[2]}
		if fs[3] == "" {
			continue // an empty key is no key: a random arm
		}
		if _, ok := vectors[g]; !ok {
			order = append(order, g)
		}
		vectors[g] = append(vectors[g], vector{fs[3], fs[4]})
	}
	if len(order) < 5 {
		t.Fatalf("only %d experiments in the vectors", len(order))
	}
	n := 0
	for _, g := range order {
		m := loadZoo(t, "FP32", experimentParams(g.name, g.arms, ParamExperimentTraffic, g.traffic))
		rng := rand.New(rand.NewPCG(1, 2))
		reqs := make([]Request, len(vectors[g]))
		for i, v := range vectors[g] {
			reqs[i], _ = request(t, rng, "FP32", 1, m.D(), keyed(v.key))
		}
		got, _ := execute(t, m, reqs)
		for i, v := range vectors[g] {
			if arm := armOf(t, got[i]); arm != v.arm {
				t.Errorf("%s %s traffic %s: key %q got arm %s, want %s", g.name, g.arms, g.traffic, v.key, arm, v.arm)
			}
			n++
		}
	}
	if n < 60 {
		t.Errorf("only %d keys checked", n)
	}
}

// TestExperimentArmsEqualSplit: over many keys in batches that mix arms,
// each request's arm is experiment.Split's for its key, its rows are
// corrected with its arm's W_p (against the one-shot solver in float64),
// and those outside the traffic share get the default.
func TestExperimentArmsEqualSplit(t *testing.T) {
	const name, arms, traffic = "fashion-ab", "A=50,B=30,C=20", 0.8
	m := loadZoo(t, "FP32", experimentParams(name, arms, ParamExperimentTraffic, "0.8", ParamDefaultPreference, "greek=1"))
	parsed, err := experiment.ParseArms(arms)
	if err != nil {
		t.Fatal(err)
	}
	split, err := experiment.NewSplit(name, parsed, traffic)
	if err != nil {
		t.Fatal(err)
	}
	specOf := map[string]string{"A": "fashion=1", "B": "mnist=1", "C": "digits=1", "-": "greek=1"}
	d := m.D()
	rng := rand.New(rand.NewPCG(5, 6))
	seen := map[string]int{}
	z := map[string][]float32{}           // by arm: the rows of its requests, in order
	y := map[string][]float32{}           // and their outputs
	for batch := 0; batch < 10; batch++ { // 10 batches of 40 keys
		reqs := make([]Request, 40)
		zs := make([][]float32, len(reqs))
		keys := make([]string, len(reqs))
		for i := range reqs {
			keys[i] = fmt.Sprintf("user-%d", batch*len(reqs)+i)
			reqs[i], zs[i] = request(t, rng, "FP32", 1+i%2, d, keyed(keys[i]))
		}
		got, outs := execute(t, m, reqs)
		for i, key := range keys {
			want := "-"
			if j := split.Assign(key); j >= 0 {
				want = parsed[j].Name
			}
			arm := armOf(t, got[i])
			if arm != want {
				t.Errorf("key %s: arm %s, want %s (experiment.Split)", key, arm, want)
			}
			if echo, wantEcho := got[i].Choice.Canonical(), specOf[arm]; echo != wantEcho {
				t.Errorf("key %s: applied %s, want %s", key, echo, wantEcho)
			}
			seen[arm]++
			z[arm] = append(z[arm], zs[i]...)
			out, err := triton.DecodeFloat32(nil, "FP32", outs[i])
			if err != nil {
				t.Fatal(err)
			}
			y[arm] = append(y[arm], out...)
		}
	}
	for _, arm := range []string{"A", "B", "C", "-"} {
		if seen[arm] < 20 {
			t.Fatalf("arm %s: only %d of 400 keys (%v)", arm, seen[arm], seen)
		}
		want := reference(t, specOf[arm], z[arm], d)
		for k := range want {
			if diff := math.Abs(float64(y[arm][k]) - want[k]); diff > 1e-5*(1+math.Abs(want[k])) {
				t.Fatalf("arm %s element %d: %v, want %v", arm, k, y[arm][k], want[k])
			}
		}
	}
}

// TestExperimentPrecedence: a request's own preference or preset overrides
// the arm (counted as an override), a key outside the traffic share gets
// the default (counted as excluded), a request without a key (or with an
// empty one) gets a random arm, the key header beats the key parameter,
// and outside the window there is no experiment.
func TestExperimentPrecedence(t *testing.T) {
	const traffic = "0.5"
	m := loadZoo(t, "FP32", experimentParams("prec", "A=1,B=1", ParamExperimentTraffic, traffic,
		ParamExperimentKeyHeader, "x-user-id", ParamDefaultPreference, "greek=1", "preset.scripts", "letters=1,greek=1"))
	split, err := experiment.NewSplit("prec", []experiment.Arm{{Name: "A", Weight: 1}, {Name: "B", Weight: 1}}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	// Keys in the experiment (arm A, arm B) and outside it.
	var inA, inB, out string
	for i := 0; inA == "" || inB == "" || out == ""; i++ {
		k := strconv.Itoa(i)
		switch split.Assign(k) {
		case 0:
			inA = cmp(inA, k)
		case 1:
			inB = cmp(inB, k)
		default:
			out = cmp(out, k)
		}
	}
	header := func(key string) control.Values { return control.Values{Key: key, HasKey: true} }
	for _, tc := range []struct {
		name         string
		keys, header control.Values
		// the applied preference, arm ("" for none) and assignment
		echo, arm string
		how       control.Assignment
		count     string // the metric counted, "" for none
	}{
		{"key in arm A", keyed(inA), control.Values{}, "fashion=1", "A", control.AssignKey, MetricRequests},
		{"key in arm B", keyed(inB), control.Values{}, "mnist=1", "B", control.AssignKey, MetricRequests},
		{"key outside the share", keyed(out), control.Values{}, "greek=1", "", control.AssignExcluded, MetricExcluded},
		{"own preference", control.Values{Preference: "digits=1", HasPreference: true, Key: inA, HasKey: true}, control.Values{},
			"digits=1", "", control.AssignOverride, MetricOverrides},
		{"own preset, key outside", control.Values{Preset: "scripts", HasPreset: true, Key: out, HasKey: true}, control.Values{},
			"letters=0.5,greek=0.5", "", control.AssignOverride, MetricOverrides},
		{"own none", control.Values{Preference: "none", HasPreference: true}, control.Values{}, "none", "", control.AssignOverride, MetricOverrides},
		{"header beats parameter", keyed(inA), header(inB), "mnist=1", "B", control.AssignKey, MetricRequests},
		{"header alone", control.Values{}, header(out), "greek=1", "", control.AssignExcluded, MetricExcluded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := request(t, rand.New(rand.NewPCG(1, 1)), "FP32", 1, m.D(), tc.keys)
			r.Header = tc.header
			got, _ := execute(t, m, []Request{r})
			c := got[0].Choice
			if got[0].Err != nil || c.Canonical() != tc.echo || c.Arm != tc.arm || c.Assignment != tc.how || c.Experiment != "prec" {
				t.Errorf("choice %+v (err %v), want %s, arm %q, %v", c, got[0].Err, tc.echo, tc.arm, tc.how)
			}
			count, ok := m.ExperimentCount(got[0])
			if !ok || count.Metric != tc.count || count.Model != "react_test" || count.Experiment != "prec" {
				t.Errorf("count %+v (%v), want %s", count, ok, tc.count)
			}
		})
	}

	// Without a key, or with an empty one: a random arm, by the weights.
	byArm := map[string]int{}
	for i := 0; i < 400; i++ {
		keys := control.Values{}
		if i%2 == 1 {
			keys = keyed("")
		}
		r, _ := request(t, rand.New(rand.NewPCG(1, uint64(i))), "FP32", 1, m.D(), keys)
		got, _ := execute(t, m, []Request{r})
		c := got[0].Choice
		if c.Assignment == control.AssignExcluded {
			byArm["-"]++ // the random traffic hash fell outside the share
			continue
		}
		if c.Assignment != control.AssignRandom || (c.Arm != "A" && c.Arm != "B") {
			t.Fatalf("keyless request: choice %+v", c)
		}
		if count, ok := m.ExperimentCount(got[0]); !ok || count.Labels()[3] != "random" {
			t.Fatalf("keyless request counted as %+v", count)
		}
		byArm[c.Arm]++
	}
	// Half the random traffic hashes are in the share, split 1:1: each
	// count is about 100 (binomial, sd below 10).
	for _, arm := range []string{"A", "B"} {
		if n := byArm[arm]; n < 60 || n > 140 {
			t.Errorf("keyless requests by arm %v: want about 100 each", byArm)
		}
	}
}

func cmp(have, k string) string {
	if have != "" {
		return have
	}
	return k
}

// TestExperimentWindow: outside [start, end) requests get the default, as
// if there were no experiment, and count nowhere.
func TestExperimentWindow(t *testing.T) {
	now := time.Now().UTC()
	for _, tc := range []struct {
		name       string
		start, end string
		running    bool
	}{
		{"ended", now.Add(-2 * time.Hour).Format(time.RFC3339), now.Add(-time.Hour).Format(time.RFC3339), false},
		{"not started", now.Add(time.Hour).Format(time.RFC3339), "", false},
		{"running", now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			more := []string{ParamExperimentStart, tc.start, ParamDefaultPreference, "greek=1"}
			if tc.end != "" {
				more = append(more, ParamExperimentEnd, tc.end)
			}
			m := loadZoo(t, "FP32", experimentParams("win", "A=1", more...))
			r, _ := request(t, rand.New(rand.NewPCG(1, 1)), "FP32", 1, m.D(), keyed("alice"))
			got, _ := execute(t, m, []Request{r})
			c := got[0].Choice
			_, counted := m.ExperimentCount(got[0])
			if tc.running {
				if c.Arm != "A" || c.Canonical() != "fashion=1" || !counted {
					t.Errorf("running: choice %+v, counted %v", c, counted)
				}
				return
			}
			if c.Arm != "" || c.Experiment != "" || c.Canonical() != "greek=1" || c.Source != control.SourceDefault || counted {
				t.Errorf("outside the window: choice %+v, counted %v", c, counted)
			}
		})
	}
}

func TestExperimentCountOfFailures(t *testing.T) {
	m := loadZoo(t, "FP32", experimentParams("fail", "A=1"))
	arm := Outcome{Choice: control.Choice{Experiment: "fail", Arm: "A", Assignment: control.AssignKey}}
	for _, tc := range []struct {
		err    error
		labels []string
	}{
		{nil, []string{"react_test", "fail", "A", "key"}},
		{&RequestError{Code: CodeInvalidArgument, Err: fmt.Errorf("x")}, []string{"react_test", "fail", "A", "InvalidArgument"}},
		{&RequestError{Code: CodeUnavailable, Err: fmt.Errorf("x")}, []string{"react_test", "fail", "A", "Unavailable"}},
		{fmt.Errorf("plain"), []string{"react_test", "fail", "A", "Internal"}},
	} {
		o := arm
		o.Err = tc.err
		c, ok := m.ExperimentCount(o)
		want := MetricRequests
		if tc.err != nil {
			want = MetricErrors
		}
		if !ok || c.Metric != want || !reflect.DeepEqual(c.Labels(), tc.labels) {
			t.Errorf("error %v: count %+v %v, labels %v, want %s %v", tc.err, c, ok, c.Labels(), want, tc.labels)
		}
	}
	// A request that failed before its preference was resolved, or with no
	// experiment: nothing.
	if c, ok := m.ExperimentCount(Outcome{Err: fmt.Errorf("read")}); ok {
		t.Errorf("unresolved request counted: %+v", c)
	}
	for _, f := range MetricFamilies {
		c := Count{Metric: f.Name}
		if len(c.Labels()) != len(f.Labels) {
			t.Errorf("%s: %d label values for labels %v", f.Name, len(c.Labels()), f.Labels)
		}
	}
}

func TestReadParameter(t *testing.T) {
	m := loadZoo(t, "FP32", experimentParams("keys", "A=1", ParamExperimentKeyHeader, "X-User-Id"))
	plain := loadZoo(t, "FP32", "")
	type param struct {
		name  string
		typ   ParamType
		value string
	}
	for _, tc := range []struct {
		name         string
		model        *Model
		params       []param
		keys, header control.Values
		err          string
	}{
		{"preference and preset in any case", m, []param{{"React-Preference", ParamString, "fashion=1"}, {"REACT-PRESET", ParamString, "x"}},
			control.Values{Preference: "fashion=1", HasPreference: true, Preset: "x", HasPreset: true}, control.Values{}, ""},
		{"key parameter exactly", m, []param{{"user_id", ParamString, "alice"}, {"User_Id", ParamString, "bob"}},
			keyed("alice"), control.Values{}, ""},
		{"integer key", m, []param{{"user_id", ParamInt, "42"}}, keyed("42"), control.Values{}, ""},
		{"key header in any case", m, []param{{"x-user-id", ParamString, "carol"}}, control.Values{}, keyed("carol"), ""},
		{"header and parameter", m, []param{{"user_id", ParamString, "alice"}, {"X-USER-ID", ParamString, "carol"}},
			keyed("alice"), keyed("carol"), ""},
		{"header twice, the same", m, []param{{"x-user-id", ParamString, "carol"}, {"X-User-Id", ParamString, "carol"}},
			control.Values{}, keyed("carol"), ""},
		{"header twice, different", m, []param{{"x-user-id", ParamString, "carol"}, {"X-User-Id", ParamString, "dave"}},
			control.Values{}, control.Values{}, `parameter X-User-Id given twice, as "carol" and "dave"`},
		{"boolean key", m, []param{{"user_id", ParamOther, ""}}, control.Values{}, control.Values{},
			"parameter user_id, the experiment key, must be a string or an integer"},
		{"integer preference", m, []param{{"react-preference", ParamInt, "3"}}, control.Values{}, control.Values{},
			"parameter react-preference: must be a string"},
		{"no experiment: the key is another parameter", plain, []param{{"user_id", ParamString, "alice"}, {"x-user-id", ParamOther, ""}},
			control.Values{}, control.Values{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Request
			var err error
			for _, p := range tc.params {
				if !tc.model.Reads(p.name) {
					continue
				}
				if err = tc.model.ReadParameter(&r, p.name, p.typ, p.value); err != nil {
					break
				}
			}
			if tc.err != "" {
				if err == nil || ErrorCode(err) != CodeInvalidArgument || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want INVALID_ARGUMENT with %q", err, tc.err)
				}
				return
			}
			if err != nil || r.Keys != tc.keys || r.Header != tc.header {
				t.Errorf("keys %+v, header %+v, err %v; want %+v, %+v", r.Keys, r.Header, err, tc.keys, tc.header)
			}
		})
	}
}
