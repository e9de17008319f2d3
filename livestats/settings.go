package livestats

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
)

// Defaults of the sampling settings. Sampling itself is off unless
// Settings.Enabled.
const (
	DefaultFraction      = 0.01
	DefaultHoldout       = 0.2
	DefaultOptOutHeader  = "react-no-sample"
	DefaultMaxConcurrent = 2
	DefaultMinSamples    = 1000
	DefaultInterval      = 5 * time.Minute
	DefaultWindow        = 24 * time.Hour
	// DefaultBeta and DefaultNormalization are calibrate fit's defaults,
	// written in the live files as their default β and normalisation.
	DefaultBeta          = 10
	DefaultNormalization = react.NormSum
)

// Settings configure live sampling: which requests are sampled, the
// models that compute the paired features, and where and how often the
// sums are written. The sidecar's YAML section sampling adapts them
// (sidecar/config); Check holds their rules.
type Settings struct {
	// Enabled turns sampling on. Off (the default), nothing is sampled
	// and nothing written.
	Enabled bool
	// Fraction is the share of a sampled model's requests that are
	// sampled, in (0, 1].
	Fraction float64
	// Holdout is the share of sampled rows whose sums are also kept apart,
	// so that calibrate merge --beta auto can choose β without labels, in
	// [0, 1).
	Holdout float64
	// OptOutHeader is the header (gRPC metadata key) whose presence, with
	// any value, keeps a request out of the sample.
	OptOutHeader string
	// MaxConcurrent bounds the samples in flight at once (their backbone
	// and expert calls and their accumulation); beyond it a drawn request
	// is skipped.
	MaxConcurrent int
	// MinSamples is how many rows a task's live reconstruction error
	// needs before it is exported.
	MinSamples int64
	// Dir is the directory the files are written to, one per replica and
	// window; Interval how often the current window's file is rewritten,
	// and Window how long a window lasts before a new file starts.
	Dir      string
	Interval time.Duration
	Window   time.Duration
	// Replica names this replica in its files' names and metadata; the
	// sidecar fills it from $POD_NAME or the host name when it is "".
	Replica string
	// Beta and Normalization are written in the files as their default β
	// and normalisation, which calibrate merge keeps unless told.
	Beta          float64
	Normalization string
	// Backbone is the merged backbone whose feature is z_mtl; an Output of
	// "" is the model's only output, as calibrate fit resolves it.
	Backbone react.ModelRef
	// Models are the models whose requests may be sampled, each for one
	// task.
	Models []ModelSettings
	// Tasks are the tasks that may be sampled, each with the expert whose
	// feature is z_ind.
	Tasks []TaskSettings
}

// ModelSettings maps a model clients call to the task its inputs belong to.
type ModelSettings struct {
	Name string
	Task string
}

// TaskSettings names a task that may be sampled and its expert (an
// Output of "" is the model's only output).
type TaskSettings struct {
	Name   string
	Expert react.ModelRef
}

// DefaultSettings returns the settings with every default applied:
// sampling off, nothing configured.
func DefaultSettings() Settings {
	return Settings{
		Fraction: DefaultFraction, Holdout: DefaultHoldout, OptOutHeader: DefaultOptOutHeader,
		MaxConcurrent: DefaultMaxConcurrent, MinSamples: DefaultMinSamples,
		Interval: DefaultInterval, Window: DefaultWindow,
		Beta: DefaultBeta, Normalization: string(DefaultNormalization),
	}
}

// ReplicaPattern is what a replica name must match: it names files.
var ReplicaPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// headerName is an HTTP header name (a token), which gRPC metadata keys
// also are.
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// ownKeys are ReACT's request keys, which cannot opt out.
var ownKeys = []string{"react-preference", "react-preset", "react-arm"}

