package calibrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/mergectl/react-triton/backend/model"
	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/internal/atomicfile"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton/ensemble"
	"github.com/mergectl/react-triton/triton/modelconfig"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// The tensors of a react model that calibrate upgrade writes.
const (
	upgradeInput  = "embedding"
	upgradeOutput = "corrected"
	// upgradeSuffix names the corrected tensor in the ensemble: the
	// tensor's name and this.
	upgradeSuffix = "_react"
)

type upgradeOptions struct {
	repository  string
	model       string
	correct     string
	components  string
	reactModel  string
	presets     []string
	defaultPref string
	variantOf   string
	dryRun      bool
	rollout     string
	control     string
	wait        time.Duration
}

func newUpgradeCommand(stdout io.Writer) *cobra.Command {
	o := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "upgrade --repository DIR --model ENSEMBLE --correct TENSOR --components FILE [flags]",
		Short: "Insert the react backend into an ensemble of a model repository (backend mode)",
		Long: `upgrade makes an ensemble of a Triton model repository controllable in
backend mode (docs/upgrade.md): it writes a react model that corrects the
ensemble's tensor TENSOR with the components file, and the ensemble's
configuration with a react step on that tensor. Every other step, name and
the ensemble's signature stay as they were; with no preference the react
step passes the tensor through unchanged, so the ensemble answers as
before.

The tensor must be produced by exactly one step (the backbone) and taken
by at least one (the heads). The components file must have been calibrated
on that step's model and output, with the tensor's size D; a file of
another backbone is refused unless --variant-of names the model it was
calibrated on (for an FP16 copy of the same backbone, say).

What it writes, in this order:
  DIR/REACT/config.pbtxt             the react model (if it does not exist;
                                     an existing one must fit the tensor)
  DIR/REACT/V/components.safetensors the components file, as a new version
                                     V of the react model: Triton's version
                                     policy rolls it out, and a re-calibration
                                     is one more run of upgrade
  DIR/ENSEMBLE/config.pbtxt          the ensemble with the react step (once:
                                     the original is kept as config.pbtxt.orig;
                                     its text is edited in place, comments
                                     and all)
REACT is --react-model, by default react_<backbone model>. Files are
written atomically. --dry-run writes nothing and prints the plan and the
ensemble's diff.

--rollout HOST:PORT then brings the upgrade into the Triton that serves DIR,
over its HTTP endpoint, in the order that keeps it serving: the react
model's new version, then the ensemble with its react step, each loaded
(--control explicit: POST .../load) or waited for (--control poll) until
it is ready; the server's readiness is checked before and after.`,
		Example: `  calibrate upgrade --repository models --model cat_classifier --correct emb \
      --components cats.safetensors --preset gentle=cats=0.7,dogs=0.3 --dry-run`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.repository, "repository", "", "the model repository `DIR` (required)")
	f.StringVar(&o.model, "model", "", "the `ENSEMBLE` to upgrade (required)")
	f.StringVar(&o.correct, "correct", "", "the ensemble's `TENSOR` to correct, the backbone's embedding (required)")
	f.StringVar(&o.components, "components", "", "the components `FILE` written by calibrate fit (required)")
	f.StringVar(&o.reactModel, "react-model", "", "the react model's `NAME` (default: react_<backbone model>)")
	f.StringArrayVar(&o.presets, "preset", nil, "a preset `NAME=SPEC` of the react model (repeatable)")
	f.StringVar(&o.defaultPref, "default-preference", "", "the react model's default preference `SPEC` (default: none, no correction)")
	f.StringVar(&o.variantOf, "variant-of", "", "accept a components file calibrated on `MODEL` rather than the backbone itself")
	f.BoolVar(&o.dryRun, "dry-run", false, "write nothing: print the plan and the ensemble's diff")
	f.StringVar(&o.rollout, "rollout", "", "then bring it into the Triton serving DIR at this HTTP `ADDRESS` (host:port), react model first")
	f.StringVar(&o.control, "control", ControlExplicit, "with --rollout, the server's model control `MODE`: explicit (load the two models) or poll (wait for them)")
	f.DurationVar(&o.wait, "wait", 2*time.Minute, "with --rollout, how long to wait for the models to be ready")
	cmd.RunE = layered(cmd, config.CommandFlags{Paths: []string{"repository", "components"}}, stdout, nil,
		func(*cobra.Command, []string) error { return o.run(stdout) })
	return cmd
}

