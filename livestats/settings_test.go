package livestats

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
)

// goodSettings returns enabled settings that pass Check.
func goodSettings(dir string) Settings {
	s := DefaultSettings()
	s.Enabled = true
	s.Dir = dir
	s.Replica = "sidecar-0"
	s.Backbone = react.ModelRef{Name: "merged", Output: "feature"}
	s.Tasks = []TaskSettings{
		{Name: "a", Expert: react.ModelRef{Name: "expert_a", Version: "1", Output: "feature"}},
		{Name: "b", Expert: react.ModelRef{Name: "expert_b", Output: "feature"}},
	}
	s.Models = []ModelSettings{{Name: "model_a", Task: "a"}, {Name: "model_b", Task: "b"}, {Name: "ensemble_a", Task: "a"}}
	return s
}

func TestCheck(t *testing.T) {
	if l := (&Settings{}).Check(); len(l) == 0 {
		t.Error("zero settings: no problems (fraction, max_concurrent, ... are required)")
	}
	d := DefaultSettings()
	if l := d.Check(); len(l) != 0 {
		t.Errorf("defaults (sampling off): %v", l)
	}
	if d.Enabled {
		t.Error("sampling is on by default")
	}
	good := goodSettings("/tmp/live")
	if l := good.Check(); len(l) != 0 {
		t.Errorf("good settings: %v", l)
	}
	for _, tc := range []struct {
		name string
		edit func(*Settings)
		want []string // every problem's path, in order
	}{
		{"enabled, nothing configured", func(s *Settings) { *s = DefaultSettings(); s.Enabled = true },
			[]string{"checkpoint.dir", "backbone.model", "tasks", "models"}},
		{"off, bad values still reported", func(s *Settings) { s.Enabled = false; s.Fraction = 0; s.Holdout = 1 },
			[]string{"fraction", "holdout"}},
		{"every scalar at once", func(s *Settings) {
			s.Fraction, s.Holdout, s.MaxConcurrent, s.MinSamples = 1.5, -0.1, 0, 0
			s.Interval, s.Window, s.Beta, s.Normalization, s.Replica = time.Minute, time.Second, -1, "avg", "../x"
		}, []string{"fraction", "holdout", "max_concurrent", "min_samples", "checkpoint.window", "replica", "beta", "normalize"}},
		{"opt-out header: not a header", func(s *Settings) { s.OptOutHeader = "no sample" }, []string{"opt_out_header"}},
		{"opt-out header: gRPC's", func(s *Settings) { s.OptOutHeader = "x-bin" }, []string{"opt_out_header"}},
		{"opt-out header: ReACT's preference", func(s *Settings) { s.OptOutHeader = "React-Preference" }, []string{"opt_out_header"}},
		{"opt-out header: empty", func(s *Settings) { s.OptOutHeader = "" }, []string{"opt_out_header"}},
		{"interval", func(s *Settings) { s.Interval = 0 }, []string{"checkpoint.interval"}},
		{"tasks", func(s *Settings) {
			s.Tasks = append(s.Tasks, TaskSettings{Name: "a.b"}, TaskSettings{Name: "a", Expert: react.ModelRef{Name: "e", Output: "o"}})
		}, []string{"tasks[2].name", "tasks[2].expert.model", "tasks[3].name"}},
		{"models", func(s *Settings) {
			s.Models = append(s.Models, ModelSettings{Task: "a"}, ModelSettings{Name: "model_a", Task: "c"}, ModelSettings{Name: "m"})
		}, []string{"models[3].name", "models[4].name", "models[4].task", "models[5].task"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := goodSettings("/tmp/live")
			tc.edit(&s)
			l := s.Check()
			var got []string
			for _, p := range l {
				got = append(got, p.Path)
				if p.Msg == "" || strings.HasPrefix(p.Msg, p.Path) {
					t.Errorf("%s: message %q", p.Path, p.Msg)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems at %v, want %v:\n%v", got, tc.want, problem.List(l))
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	good := goodSettings(t.TempDir())
	if _, err := New(good, 4); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Settings)
		d    int
	}{
		{"off", func(s *Settings) { s.Enabled = false }, 4},
		{"bad settings", func(s *Settings) { s.Fraction = 2 }, 4},
		{"no replica", func(s *Settings) { s.Replica = "" }, 4},
		{"D", func(*Settings) {}, 0},
	} {
		s := goodSettings(t.TempDir())
		tc.edit(&s)
		if _, err := New(s, tc.d); err == nil {
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
}

func TestDefaultReplica(t *testing.T) {
	t.Setenv("POD_NAME", "react-triton-7d9f-abcde")
	if got, err := DefaultReplica(); got != "react-triton-7d9f-abcde" || err != nil {
		t.Errorf("with $POD_NAME: %q, %v", got, err)
	}
	t.Setenv("POD_NAME", "bad/name")
	if _, err := DefaultReplica(); err == nil {
		t.Error("an invalid $POD_NAME: no error")
	}
	t.Setenv("POD_NAME", "")
	host, _ := os.Hostname()
	if got, err := DefaultReplica(); err == nil && got != host {
		t.Errorf("without $POD_NAME: %q, want the host name %q", got, host)
	}
}
