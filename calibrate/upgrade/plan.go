package upgrade

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/mergectl/react-triton/backend/model"
	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/triton/ensemble"
	"github.com/mergectl/react-triton/triton/modelconfig"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// The tensors of a react model that upgrade writes.
const (
	stepInput  = "embedding"
	stepOutput = "corrected"
	// tensorSuffix names the corrected tensor in the ensemble: the
	// tensor's name and this.
	tensorSuffix = "_react"
)

// Options say what to upgrade: the flags of calibrate upgrade.
type Options struct {
	Repository string // the model repository
	Model      string // the ensemble to upgrade
	Correct    string // the ensemble's tensor to correct
	Components string // the components file
	ReactModel string // the react model's name; "" for react_<backbone model>
	VariantOf  string // a model the components file may have been calibrated on instead of the backbone
	// Profile is the react model's profile, as the flags of
	// config.BindProfileFlags give it and control.Settings.Check accepts
	// it: its one profile's β, normalisation, default preference and
	// presets, and the bounds, each written as the backend's parameter of
	// that name when it is set or other than its default. The profile's
	// components path is not written: the model reads each version's copy
	// of Components.
	Profile control.Settings
}

// Plan is what an upgrade writes: Options.Plan computes it, Describe
// prints it, Write writes it.
type Plan struct {
	React        string // the react model's name
	reactConfig  []byte // its config.pbtxt, nil when it exists already
	Version      int    // the react model's new version
	EnsemblePath string // the ensemble's config.pbtxt
	ensembleOld  []byte
	ensembleNew  []byte // nil when the ensemble has its react step already
}

// EditsEnsemble reports whether the plan writes the ensemble's react step
// (false when the ensemble has it already).
func (p *Plan) EditsEnsemble() bool { return p.ensembleNew != nil }