// Check returns every problem of s, with paths in the terms of the
// sidecar's sampling section ("fraction", "models[0].task",
// "tasks[1].expert.model", "checkpoint.dir", "backbone.output"). Values
// are checked whether or not sampling is enabled; what sampling needs
// (a directory, a backbone, tasks and models) is required only when it is.
// Model versions are the configuration's to check (config/layer's
// CheckVersion, the rule of every surface).
func (s *Settings) Check() problem.List {
	var l problem.List
	if !(s.Fraction > 0 && s.Fraction <= 1) {
		l.Add("fraction", "must be in (0, 1], got %v", s.Fraction)
	}
	if !(s.Holdout >= 0 && s.Holdout < 1) {
		l.Add("holdout", "must be in [0, 1), got %v", s.Holdout)
	}
	if msg := checkOptOut(s.OptOutHeader); msg != "" {
		l.Add("opt_out_header", "%s", msg)
	}
	if s.MaxConcurrent < 1 {
		l.Add("max_concurrent", "must be at least 1, got %d", s.MaxConcurrent)
	}
	if s.MinSamples < 1 {
		l.Add("min_samples", "must be at least 1, got %d", s.MinSamples)
	}
	if s.Interval <= 0 {
		l.Add("checkpoint.interval", "must be positive, got %v", s.Interval)
	}
	if s.Window < s.Interval && s.Interval > 0 {
		l.Add("checkpoint.window", "%v is shorter than checkpoint.interval (%v): a window must see at least one checkpoint", s.Window, s.Interval)
	}
	if s.Enabled && s.Dir == "" {
		l.Add("checkpoint.dir", "required: the directory the replicas' statistics files are written to (a shared volume)")
	}
	if s.Replica != "" && !ReplicaPattern.MatchString(s.Replica) {
		l.Add("replica", "%q: want 1 to 128 letters, digits, '_', '.' and '-', starting with a letter or digit", s.Replica)
	}
	if err := react.ValidateBeta(s.Beta); err != nil {
		l.Add("beta", "%v", err)
	}
	if _, err := react.ParseNormalization(s.Normalization); err != nil {
		l.Add("normalize", "%v", err)
	}
	s.checkBackbone(&l)
	tasks := s.checkTasks(&l)
	s.checkModels(&l, tasks)
	return l
}

// checkOptOut returns what is wrong with an opt-out header name, or "".
func checkOptOut(h string) string {
	lower := strings.ToLower(h)
	switch {
	case h == "":
		return "required: the header that keeps a request out of the sample (default " + DefaultOptOutHeader + ")"
	case !headerName.MatchString(h):
		return "\"" + h + "\" is not a header name"
	case strings.HasSuffix(lower, "-bin") || strings.HasPrefix(lower, "grpc-"):
		return "\"" + h + "\": gRPC reserves grpc-* keys and gives -bin keys binary values"
	}
	for _, k := range ownKeys {
		if lower == k {
			return "\"" + h + "\" is ReACT's own request key"
		}
	}
	return ""
}

func (s *Settings) checkBackbone(l *problem.List) {
	b := s.Backbone
	if b.Name == "" && s.Enabled {
		l.Add("backbone.model", "required: the merged backbone whose feature is z_mtl")
	}
}

// checkTasks checks the tasks and returns their names.
func (s *Settings) checkTasks(l *problem.List) map[string]bool {
	names := map[string]bool{}
	if s.Enabled && len(s.Tasks) == 0 {
		l.Add("tasks", "at least one task required: the tasks that may be sampled, with their experts")
	}
	for i, t := range s.Tasks {
		path := problem.Index("tasks", i)
		if err := react.ValidateTaskName(t.Name); err != nil {
			l.Add(path+".name", "%v", err)
		} else if names[t.Name] {
			l.Add(path+".name", "%q is listed twice", t.Name)
		}
		names[t.Name] = true
		if t.Expert.Name == "" {
			l.Add(path+".expert.model", "required: the task's expert, whose feature is z_ind")
		}
	}
	return names
}

func (s *Settings) checkModels(l *problem.List, tasks map[string]bool) {
	if s.Enabled && len(s.Models) == 0 {
		l.Add("models", "at least one model required: the models whose requests may be sampled")
	}
	seen := map[string]bool{}
	for i, m := range s.Models {
		path := problem.Index("models", i)
		switch {
		case m.Name == "":
			l.Add(path+".name", "required: a model clients call")
		case seen[m.Name]:
			l.Add(path+".name", "%q is listed twice", m.Name)
		}
		seen[m.Name] = true
		switch {
		case m.Task == "":
			l.Add(path+".task", "required: the task the model's inputs belong to")
		case !tasks[m.Task]:
			l.Add(path+".task", "%q is not one of tasks[].name: a model's requests are sampled for a task listed there", m.Task)
		}
	}
}

// DefaultReplica returns the name a replica takes when Settings.Replica
// is "": $POD_NAME (Kubernetes' downward API), else the host name. It
// fails when neither is a valid replica name (ReplicaPattern).
func DefaultReplica() (string, error) {
	name := os.Getenv("POD_NAME")
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("livestats: replica name: %w", err)
		}
	}
	if !ReplicaPattern.MatchString(name) {
		return "", fmt.Errorf("livestats: replica name %q (from $POD_NAME or the host name): set sampling.replica", name)
	}
	return name, nil
}