// upgradePlan is what upgrade writes.
type upgradePlan struct {
	react        string // the react model's name
	reactConfig  []byte // its config.pbtxt, nil when it exists already
	version      int    // the react model's new version
	ensemblePath string
	ensembleOld  []byte
	ensembleNew  []byte // nil when the ensemble has its react step already
}

func (o *upgradeOptions) run(stdout io.Writer) error {
	var missing []string
	for flag, v := range map[string]string{"--repository": o.repository, "--model": o.model, "--correct": o.correct, "--components": o.components} {
		if v == "" {
			missing = append(missing, flag)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return usagef("%s required", strings.Join(missing, ", "))
	}
	var ro *rollout
	if o.rollout != "" {
		var err error
		if ro, err = parseRollout(o.rollout, o.control, o.wait, stdout); err != nil {
			return err
		}
	}
	plan, err := o.plan()
	if err != nil {
		return err
	}
	if o.dryRun {
		return plan.describe(stdout, o)
	}
	if err := plan.write(o); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "upgrade: wrote %s version %d", plan.react, plan.version)
	if plan.ensembleNew != nil {
		fmt.Fprintf(stdout, " and the react step of %s (the original is %s.orig)", o.model, plan.ensemblePath)
	}
	fmt.Fprintln(stdout, ".")
	if ro == nil {
		fmt.Fprintf(stdout, "Load %s before %s (docs/upgrade.md, \"Rolling out\"), or run again with --rollout.\n", plan.react, o.model)
		return nil
	}
	return ro.run(context.Background(), plan.react, plan.version, o.model)
}