// Plan checks everything (the ensemble, the tensor and the step producing
// it, the components file against that step's model and output, an existing
// react model) and computes what to write; it writes nothing.
func (o *Options) Plan() (*Plan, error) {
	p := &Plan{EnsemblePath: filepath.Join(o.Repository, o.Model, "config.pbtxt")}
	ens, text, err := modelconfig.ReadFile(p.EnsemblePath)
	if err != nil {
		return nil, err
	}
	p.ensembleOld = text
	g, err := ensemble.New(ens)
	if err != nil {
		return nil, err
	}
	site, err := g.Locate(o.Correct)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.EnsemblePath, err)
	}

	// Upgraded already: the tensor goes to a react step, whose model gets
	// a new version.
	upgraded := ""
	for _, c := range site.Consumers {
		name := g.Steps[c].GetModelName()
		if cfg, _, err := modelconfig.ReadFile(filepath.Join(o.Repository, name, "config.pbtxt")); err == nil && cfg.GetBackend() == "react" {
			upgraded = name
		}
	}

	producerPath := filepath.Join(o.Repository, site.Model, "config.pbtxt")
	producer, _, err := modelconfig.ReadFile(producerPath)
	if err != nil {
		return nil, fmt.Errorf("the step producing %q: %w", o.Correct, err)
	}
	var out *tritonpb.ModelOutput
	for _, t := range producer.GetOutput() {
		if t.GetName() == site.Output {
			out = t
		}
	}
	if out == nil {
		return nil, fmt.Errorf("%s: model %q has no output %q, which the ensemble maps to %q", producerPath, site.Model, site.Output, o.Correct)
	}
	dims := out.GetDims()
	d := 0
	if len(dims) > 0 {
		d = int(dims[len(dims)-1])
	}

	info, err := componentsfile.ReadInfo(o.Components)
	if err != nil {
		return nil, err
	}
	var problems []string
	if d != info.D {
		problems = append(problems, fmt.Sprintf("tensor %q is %s output %q of dims %v, but %s has D = %d", o.Correct, site.Model, site.Output, dims, o.Components, info.D))
	}
	calibrated := info.Backbone.Name
	switch {
	case calibrated == "":
		problems = append(problems, fmt.Sprintf("%s records no backbone: it cannot be checked against %q (refit it with calibrate fit)", o.Components, site.Model))
	case calibrated != site.Model && calibrated != o.VariantOf:
		problems = append(problems, fmt.Sprintf("%s was calibrated on model %q, but %q produces tensor %q: calibrate on %q, or name the model it was calibrated on with --variant-of %s if it is a variant of it (an FP16 copy, say)",
			o.Components, calibrated, site.Model, o.Correct, site.Model, calibrated))
	case calibrated == site.Model && info.Backbone.Output != "" && info.Backbone.Output != site.Output:
		problems = append(problems, fmt.Sprintf("%s was calibrated on output %q of %q, but the ensemble corrects its output %q", o.Components, info.Backbone.Output, calibrated, site.Output))
	}

	p.React = o.ReactModel
	if p.React == "" {
		p.React = "react_" + site.Model
	}
	if upgraded != "" && upgraded != p.React {
		problems = append(problems, fmt.Sprintf("tensor %q goes to react model %q already; name it with --react-model %s to add a version", o.Correct, upgraded, upgraded))
	}
	reactDir := filepath.Join(o.Repository, p.React)
	reactPath := filepath.Join(reactDir, "config.pbtxt")
	cfg, err := o.reactConfig(p.React, ens, producer, out)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if existing, _, err := modelconfig.ReadFile(reactPath); err == nil {
		if why := fits(existing, cfg); why != "" {
			problems = append(problems, fmt.Sprintf("%s: %s", reactPath, why))
		}
		for _, why := range o.profileDiffers(existing) {
			problems = append(problems, fmt.Sprintf("%s: %s", reactPath, why))
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		if p.reactConfig, err = renderReactConfig(cfg, site.Model, o.Model); err != nil {
			problems = append(problems, err.Error())
		}
	} else {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n  "))
	}
	if p.Version, err = nextVersion(reactDir); err != nil {
		return nil, err
	}
	// The react backend's own check of the configuration, presets and
	// default preference against the file's tasks included.
	check := cfg
	if p.reactConfig == nil {
		check, _, _ = modelconfig.ReadFile(reactPath)
	}
	abs, err := filepath.Abs(o.Components)
	if err != nil {
		return nil, err
	}
	check.Parameters[model.ParamComponents] = &tritonpb.ModelParameter{StringValue: abs}
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(check) // Triton's JSON form
	if err != nil {
		return nil, err
	}
	if _, err := model.ParseConfig(js, filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("the react model %s: %w", p.React, err)
	}
	if upgraded == "" {
		if replaced := o.Correct + tensorSuffix; slices.Contains(g.Tensors(), replaced) {
			return nil, fmt.Errorf("%s: tensor %q exists already: cannot name the corrected tensor", p.EnsemblePath, replaced)
		}
		p.ensembleNew, err = modelconfig.InsertStep(text, o.Correct,
			modelconfig.Step{Model: p.React, Version: -1, Input: stepInput, Output: stepOutput}, o.Correct+tensorSuffix)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.EnsemblePath, err)
		}
	}
	return p, nil
}

// reactConfig is the react model's configuration: the producer's output
// in and out, batched as the ensemble, with the options.
func (o *Options) reactConfig(name string, ens, producer *tritonpb.ModelConfig, out *tritonpb.ModelOutput) (*tritonpb.ModelConfig, error) {
	cfg := &tritonpb.ModelConfig{
		Name: name, Backend: "react", MaxBatchSize: ens.GetMaxBatchSize(),
		Input:         []*tritonpb.ModelInput{{Name: stepInput, DataType: out.GetDataType(), Dims: out.GetDims()}},
		Output:        []*tritonpb.ModelOutput{{Name: stepOutput, DataType: out.GetDataType(), Dims: out.GetDims()}},
		InstanceGroup: []*tritonpb.ModelInstanceGroup{{Kind: tritonpb.ModelInstanceGroup_KIND_CPU, Count: 1}},
		Parameters: map[string]*tritonpb.ModelParameter{
			model.ParamComponents: {StringValue: "components.safetensors"},
		},
	}
	if ens.GetMaxBatchSize() > 0 && producer.GetMaxBatchSize() == 0 {
		return nil, fmt.Errorf("the ensemble batches (max_batch_size %d) but %s does not: cannot give the react model its dims", ens.GetMaxBatchSize(), producer.GetName())
	}
	for k, v := range o.Parameters() {
		cfg.Parameters[k] = &tritonpb.ModelParameter{StringValue: v}
	}
	return cfg, nil
}

