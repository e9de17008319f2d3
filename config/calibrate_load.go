package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/mergectl/react-triton/problem"
	"github.com/spf13/pflag"
)

// LoadCalibrate reads calibrate fit's configuration, applies the defaults,
// resolves relative paths, and validates the result.
//
// The values come, from lowest to highest precedence, from the defaults
// (DefaultCalibrate), the YAML file at path, and flags:
//
//   - path "" reads no file, unless flags holds a --config flag that was
//     set (see BindCalibrateFlags); then that file is read;
//   - flags, when not nil, are the flags of BindCalibrateFlags; those that
//     were set override their key (each --expert replaces one task's
//     entry of experts).
//
// Relative paths in the file (embeddings, inputs, out, into,
// checkpoint.dir) are resolved against the file's directory. out defaults
// to into, and checkpoint.dir to out followed by ".ckpt".
//
// The file is decoded strictly, like the sidecar's (Load): every problem,
// an unknown key, a value of the wrong type or one Validate finds, is
// returned together in an *Error, each with its path and its line or flag.
func LoadCalibrate(path string, flags *pflag.FlagSet) (*Calibrate, error) {
	if path == "" && flags != nil {
		if f := flags.Lookup(FlagConfig); f != nil && f.Changed {
			path = f.Value.String()
		}
	}
	c, err := loadCalibrate(path, flags)
	if err != nil {
		if path == "" {
			return nil, fmt.Errorf("config: %w", err)
		}
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return c, nil
}

func loadCalibrate(path string, flags *pflag.FlagSet) (*Calibrate, error) {
	c := DefaultCalibrate()
	var p problem.List
	var decodeErrs problem.List // the file's keys that did not decode
	lines := map[string]int{}
	sources := map[string]string{} // key → the flag that set it
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is in the caller's prefix
			}
			return nil, fmt.Errorf("reading: %w", err)
		}
		d := newDecoder()
		if err := d.document(data, reflect.ValueOf(c).Elem()); err != nil {
			return nil, err
		}
		p = append(p, d.errs...)
		decodeErrs = d.errs
		lines, c.File = d.lines, abs
		dir := filepath.Dir(abs)
		for key, ptr := range c.paths() {
			if d.set[key] && *ptr != "" && !filepath.IsAbs(*ptr) {
				*ptr = filepath.Join(dir, *ptr)
			}
		}
	}
	if flags != nil {
		applyCalibrateFlags(c, flags, sources, &p)
	}
	// An empty list is no list: [] in the file (as --print-config writes
	// it) loads like a key left out.
	if len(c.Tasks) == 0 {
		c.Tasks = nil
	}
	if len(c.Images.Size) == 0 {
		c.Images.Size = nil
	}
	if len(c.Images.Mean) == 0 {
		c.Images.Mean = nil
	}
	if len(c.Images.Std) == 0 {
		c.Images.Std = nil
	}
	if c.Out == "" {
		c.Out = c.Into
	}
	if c.Checkpoint.Dir == "" && c.Out != "" {
		c.Checkpoint.Dir = c.Out + CheckpointSuffix
	}
	var verr problem.List
	if err := c.Validate(); errors.As(err, &verr) {
		if len(decodeErrs) > 0 {
			// A key that did not decode explains the problems of its section.
			verr = (&loader{decodeErrs: decodeErrs}).unmasked(verr)
		}
		p = append(p, verr...)
	} else if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return c, nil
	}
	for _, fe := range p {
		if fe.Line != 0 || fe.Source != "" {
			continue
		}
		fe.Source = calibrateSource(fe.Path, sources)
		for _, pp := range problem.Parents(fe.Path) {
			if line, ok := lines[pp]; ok && fe.Source == "" {
				fe.Line = line
				break
			}
		}
	}
	p.SortByLine()
	return nil, p.Err()
}

// applyCalibrateFlags applies the flags that were set over c, recording
// which key each one set.
func applyCalibrateFlags(c *Calibrate, flags *pflag.FlagSet, sources map[string]string, p *problem.List) {
	changed := func(name string) bool {
		f := flags.Lookup(name)
		return f != nil && f.Changed
	}
	for _, f := range calibrateFlags {
		if !changed(f.name) {
			continue
		}
		if err := f.set(c, flags); err != nil {
			*p = append(*p, &problem.Problem{Path: f.key, Msg: err.Error(), Source: flagSource(f.name)})
			continue
		}
		sources[f.key] = flagSource(f.name)
		if f.name == "expert" {
			// Each expert's problems belong to the flag that gave it; the
			// file's other entries keep their lines.
			delete(sources, f.key)
			list, _ := flags.GetStringArray("expert")
			for _, s := range list {
				if task, _, err := ParseExpert(s); err == nil {
					sources[problem.Key("experts", task)] = flagSource(f.name)
				}
			}
		}
	}
	switch {
	case changed(FlagProgress) && changed(FlagQuiet):
		*p = append(*p, &problem.Problem{Path: "progress", Msg: "--progress and --quiet exclude each other", Source: flagSource(FlagQuiet)})
	case changed(FlagProgress):
		c.Progress, sources["progress"] = ProgressAlways, flagSource(FlagProgress)
	case changed(FlagQuiet):
		c.Progress, sources["progress"] = ProgressNever, flagSource(FlagQuiet)
	}
}

// calibrateSource names the flag that set the value at path, or one of its
// enclosing sections, "" when none did.
func calibrateSource(path string, sources map[string]string) string {
	for _, pp := range problem.Parents(path) {
		if src, ok := sources[pp]; ok {
			return src
		}
	}
	return ""
}

// paths returns the configuration's file and directory paths by key: a
// file's are relative to the file, a flag's to the working directory.
func (c *Calibrate) paths() map[string]*string {
	return map[string]*string{
		"embeddings": &c.Embeddings, "inputs": &c.Inputs, "out": &c.Out,
		"into": &c.Into, "checkpoint.dir": &c.Checkpoint.Dir,
	}
}