// plan checks everything and computes what to write.
func (o *upgradeOptions) plan() (*upgradePlan, error) {
	p := &upgradePlan{ensemblePath: filepath.Join(o.repository, o.model, "config.pbtxt")}
	ens, text, err := modelconfig.ReadFile(p.ensemblePath)
	if err != nil {
		return nil, err
	}
	p.ensembleOld = text
	g, err := ensemble.New(ens)
	if err != nil {
		return nil, err
	}
	site, err := g.Locate(o.correct)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ensemblePath, err)
	}

	// Upgraded already: the tensor goes to a react step, whose model gets
	// a new version.
	upgraded := ""
	for _, c := range site.Consumers {
		name := g.Steps[c].GetModelName()
		if cfg, _, err := modelconfig.ReadFile(filepath.Join(o.repository, name, "config.pbtxt")); err == nil && cfg.GetBackend() == "react" {
			upgraded = name
		}
	}

	producerPath := filepath.Join(o.repository, site.Model, "config.pbtxt")
	producer, _, err := modelconfig.ReadFile(producerPath)
	if err != nil {
		return nil, fmt.Errorf("the step producing %q: %w", o.correct, err)
	}
	var out *tritonpb.ModelOutput
	for _, t := range producer.GetOutput() {
		if t.GetName() == site.Output {
			out = t
		}
	}
	if out == nil {
		return nil, fmt.Errorf("%s: model %q has no output %q, which the ensemble maps to %q", producerPath, site.Model, site.Output, o.correct)
	}
	dims := out.GetDims()
	d := 0
	if len(dims) > 0 {
		d = int(dims[len(dims)-1])
	}

	info, err := react.ReadFileInfo(o.components)
	if err != nil {
		return nil, err
	}
	var problems []string
	if d != info.D {
		problems = append(problems, fmt.Sprintf("tensor %q is %s output %q of dims %v, but %s has D = %d", o.correct, site.Model, site.Output, dims, o.components, info.D))
	}
	calibrated := info.Backbone.Name
	switch {
	case calibrated == "":
		problems = append(problems, fmt.Sprintf("%s records no backbone: it cannot be checked against %q (refit it with calibrate fit)", o.components, site.Model))
	case calibrated != site.Model && calibrated != o.variantOf:
		problems = append(problems, fmt.Sprintf("%s was calibrated on model %q, but %q produces tensor %q: calibrate on %q, or name the model it was calibrated on with --variant-of %s if it is a variant of it (an FP16 copy, say)",
			o.components, calibrated, site.Model, o.correct, site.Model, calibrated))
	case calibrated == site.Model && info.Backbone.Output != "" && info.Backbone.Output != site.Output:
		problems = append(problems, fmt.Sprintf("%s was calibrated on output %q of %q, but the ensemble corrects its output %q", o.components, info.Backbone.Output, calibrated, site.Output))
	}

	p.react = o.reactModel
	if p.react == "" {
		p.react = "react_" + site.Model
	}
	if upgraded != "" && upgraded != p.react {
		problems = append(problems, fmt.Sprintf("tensor %q goes to react model %q already; name it with --react-model %s to add a version", o.correct, upgraded, upgraded))
	}
	reactDir := filepath.Join(o.repository, p.react)
	reactPath := filepath.Join(reactDir, "config.pbtxt")
	cfg, err := o.reactConfig(p.react, ens, producer, out)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if existing, _, err := modelconfig.ReadFile(reactPath); err == nil {
		if why := fits(existing, cfg); why != "" {
			problems = append(problems, fmt.Sprintf("%s: %s", reactPath, why))
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		if p.reactConfig, err = renderReactConfig(cfg, site.Model, o.model); err != nil {
			problems = append(problems, err.Error())
		}
	} else {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n  "))
	}
	if p.version, err = nextVersion(reactDir); err != nil {
		return nil, err
	}
	// The react backend's own check of the configuration, presets and
	// default preference against the file's tasks included.
	check := cfg
	if p.reactConfig == nil {
		check, _, _ = modelconfig.ReadFile(reactPath)
	}
	abs, err := filepath.Abs(o.components)
	if err != nil {
		return nil, err
	}
	check.Parameters[model.ParamComponents] = &tritonpb.ModelParameter{StringValue: abs}
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(check) // Triton's JSON form
	if err != nil {
		return nil, err
	}
	if _, err := model.ParseConfig(js, filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("the react model %s: %w", p.react, err)
	}
	if upgraded == "" {
		if replaced := o.correct + upgradeSuffix; slices.Contains(g.Tensors(), replaced) {
			return nil, fmt.Errorf("%s: tensor %q exists already: cannot name the corrected tensor", p.ensemblePath, replaced)
		}
		p.ensembleNew, err = modelconfig.InsertStep(text, o.correct,
			modelconfig.Step{Model: p.react, Version: -1, Input: upgradeInput, Output: upgradeOutput}, o.correct+upgradeSuffix)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.ensemblePath, err)
		}
	}
	return p, nil
}

