package control

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mergectl/react-triton/experiment"
	"github.com/mergectl/react-triton/react"
)

func experimentProfile(t *testing.T, obs Observer, specs ...ExperimentSpec) *Profile {
	t.Helper()
	return newTestProfile(t, ProfileSpec{
		Default:     "cars=1",
		Presets:     map[string]string{"texture": "dtd=3,svhn=1"},
		Experiments: specs,
		Observer:    obs,
	})
}

var abSpec = ExperimentSpec{
	Name: "ab",
	Arms: []ArmSpec{
		{Name: "control", Weight: 50, Preference: "none"},
		{Name: "texture", Weight: 30, Preset: "texture"},
		{Name: "mix", Weight: 20, Preference: "cars=1,dtd=1"},
	},
}

// TestExperimentResolve checks the precedence of an experiment's arm
// against the request's own keys, and where the key is read.
func TestExperimentResolve(t *testing.T) {
	p := experimentProfile(t, nil, abSpec)
	e := p.Experiment("ab")
	if e == nil {
		t.Fatal("no experiment ab")
	}
	// Independent of the profile: the split of package experiment.
	split, err := experiment.NewSplit("ab", []experiment.Arm{{Name: "control", Weight: 50}, {Name: "texture", Weight: 30}, {Name: "mix", Weight: 20}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	armOf := func(key string) string { return split.Arms()[split.Assign(key)].Name }
	wantPref := map[string]string{"control": "none", "texture": "dtd=0.75,svhn=0.25", "mix": "cars=0.5,dtd=0.5"}
	key := func(k string) Values { return Values{Key: k, HasKey: true} }

	for _, k := range []string{"alice", "bob", "42", "user-7"} {
		for _, req := range []Request{
			{Header: key(k), Experiment: e},
			{Parameter: key(k), Experiment: e},
			{Header: key(k), Parameter: key("someone-else"), Experiment: e},
		} {
			c, err := p.Resolve(req)
			if err != nil {
				t.Fatal(err)
			}
			arm := armOf(k)
			if c.Arm != arm || c.Source != SourceArm || c.Assignment != AssignKey || c.Experiment != "ab" || c.Canonical() != wantPref[arm] {
				t.Errorf("key %q: %+v, want arm %s (%s)", k, c, arm, wantPref[arm])
			}
		}
	}

	pref := Values{Preference: "svhn=1", HasPreference: true, Key: "alice", HasKey: true}
	c, err := p.Resolve(Request{Header: pref, Experiment: e})
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != SourceHeader || c.Arm != "" || c.Assignment != AssignOverride || c.Experiment != "ab" || c.Canonical() != "svhn=1" {
		t.Errorf("override: %+v", c)
	}
	c, _ = p.Resolve(Request{Parameter: Values{Preset: "texture", HasPreset: true}, Experiment: e})
	if c.Source != SourcePreset || c.Assignment != AssignOverride || c.Arm != "" {
		t.Errorf("preset override: %+v", c)
	}
	if _, err := p.Resolve(Request{Header: Values{Preference: "foo=1", HasPreference: true}, Experiment: e}); err == nil {
		t.Error("a bad preference is not refused while an experiment runs")
	}

	// Without the experiment: the default, and no experiment named.
	c, _ = p.Resolve(Request{Header: key("alice")})
	if c.Source != SourceDefault || c.Experiment != "" || c.Assignment != AssignNone {
		t.Errorf("no experiment: %+v", c)
	}
}

// TestExperimentChoices: each arm's choice is the one Resolve serves a key
// of that arm (a preset arm: its preset's preference, the preset named),
// and its W_p is the pinned one, found without a solve.
func TestExperimentChoices(t *testing.T) {
	obs := &countingObserver{}
	p := experimentProfile(t, obs, abSpec)
	e := p.Experiment("ab")
	solves := obs.solves.Load()
	keys := map[string]string{}
	for i := 0; len(keys) < len(abSpec.Arms); i++ {
		c, err := p.Resolve(Request{Header: Values{Key: strconv.Itoa(i), HasKey: true}, Experiment: e})
		if err != nil {
			t.Fatal(err)
		}
		keys[c.Arm] = strconv.Itoa(i)
	}
	want := []struct{ arm, canonical, preset string }{
		{"control", "none", ""}, {"texture", "dtd=0.75,svhn=0.25", "texture"}, {"mix", "cars=0.5,dtd=0.5", ""},
	}
	got := e.Choices()
	if len(got) != len(want) {
		t.Fatalf("%d choices, want %d", len(got), len(want))
	}
	for i, w := range want {
		c := got[i]
		if c.Arm != w.arm || c.Canonical() != w.canonical || c.Preset != w.preset || c.Source != SourceArm || c.Experiment != "ab" || c.Assignment != AssignNone {
			t.Errorf("arm %d: %+v, want %s (%s, preset %q)", i, c, w.arm, w.canonical, w.preset)
		}
		served, _ := p.Resolve(Request{Header: Values{Key: keys[w.arm], HasKey: true}, Experiment: e})
		served.Assignment = AssignNone
		if !reflect.DeepEqual(c, served) {
			t.Errorf("arm %s: %+v, served %+v", w.arm, c, served)
		}
		m, err := p.Matrix(context.Background(), c)
		if err != nil || (m == nil) != (w.canonical == "none") {
			t.Errorf("arm %s: W_p %v, %v", w.arm, m, err)
		}
	}
	if n := obs.solves.Load(); n != solves || obs.count(LookupPinned) != 2 {
		t.Errorf("%d solves, %d pinned lookups: want none and one per correcting arm", n-solves, obs.count(LookupPinned))
	}
	got[0].Arm = "changed"
	if e.Choices()[0].Arm != "control" {
		t.Error("Choices returns the experiment's own slice")
	}
}

// TestExperimentKeyless draws random arms for requests without a key (or
// with an empty one), with the arms' weights.
func TestExperimentKeyless(t *testing.T) {
	p := experimentProfile(t, nil, abSpec)
	e := p.Experiment("ab")
	counts := map[string]int{}
	const n = 20_000
	for i := range n {
		r := Request{Experiment: e}
		if i%2 == 0 {
			r.Header = Values{Key: "", HasKey: true}
		}
		c, err := p.Resolve(r)
		if err != nil {
			t.Fatal(err)
		}
		if c.Assignment != AssignRandom || c.Source != SourceArm {
			t.Fatalf("keyless: %+v", c)
		}
		counts[c.Arm]++
	}
	for arm, w := range map[string]float64{"control": 0.5, "texture": 0.3, "mix": 0.2} {
		if got := float64(counts[arm]) / n; math.Abs(got-w) > 0.02 {
			t.Errorf("arm %s: %.3f of keyless requests, want %.2f ± 0.02", arm, got, w)
		}
	}
	// The random hashes go through the same mapping as a key's hash.
	e.random = func() uint32 { return 0xCCCCCCCD } // just above 0.8·2³²: the first bucket of mix
	if c, _ := p.Resolve(Request{Experiment: e}); c.Arm != "mix" {
		t.Errorf("hash 0xCCCCCCCD: arm %q, want mix", c.Arm)
	}
	e.random = func() uint32 { return 0xCCCCCCCC } // just below: the last bucket of texture
	if c, _ := p.Resolve(Request{Experiment: e}); c.Arm != "texture" {
		t.Errorf("hash 0xCCCCCCCC: arm %q, want texture", c.Arm)
	}
}

// TestExperimentTrafficAndWindow: keys outside the share, and requests
// outside the window, get the default.
func TestExperimentTrafficAndWindow(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	shared := abSpec
	shared.Name, shared.Traffic = "shared", 0.25
	windowed := abSpec
	windowed.Name, windowed.Start, windowed.End = "windowed", start, start.Add(time.Hour)
	p := experimentProfile(t, nil, shared, windowed)

	excluded := 0
	for i := range 10_000 {
		k := "user-" + strconv.Itoa(i)
		c, err := p.Resolve(Request{Header: Values{Key: k, HasKey: true}, Experiment: p.Experiment("shared")})
		if err != nil {
			t.Fatal(err)
		}
		if c.Assignment == AssignExcluded {
			excluded++
			if c.Source != SourceDefault || c.Canonical() != "cars=1" || c.Experiment != "shared" || c.Arm != "" {
				t.Fatalf("excluded: %+v", c)
			}
		}
	}
	if got := float64(excluded) / 10_000; math.Abs(got-0.75) > 0.02 {
		t.Errorf("%.3f of keys excluded at a share of 0.25", got)
	}

	w := p.Experiment("windowed")
	for _, tc := range []struct {
		at      time.Time
		running bool
	}{
		{start.Add(-time.Second), false},
		{start, true},
		{start.Add(59 * time.Minute), true},
		{start.Add(time.Hour), false},
	} {
		c, _ := p.Resolve(Request{Header: Values{Key: "alice", HasKey: true}, Experiment: w, Now: tc.at})
		if got := c.Source == SourceArm; got != tc.running {
			t.Errorf("at %v: %+v, running %v", tc.at, c, tc.running)
		}
		if !tc.running && (c.Experiment != "" || c.Source != SourceDefault) {
			t.Errorf("at %v, outside the window: %+v", tc.at, c)
		}
	}
}

// TestExperimentArmsPinned: every arm's W_p is solved with the profile and
// pinned, and is the W_p of the arm's preference.
func TestExperimentArmsPinned(t *testing.T) {
	obs := &countingObserver{}
	p := experimentProfile(t, obs, abSpec)
	solvedAtBuild := obs.solves.Load()
	// The default, the preset (shared by the texture arm) and the mix arm.
	if solvedAtBuild != 3 {
		t.Errorf("%d solves at build, want 3", solvedAtBuild)
	}
	e := p.Experiment("ab")
	for i := range 50 {
		c, err := p.Resolve(Request{Header: Values{Key: "k" + strconv.Itoa(i), HasKey: true}, Experiment: e})
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.Matrix(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if (m == nil) != (c.Arm == "control") {
			t.Errorf("arm %s: matrix %v", c.Arm, m)
		}
		if c.Arm == "mix" {
			checkApply(t, "mix arm", m, referenceW(t, testComponents(t, 6, 40, tasks3...), 0.1, map[string]float64{"cars": 0.5, "dtd": 0.5}))
		}
	}
	if obs.solves.Load() != solvedAtBuild || obs.count(LookupMiss) != 0 || obs.count(LookupHit) != 0 {
		t.Errorf("arms not pinned: %d solves, %d misses, %d hits", obs.solves.Load(), obs.count(LookupMiss), obs.count(LookupHit))
	}
}

func TestExperimentErrors(t *testing.T) {
	c, err := NewCache(4)
	if err != nil {
		t.Fatal(err)
	}
	comps := testComponents(t, 6, 40, tasks3...)
	_, err = NewProfile(context.Background(), ProfileSpec{
		Name:       "test",
		Components: comps,
		Options:    react.DefaultOptions(comps),
		Presets:    map[string]string{"texture": "dtd=1"},
		Cache:      c,
		Experiments: []ExperimentSpec{{
			Name: "bad",
			Arms: []ArmSpec{
				{Name: "a", Weight: 1, Preference: "foo=1"},
				{Name: "b", Weight: 1, Preset: "shiny"},
				{Name: "c", Weight: 1},
				{Name: "d", Weight: 1, Preference: "cars=1", Preset: "texture"},
				{Name: "e", Weight: -1, Preference: "cars=1"},
			},
			Start: time.Unix(100, 0).UTC(), End: time.Unix(50, 0).UTC(),
		}},
	})
	want := []string{
		`experiment bad: arm "e": weight -1: want an integer from 0 to 1000000`,
		"experiment bad: end 1970-01-01T00:00:50Z is not after start 1970-01-01T00:01:40Z",
		`experiment bad: arm 0: preference: preference "foo=1": unknown task "foo"`,
		`experiment bad: arm 1: preset: unknown preset "shiny" (presets: texture)`,
		`experiment bad: arm 2: preference: arm "c": give either a preference or a preset`,
		`experiment bad: arm 3: preference: arm "d": give either a preference or a preset`,
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	if len(errs) != len(want) {
		t.Fatalf("NewProfile: %v\nwant %d problems", err, len(want))
	}
	for i, e := range errs {
		var ee *ExperimentError
		if !errors.As(e, &ee) || !strings.HasPrefix(e.Error(), want[i]) {
			t.Errorf("problem %d: %v, want an *ExperimentError starting %q", i, e, want[i])
		}
	}
}
