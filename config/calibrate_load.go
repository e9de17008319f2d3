package config

import (
	"errors"
	"reflect"

	"github.com/mergectl/react-triton/config/layer"
	"github.com/mergectl/react-triton/problem"
	"github.com/spf13/pflag"
)

// LoadCalibrate reads calibrate fit's configuration, applies the defaults,
// resolves relative paths, and validates the result.
//
// The values come, from lowest to highest precedence, from the defaults
// (DefaultCalibrate), the YAML file at path, the environment and flags,
// layered by the engine the sidecar's Load uses:
//
//   - path "" reads no file, unless flags holds a --config flag that was
//     set (see BindCalibrateFlags); then that file is read;
//   - every scalar key, and list of scalars, can be overridden by an
//     environment variable named after it (see EnvVar): REACT_TRITON_GRPC,
//     REACT_SAMPLE_LIMIT, REACT_TASKS=a,b;
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
// returned together as a problem.List, each with its path and its line,
// flag or variable.
func LoadCalibrate(path string, flags *pflag.FlagSet) (*Calibrate, error) {
	path, file, decodeErrs, err := layer.Open(path, flags, new(Calibrate))
	if err != nil {
		return nil, err
	}
	c, err := loadCalibrate(file, decodeErrs, flags)
	if err != nil {
		return nil, layer.Wrap(path, err)
	}
	return c, nil
}

// calibrateKeys are every scalar key of Calibrate, in schema order.
var calibrateKeys = layer.Keys(reflect.TypeFor[Calibrate]())

func loadCalibrate(file *layer.File, decodeErrs problem.List, flags *pflag.FlagSet) (*Calibrate, error) {
	c := DefaultCalibrate()
	l, err := layer.New(calibrateKeys, c, file, flags, calibrateFlagKeys)
	if err != nil {
		return nil, err
	}
	p := append(problem.List(nil), decodeErrs...)
	l.Apply(c, &p)
	if file != nil {
		c.File = file.Path()
		c.Experts = file.Values().(*Calibrate).Experts
		l.ResolvePaths(c.paths())
	}
	if flags != nil {
		applyCalibrateFlags(c, flags, l.Sources, &p)
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
		p = append(p, layer.Unmasked(decodeErrs, verr)...)
	} else if err != nil {
		return nil, err
	}
	if err := l.Finish(p); err != nil {
		return nil, err
	}
	return c, nil
}

// applyCalibrateFlags applies the flags that are not one key's value
// (--beta, which may say auto, --expert and --quiet) over c, recording
// which key each one set.
func applyCalibrateFlags(c *Calibrate, flags *pflag.FlagSet, sources map[string]string, p *problem.List) {
	changed := func(name string) bool {
		f := flags.Lookup(name)
		return f != nil && f.Changed
	}
	if changed(FlagBeta) {
		if err := setBeta(c, flags); err != nil {
			*p = append(*p, &problem.Problem{Path: "beta", Msg: err.Error(), Source: flagSource(FlagBeta)})
		} else {
			sources["beta"] = flagSource(FlagBeta)
		}
	}
	if changed(flagExpert) {
		if err := setExperts(c, flags); err != nil {
			*p = append(*p, &problem.Problem{Path: "experts", Msg: err.Error(), Source: flagSource(flagExpert)})
		} else {
			// Each expert's problems belong to the flag that gave it; the
			// file's other entries keep their lines.
			list, _ := flags.GetStringArray(flagExpert)
			for _, s := range list {
				if task, _, err := ParseExpert(s); err == nil {
					sources[problem.Key("experts", task)] = flagSource(flagExpert)
				}
			}
		}
	}
	switch {
	case changed(FlagProgress) && changed(FlagQuiet):
		*p = append(*p, &problem.Problem{Path: "progress", Msg: "--progress and --quiet exclude each other", Source: flagSource(FlagQuiet)})
	case changed(FlagQuiet):
		c.Progress, sources["progress"] = ProgressNever, flagSource(FlagQuiet)
	}
}

// paths returns the configuration's file and directory paths by key: a
// file's are relative to the file, a flag's to the working directory.
func (c *Calibrate) paths() map[string]*string {
	return map[string]*string{
		"embeddings": &c.Embeddings, "inputs": &c.Inputs, "out": &c.Out,
		"into": &c.Into, "checkpoint.dir": &c.Checkpoint.Dir,
	}
}