// reactConfig is the react model's configuration: the producer's output
// in and out, batched as the ensemble, with the options.
func (o *upgradeOptions) reactConfig(name string, ens, producer *tritonpb.ModelConfig, out *tritonpb.ModelOutput) (*tritonpb.ModelConfig, error) {
	cfg := &tritonpb.ModelConfig{
		Name: name, Backend: "react", MaxBatchSize: ens.GetMaxBatchSize(),
		Input:         []*tritonpb.ModelInput{{Name: upgradeInput, DataType: out.GetDataType(), Dims: out.GetDims()}},
		Output:        []*tritonpb.ModelOutput{{Name: upgradeOutput, DataType: out.GetDataType(), Dims: out.GetDims()}},
		InstanceGroup: []*tritonpb.ModelInstanceGroup{{Kind: tritonpb.ModelInstanceGroup_KIND_CPU, Count: 1}},
		Parameters: map[string]*tritonpb.ModelParameter{
			model.ParamComponents: {StringValue: "components.safetensors"},
		},
	}
	if ens.GetMaxBatchSize() > 0 && producer.GetMaxBatchSize() == 0 {
		return nil, fmt.Errorf("the ensemble batches (max_batch_size %d) but %s does not: cannot give the react model its dims", ens.GetMaxBatchSize(), producer.GetName())
	}
	if o.defaultPref != "" {
		cfg.Parameters[model.ParamDefaultPreference] = &tritonpb.ModelParameter{StringValue: o.defaultPref}
	}
	for _, p := range o.presets {
		name, spec, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--preset %q: want NAME=SPEC", p)
		}
		cfg.Parameters[model.ParamPresetPrefix+name] = &tritonpb.ModelParameter{StringValue: spec}
	}
	return cfg, nil
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

// describe prints the plan of a dry run.
func (p *upgradePlan) describe(w io.Writer, o *upgradeOptions) error {
	dir := filepath.Join(o.repository, p.react)
	if p.reactConfig != nil {
		fmt.Fprintf(w, "would write %s:\n%s\n", filepath.Join(dir, "config.pbtxt"), p.reactConfig)
	}
	fmt.Fprintf(w, "would write %s (a copy of %s)\n", filepath.Join(dir, strconv.Itoa(p.version), "components.safetensors"), o.components)
	if p.ensembleNew == nil {
		fmt.Fprintf(w, "%s has its react step already: unchanged\n", p.ensemblePath)
		return nil
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(p.ensembleOld)), B: difflib.SplitLines(string(p.ensembleNew)),
		FromFile: p.ensemblePath, ToFile: p.ensemblePath + " (upgraded)", Context: 3,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "would rewrite %s (keeping the original as config.pbtxt.orig):\n%s", p.ensemblePath, diff)
	return nil
}

// write writes the plan: the react model first, the ensemble last. A new
// react model, or a new version of one, appears whole: it is made in a
// staging directory beside the repository and renamed into it, so that a
// Triton polling the repository never sees a model or a version without
// its configuration or components file (it would fail to load it, and a
// failed load makes the server not ready). The ensemble's configuration
// is replaced atomically.
func (p *upgradePlan) write(o *upgradeOptions) (err error) {
	repo, err := filepath.Abs(o.repository)
	if err != nil {
		return err
	}
	stage, err := os.MkdirTemp(filepath.Dir(repo), "."+filepath.Base(repo)+".upgrade-")
	if err != nil {
		return fmt.Errorf("staging beside the repository (the new model must appear in it whole): %w", err)
	}
	defer os.RemoveAll(stage)
	version := strconv.Itoa(p.version)
	dir := filepath.Join(repo, p.react)
	staged, target := filepath.Join(stage, version), filepath.Join(dir, version)
	if p.reactConfig != nil {
		staged, target = filepath.Join(stage, p.react), dir
		if err := os.MkdirAll(staged, 0o755); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(staged, "config.pbtxt"), p.reactConfig); err != nil {
			return err
		}
	}
	vdir := filepath.Join(stage, version)
	if p.reactConfig != nil {
		vdir = filepath.Join(staged, version)
	}
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	src, err := os.Open(o.components)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := atomicfile.Write(filepath.Join(vdir, "components.safetensors"), 0o644, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	}); err != nil {
		return err
	}
	if err := os.Rename(staged, target); err != nil {
		return fmt.Errorf("moving the react model into the repository: %w", err)
	}
	if p.ensembleNew == nil {
		return nil
	}
	orig := p.ensemblePath + ".orig"
	if _, err := os.Stat(orig); errors.Is(err, fs.ErrNotExist) {
		if err := writeFile(orig, p.ensembleOld); err != nil {
			return err
		}
	}
	return writeFile(p.ensemblePath, p.ensembleNew)
}

func writeFile(path string, data []byte) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
