package config

import (
	"slices"
	"strings"
	"time"

	"github.com/mergectl/react-triton/config/layer"
	"github.com/mergectl/react-triton/livestats"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
)

// Sampling configures calibrating from live traffic (package livestats):
// a share of the requests to the models it names are run again, after
// their response, through the merged backbone and their task's expert, and
// the statistics of the pairs are accumulated per task and written, one
// file per replica and window, for calibrate merge. Off by default; no
// input is stored, only the sums.
type Sampling struct {
	// Enabled turns sampling on. Default false.
	Enabled bool `yaml:"enabled"`
	// Fraction is the share of a sampled model's requests that are
	// sampled, in (0, 1]. Default 0.01.
	Fraction float64 `yaml:"fraction"`
	// Holdout is the share of sampled rows also kept apart, for calibrate
	// merge --beta auto, in [0, 1). Default 0.2.
	Holdout float64 `yaml:"holdout"`
	// OptOutHeader is the header (gRPC metadata key) whose presence keeps a
	// request out of the sample; the sidecar never passes it on to Triton.
	// Default react-no-sample.
	OptOutHeader string `yaml:"opt_out_header"`
	// MaxConcurrent bounds the samples in flight; beyond it a drawn request
	// is not sampled. Default 2.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MinSamples is how many rows a task's live reconstruction error needs
	// before it is exported. Default 1000.
	MinSamples int `yaml:"min_samples"`
	// Replica names this replica in its files; "" uses $POD_NAME, else the
	// host name. Default "".
	Replica string `yaml:"replica"`
	// Beta and Normalize are the default β and normalisation written in
	// the files. Defaults 10 and sum, calibrate fit's.
	Beta      float64 `yaml:"beta"`
	Normalize string  `yaml:"normalize"`
	// Checkpoint says where and how often the files are written.
	Checkpoint SamplingCheckpoint `yaml:"checkpoint"`
	// Backbone is the merged backbone whose feature is z_mtl: its model,
	// version ("": Triton's choice) and output ("": its only output).
	Backbone Backbone `yaml:"backbone"`
	// Models are the models whose requests may be sampled.
	Models []SampledModel `yaml:"models"`
	// Tasks are the tasks that may be sampled, with their experts.
	Tasks []SampledTask `yaml:"tasks"`
}

// SamplingCheckpoint says where and how often the sampled statistics are
// written.
type SamplingCheckpoint struct {
	// Dir is the directory of the files (a volume the refresh job reads),
	// relative to the configuration file; required when sampling is on.
	Dir string `yaml:"dir"`
	// Interval is how often the current window's file is rewritten.
	// Default 5m.
	Interval time.Duration `yaml:"interval"`
	// Window is how long a window of traffic lasts before a new file
	// starts. Default 24h.
	Window time.Duration `yaml:"window"`
}

// SampledModel maps a model clients call to its task.
type SampledModel struct {
	// Name is the model clients call: a controllable model or one passed
	// through to Triton.
	Name string `yaml:"name"`
	// Task is the task its inputs belong to; it may be left out for a
	// controllable model of one head, whose task it then is.
	Task string `yaml:"task"`
}

// SampledTask names a task that may be sampled and its expert.
type SampledTask struct {
	Name   string `yaml:"name"`
	Expert Expert `yaml:"expert"`
}

// Expert names a task's expert model and the output holding its feature.
type Expert struct {
	Model string `yaml:"model"`
	// Version is a positive integer, or "" for Triton's choice.
	Version string `yaml:"version"`
	// Output is the output holding the feature, or "" for the model's
	// only output.
	Output string `yaml:"output"`
}

// defaultSampling returns the sampling section's defaults: off.
func defaultSampling() Sampling {
	d := livestats.DefaultSettings()
	return Sampling{
		Fraction: d.Fraction, Holdout: d.Holdout, OptOutHeader: d.OptOutHeader,
		MaxConcurrent: d.MaxConcurrent, MinSamples: int(d.MinSamples),
		Beta: d.Beta, Normalize: d.Normalization,
		Checkpoint: SamplingCheckpoint{Interval: d.Interval, Window: d.Window},
	}
}

// SamplingSettings returns the sampling section in the terms of
// livestats.Settings, whose Check holds its rules: a model's task left
// out is its one head's. The replica is left as configured; the sidecar
// fills in "".
func (c *Config) SamplingSettings() livestats.Settings {
	s := &c.Sampling
	out := livestats.Settings{
		Enabled: s.Enabled, Fraction: s.Fraction, Holdout: s.Holdout, OptOutHeader: s.OptOutHeader,
		MaxConcurrent: s.MaxConcurrent, MinSamples: int64(s.MinSamples),
		Dir: s.Checkpoint.Dir, Interval: s.Checkpoint.Interval, Window: s.Checkpoint.Window,
		Replica: s.Replica, Beta: s.Beta, Normalization: s.Normalize,
		Backbone: react.ModelRef{Name: s.Backbone.Model, Version: s.Backbone.Version, Output: s.Backbone.Output},
	}
	for _, m := range s.Models {
		task := m.Task
		if task == "" {
			if cm := c.model(m.Name); cm != nil && !cm.Graph() && len(cm.Heads) == 1 {
				task = cm.Heads[0].Task
			}
		}
		out.Models = append(out.Models, livestats.ModelSettings{Name: m.Name, Task: task})
	}
	for _, t := range s.Tasks {
		out.Tasks = append(out.Tasks, livestats.TaskSettings{Name: t.Name,
			Expert: react.ModelRef{Name: t.Expert.Model, Version: t.Expert.Version, Output: t.Expert.Output}})
	}
	return out
}

// model returns the controllable model named name, nil when there is none.
func (c *Config) model(name string) *Model {
	for i := range c.Models {
		if c.Models[i].Name == name {
			return &c.Models[i]
		}
	}
	return nil
}

// validateSampling checks the sampling section: its rules are
// livestats.Settings.Check's, at their paths under sampling; the versions
// are checked as every model version is, and a controllable model's task
// against its heads.
func (c *Config) validateSampling(p *problem.List) {
	s := c.SamplingSettings()
	l := s.Check().Rename(func(path string) string { return "sampling." + path })
	layer.CheckVersion(&l, "sampling.backbone.version", c.Sampling.Backbone.Version)
	for i, t := range c.Sampling.Tasks {
		layer.CheckVersion(&l, problem.Index("sampling.tasks", i)+".expert.version", t.Expert.Version)
	}
	for i, m := range c.Sampling.Models {
		path := problem.Index("sampling.models", i) + ".task"
		cm := c.model(m.Name)
		switch {
		case m.Task == "" && cm != nil && !cm.Graph() && len(cm.Heads) > 1:
			l = replace(l, path, "required: model %q has %d heads; name the task whose inputs it is sent", m.Name, len(cm.Heads))
		case m.Task == "" && cm != nil && cm.Graph():
			l = replace(l, path, "required: the task the inputs of ensemble %q belong to", m.Name)
		case m.Task != "" && cm != nil && !cm.Graph():
			var tasks []string
			for _, h := range cm.Heads {
				tasks = append(tasks, h.Task)
			}
			if !slices.Contains(tasks, m.Task) {
				l.Add(path, "%q is not the task of a head of model %q (%s)", m.Task, m.Name, strings.Join(tasks, ", "))
			}
		}
	}
	*p = append(*p, l...)
}

// replace replaces the problems at path with one of its own.
func replace(l problem.List, path, format string, args ...any) problem.List {
	l = slices.DeleteFunc(l, func(p *problem.Problem) bool { return p.Path == path })
	l.Add(path, format, args...)
	return l
}