// Parameters returns the react model's parameters (backend/model's
// names) that the profile sets, beside the components file: the
// profile's values given, and the bounds other than their defaults.
func (o *Options) Parameters() map[string]string {
	params := map[string]string{}
	if len(o.Profile.Profiles) > 0 {
		p := o.Profile.Profiles[0]
		if p.Beta != nil {
			params[model.ParamBeta] = strconv.FormatFloat(*p.Beta, 'g', -1, 64)
		}
		if p.Normalize != "" {
			params[model.ParamNormalization] = p.Normalize
		}
		if p.DefaultPreference != "" {
			params[model.ParamDefaultPreference] = p.DefaultPreference
		}
		for name, spec := range p.Presets {
			params[model.ParamPresetPrefix+name] = spec
		}
	}
	def := control.DefaultSettings()
	if o.Profile.CacheMaxBytes != 0 && o.Profile.CacheMaxBytes != def.CacheMaxBytes {
		params[model.ParamCacheMaxBytes] = strconv.FormatInt(o.Profile.CacheMaxBytes, 10)
	}
	if o.Profile.CacheSize != def.CacheSize {
		params[model.ParamCacheSize] = strconv.Itoa(o.Profile.CacheSize)
	}
	if o.Profile.MaxPreferenceLength != 0 && o.Profile.MaxPreferenceLength != def.MaxPreferenceLength {
		params[model.ParamMaxPreferenceLength] = strconv.Itoa(o.Profile.MaxPreferenceLength)
	}
	return params
}

// profileDiffers says, for each parameter the profile flags set, where an
// existing react model's configuration holds another value: a new version
// keeps the model's configuration, so the flags would be ignored, and the
// model served with a profile other than the one asked for.
func (o *Options) profileDiffers(existing *tritonpb.ModelConfig) []string {
	var why []string
	params := o.Parameters()
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if have, ok := existing.GetParameters()[k]; !ok || have.GetStringValue() != params[k] {
			shown := "not set"
			if ok {
				shown = strconv.Quote(have.GetStringValue())
			}
			why = append(why, fmt.Sprintf("parameter %s is %s, the flags give %q: a new version keeps the model's configuration; "+
				"edit its config.pbtxt, or name a new react model with --react-model", k, shown, params[k]))
		}
	}
	return why
}

// fits says why an existing react model does not take the tensor the new
// configuration describes, or "".
func fits(existing, want *tritonpb.ModelConfig) string {
	switch {
	case existing.GetBackend() != "react":
		return fmt.Sprintf("a model %q exists and is not a react model (backend %q): name another with --react-model", existing.GetName(), existing.GetBackend())
	case len(existing.GetInput()) != 1 || len(existing.GetOutput()) != 1:
		return "not a react model of one input and one output"
	case existing.GetInput()[0].GetDataType() != want.GetInput()[0].GetDataType() ||
		!slices.Equal(existing.GetInput()[0].GetDims(), want.GetInput()[0].GetDims()):
		return fmt.Sprintf("its input is %s %v, the tensor %s %v", existing.GetInput()[0].GetDataType(), existing.GetInput()[0].GetDims(),
			want.GetInput()[0].GetDataType(), want.GetInput()[0].GetDims())
	case existing.GetParameters()[model.ParamComponents].GetStringValue() != "components.safetensors":
		return "its components parameter is not the version directory's components.safetensors: upgrade adds versions only to the react models it wrote"
	}
	return ""
}

// renderReactConfig writes a react model's configuration in the text
// format, with a comment saying where it came from.
func renderReactConfig(cfg *tritonpb.ModelConfig, backbone, ens string) ([]byte, error) {
	body, err := prototext.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by calibrate upgrade: the react backend correcting %s's embedding\n", backbone)
	fmt.Fprintf(&b, "# in ensemble %s. Each version directory holds its components file\n", ens)
	b.WriteString("# (components.safetensors); no default_preference passes the tensor unchanged.\n")
	b.Write(body)
	return b.Bytes(), nil
}

// nextVersion returns one more than the largest version directory of a
// model, or 1.
func nextVersion(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	v := 0
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() && n > v {
			v = n
		}
	}
	return v + 1, nil
}
