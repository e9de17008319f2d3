package config

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"

	"github.com/mergectl/react-triton/internal/filecheck"
)

// Shard is one of n deterministic parts of every task's samples.
type Shard struct {
	Index, Count int // 0 ≤ Index < Count
}

// ParseShard parses a shard written "i/n", 0 ≤ i < n.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("%q: want i/n, such as 0/4", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%q: want 0 ≤ i < n", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// String formats the shard as "i/n".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Validate checks calibrate fit's configuration and returns every problem
// it finds as an *Error, or nil. It reads the file system: the directory of
// out must exist, and into must be a readable file.
func (c *Calibrate) Validate() error {
	var p problem.List
	c.validateSource(&p)
	if err := react.ValidateBeta(c.Beta); err != nil {
		p.Add("beta", "%v", err)
	}
	if _, err := react.ParseNormalization(c.Normalize); err != nil {
		p.Add("normalize", "%v", err)
	}
	c.validateTasks(&p)
	if c.Chunk < 0 {
		p.Add("chunk", "must be ≥ 0 (0 for the default), got %d", c.Chunk)
	}
	if c.InFlight < 1 {
		p.Add("in_flight", "must be at least 1, got %d", c.InFlight)
	}
	if c.Checkpoint.Every < 1 {
		p.Add("checkpoint.every", "must be at least 1, got %d", c.Checkpoint.Every)
	}
	c.validateImages(&p)
	c.validateSample(&p)
	c.validateBetaSelect(&p)
	c.validateOutput(&p)
	if err := CheckProgress(c.Progress); err != nil {
		p.Add("progress", "%v", err)
	}
	return p.Err()
}

// validateSource checks where the features come from.
func (c *Calibrate) validateSource(p *problem.List) {
	t := &c.Triton
	switch {
	case c.Embeddings == "" && t.GRPC == "":
		p.Add("triton.grpc", "required: give triton.grpc (--triton HOST:PORT) and inputs, or embeddings (--embeddings DIR)")
	case c.Embeddings != "" && t.GRPC != "":
		p.Add("embeddings", "excludes triton.grpc: the features come from .npy files or from the models on Triton")
	case t.GRPC != "":
		if msg := checkAddr(t.GRPC, false); msg != "" {
			p.Add("triton.grpc", "%s", msg)
		}
		if c.Inputs == "" {
			p.Add("inputs", "required with triton.grpc: the directory of each task's calibration inputs, <task>.npy or a folder <task>/ of images")
		}
		if c.Backbone.Model == "" {
			p.Add("backbone.model", "required with triton.grpc: the merged backbone to run")
		}
	case c.Inputs != "":
		p.Add("inputs", "only used with triton.grpc")
	}
	if t.Timeout <= 0 {
		p.Add("triton.timeout", "must be positive, got %v", t.Timeout)
	}
	nonNegative(p, "triton.retry_max_wait", t.RetryMaxWait)
	checkVersion(p, "backbone.version", c.Backbone.Version)
}

// validateTasks checks the task list and the experts.
func (c *Calibrate) validateTasks(p *problem.List) {
	listed := map[string]bool{}
	for i, task := range c.Tasks {
		path := problem.Index("tasks", i)
		if err := react.ValidateTaskName(task); err != nil {
			p.Add(path, "%v", err)
			continue
		}
		if listed[task] {
			p.Add(path, "task %q listed twice", task)
		}
		listed[task] = true
	}
	if c.Only != "" {
		if err := react.ValidateTaskName(c.Only); err != nil {
			p.Add("only", "%v", err)
		}
		if len(c.Tasks) > 0 && (len(c.Tasks) != 1 || c.Tasks[0] != c.Only) {
			p.Add("only", "excludes tasks: only fits one task")
		}
	}
	for _, task := range slices.Sorted(maps.Keys(c.Experts)) {
		m := c.Experts[task]
		path := problem.Key("experts", task)
		if err := react.ValidateTaskName(task); err != nil {
			p.Add(path, "%v", err)
			continue
		}
		// With only, a file listing every task's expert serves each run.
		if len(c.Tasks) > 0 && !listed[task] && c.Only == "" {
			p.Add(path, "task %q is not in tasks", task)
		}
		if m.Model == "" {
			p.Add(path+".model", "required: the task's expert model in Triton")
		}
		checkVersion(p, path+".version", m.Version)
	}
}

