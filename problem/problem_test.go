package problem

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Path: "cache.size", Msg: "must be at least 1, got 0", Line: 3}, "cache.size: must be at least 1, got 0 (line 3)"},
		{Problem{Path: "cache.size", Msg: "m", Source: "$REACT_CACHE_SIZE", Line: 3}, "cache.size: m (from $REACT_CACHE_SIZE)"},
		{Problem{Msg: "more than one YAML document"}, "more than one YAML document"},
		{Problem{Path: "models[0].name", Msg: "not ready", Transient: true}, "models[0].name: not ready"},
	} {
		if got := tc.p.Error(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	var l List
	if l.Err() != nil || l.Transient() {
		t.Errorf("empty list: Err %v, Transient %v; want nil, false", l.Err(), l.Transient())
	}
	l.Add("cache.size", "m%d", 1)
	if got, want := l.Error(), "cache.size: m1"; got != want {
		t.Errorf("one: got %q, want %q", got, want)
	}
	l = append(l, &Problem{Msg: "m2", Line: 1})
	if got, want := l.Error(), "2 problems:\n  cache.size: m1\n  m2 (line 1)"; got != want {
		t.Errorf("two: got %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("config: x.yaml: %w", l.Err())
	var p *Problem
	if !errors.As(wrapped, &p) || p != l[0] {
		t.Errorf("errors.As found %v, want the first problem", p)
	}
	var got List
	if !errors.As(wrapped, &got) || len(got) != 2 {
		t.Errorf("errors.As found the list %v, want both problems", got)
	}
	l.SortByLine()
	if l[0].Msg != "m1" {
		t.Errorf("sorted: %v; want the problem without a line first", l)
	}
	if l.Transient() {
		t.Error("Transient with permanent problems")
	}
	l[0].Transient, l[1].Transient = true, true
	if !l.Transient() {
		t.Error("not Transient with every problem transient")
	}
	l.Rename(func(p string) string { return "x." + p })
	if l[0].Path != "x.cache.size" || l[1].Path != "x." {
		t.Errorf("Rename: %q, %q", l[0].Path, l[1].Path)
	}
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct {
		path, key, want string
	}{
		{"", "triton", "triton"},
		{"components[0].presets", "balanced", "components[0].presets.balanced"},
		{"outputs", "scores:0", `outputs["scores:0"]`},
		{"presets", "v1.2", `presets["v1.2"]`},
		{"presets", `a "b"`, `presets["a \"b\""]`},
	} {
		got := Key(tc.path, tc.key)
		if got != tc.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.path, tc.key, got, tc.want)
		}
		// CutKey undoes Key, with and without something after the key.
		for _, rest := range []string{"", ".x", "[2]"} {
			if k, r, ok := CutKey(got+rest, tc.path); !ok || k != tc.key || r != rest {
				t.Errorf("CutKey(%q, %q) = %q, %q, %v; want %q, %q", got+rest, tc.path, k, r, ok, tc.key, rest)
			}
		}
	}
	for _, bad := range []string{"presets", "presetsx", `presets["x`, `presets[3]`} {
		if _, _, ok := CutKey(bad, "presets"); ok {
			t.Errorf("CutKey(%q) ok", bad)
		}
	}
	if got := Index("models", 2); got != "models[2]" {
		t.Errorf("Index = %q", got)
	}
	if got := fmt.Sprint(Parents("models[0].backbone.output")); got != "[models[0].backbone.output models[0].backbone models[0] models]" {
		t.Errorf("Parents = %s", got)
	}
	for _, tc := range []struct {
		path, root string
		want       bool
	}{{"a.b", "a", true}, {"a[0]", "a", true}, {"a", "a", true}, {"ab", "a", false}, {"b.a", "a", false}} {
		if got := Under(tc.path, tc.root); got != tc.want {
			t.Errorf("Under(%q, %q) = %v", tc.path, tc.root, got)
		}
	}
}

func TestLines(t *testing.T) {
	if (List{}).Lines() != nil {
		t.Error("Lines of no problems is not nil")
	}
	l := List{{Path: "a", Msg: "m1"}, {Path: "b", Msg: "m2", Line: 2}}
	err := fmt.Errorf("loading: %w", l.Lines())
	if got, want := err.Error(), "loading: a: m1\nb: m2 (line 2)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var got List
	if !errors.As(err, &got) || len(got) != 2 || got[1] != l[1] {
		t.Errorf("errors.As found the list %v, want l", got)
	}
	var p *Problem
	if !errors.As(err, &p) || p != l[0] {
		t.Errorf("errors.As found %v, want the first problem", p)
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 2 {
		t.Errorf("Unwrap() []error does not give the problems")
	}
}