// validateImages checks how images become samples (the values only: the
// model's input shape decides the rest when the fit starts).
func (c *Calibrate) validateImages(p *problem.List) {
	im := &c.Images
	oneOf := func(key, v string, want ...string) {
		if !slices.Contains(want, v) {
			p.Add(key, "%q: want %s", v, orList(want))
		}
	}
	oneOf("images.layout", im.Layout, "auto", "chw", "hwc", "hw")
	oneOf("images.channels", im.Channels, "auto", "grey", "rgb", "bgr")
	oneOf("images.resize", im.Resize, "bilinear", "none")
	oneOf("images.on_error", im.OnError, OnErrorFail, OnErrorSkip)
	oneOf("images.decode", im.Decode, DecodeGo, DecodeTriton)
	if im.Decode == DecodeTriton {
		// The preprocessing model decides all that; a setting here would
		// be silently ignored.
		d := DefaultCalibrate().Images
		for _, kv := range []struct {
			key string
			set bool
		}{
			{"images.layout", im.Layout != d.Layout}, {"images.channels", im.Channels != d.Channels},
			{"images.size", len(im.Size) > 0}, {"images.resize", im.Resize != d.Resize},
			{"images.mean", len(im.Mean) > 0}, {"images.std", len(im.Std) > 0},
		} {
			if kv.set {
				p.Add(kv.key, "applies to images.decode: go only: with triton the preprocessing model in Triton decides it; leave it out")
			}
		}
	}
	if len(im.Size) != 0 && (len(im.Size) != 2 || im.Size[0] < 1 || im.Size[1] < 1) {
		p.Add("images.size", "%v: want [height, width], both positive, or leave it out for the model's", im.Size)
	}
	for _, kv := range []struct {
		key string
		v   []float64
	}{{"images.mean", im.Mean}, {"images.std", im.Std}} {
		if n := len(kv.v); n != 0 && n != 1 && n != 3 {
			p.Add(kv.key, "%v: want one value, or one per channel (1 or 3)", kv.v)
		}
		for _, x := range kv.v {
			if math.IsNaN(x) || math.IsInf(x, 0) || (kv.key == "images.std" && x <= 0) {
				what := "finite numbers"
				if kv.key == "images.std" {
					what = "finite numbers > 0"
				}
				p.Add(kv.key, "%v: want %s", kv.v, what)
				break
			}
		}
	}
}

// orList formats choices as "a, b or c".
func orList(choices []string) string {
	if len(choices) == 1 {
		return choices[0]
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// validateSample checks the subset of samples and the shard.
func (c *Calibrate) validateSample(p *problem.List) {
	s := &c.Sample
	if f := s.Fraction; math.IsNaN(f) || f < 0 || f > 1 {
		p.Add("sample.fraction", "must be in (0, 1], or 0 for every sample, got %v", f)
	}
	if s.Limit < 0 {
		p.Add("sample.limit", "must be ≥ 0 (0 for every sample), got %d", s.Limit)
	}
	if s.Fraction != 0 && s.Limit != 0 {
		p.Add("sample.limit", "excludes sample.fraction: give one of them")
	}
	if s.Seed < 0 {
		p.Add("sample.seed", "must be ≥ 0, got %d", s.Seed)
	}
	if c.Shard != "" {
		if _, err := ParseShard(c.Shard); err != nil {
			p.Add("shard", "%v", err)
		}
		if c.Only != "" {
			p.Add("shard", "excludes only: a shard writes partial statistics, which calibrate merge turns into a components file")
		}
	}
}

// validateOutput checks out and into.
func (c *Calibrate) validateOutput(p *problem.List) {
	switch {
	case c.Only != "" && c.Into == "":
		p.Add("into", "required with only: the components file to add the task to")
	case c.Only == "" && c.Into != "":
		p.Add("only", "required with into: the task to add to it")
	case c.Into != "":
		if msg := filecheck.Regular(c.Into); msg != "" {
			p.Add("into", "%s", msg)
		}
	}
	if c.Out == "" {
		p.Add("out", "required: the file to write")
		return
	}
	if st, err := os.Stat(c.Out); err == nil && st.IsDir() {
		p.Add("out", "%s is a directory, want a file name", c.Out)
	}
	if st, err := os.Stat(filepath.Dir(c.Out)); err != nil || !st.IsDir() {
		p.Add("out", "directory %s does not exist", filepath.Dir(c.Out))
	}
}

func (c *Calibrate) validateBetaSelect(p *problem.List) {
	b := &c.BetaSelect
	if h := b.Holdout; math.IsNaN(h) || h <= 0 || h >= 1 {
		p.Add("beta_select.holdout", "must be in (0, 1), got %v", h)
	}
	if !b.Auto {
		if b.Report != "" {
			p.Add("beta_select.report", "needs beta_select.auto (--beta auto)")
		}
		return
	}
	if c.Shard != "" {
		p.Add("beta_select.auto", "excludes shard: a shard holds part of the samples; choose β on the merged file's fit instead")
	}
	if c.Only != "" {
		p.Add("beta_select.auto", "excludes only: the file's β is chosen over every task")
	}
}
