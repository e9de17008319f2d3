package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/config/layer"
	"github.com/mergectl/react-triton/triton/modelinfo"
)

// calibrateFlagKeys maps each flag of calibrate fit that sets one key to
// that key; the layering engine binds it. --beta (a number, or auto),
// --expert (one task's entry of experts) and --quiet (progress: never)
// are applied by applyCalibrateFlags.
var calibrateFlagKeys = map[string]string{
	"triton":           "triton.grpc",
	"triton-timeout":   "triton.timeout",
	"retry-max-wait":   "triton.retry_max_wait",
	"embeddings":       "embeddings",
	"inputs":           "inputs",
	"image-layout":     "images.layout",
	"image-channels":   "images.channels",
	"image-size":       "images.size",
	"image-resize":     "images.resize",
	"image-mean":       "images.mean",
	"image-std":        "images.std",
	"image-on-error":   "images.on_error",
	"image-decode":     "images.decode",
	"out":              "out",
	FlagNormalize:      "normalize",
	"tasks":            "tasks",
	"backbone-model":   "backbone.model",
	"backbone-version": "backbone.version",
	"backbone-output":  "backbone.output",
	"chunk":            "chunk",
	"in-flight":        "in_flight",
	"checkpoint-dir":   "checkpoint.dir",
	"checkpoint-every": "checkpoint.every",
	"fraction":         "sample.fraction",
	"limit":            "sample.limit",
	"seed":             "sample.seed",
	"holdout":          "beta_select.holdout",
	"beta-report":      "beta_select.report",
	"shard":            "shard",
	"only":             "only",
	"into":             "into",
	FlagProgress:       "progress",
}

// flagExpert is calibrate fit's repeatable --expert task=model flag.
const flagExpert = "expert"

// setBeta applies --beta: a number, or auto for beta_select.auto.
func setBeta(c *Calibrate, fs *pflag.FlagSet) error {
	v, err := fs.GetString(FlagBeta)
	if err != nil {
		return err
	}
	if v == "auto" {
		c.BetaSelect.Auto = true
		return nil
	}
	if c.Beta, err = strconv.ParseFloat(v, 64); err != nil {
		return fmt.Errorf("%q: want a number or auto", v)
	}
	return nil
}

// setExperts applies the --expert flags over the file's experts: each
// names one task's expert, and replaces the file's entry for that task.
func setExperts(c *Calibrate, fs *pflag.FlagSet) error {
	list, err := fs.GetStringArray(flagExpert)
	if err != nil {
		return err
	}
	given := map[string]bool{}
	experts := make(map[string]CalibrateModel, len(c.Experts)+len(list))
	for t, m := range c.Experts {
		experts[t] = m
	}
	for _, s := range list {
		task, m, err := ParseExpert(s)
		if err != nil {
			return err
		}
		if given[task] {
			return fmt.Errorf("task %q given twice", task)
		}
		given[task] = true
		experts[task] = m
	}
	c.Experts = experts
	return nil
}

// ParseExpert parses an expert given as task=model[:version[:output]].
func ParseExpert(s string) (string, CalibrateModel, error) {
	task, model, ok := strings.Cut(s, "=")
	parts := strings.Split(model, ":")
	if !ok || task == "" || len(parts) > 3 || parts[0] == "" {
		return "", CalibrateModel{}, fmt.Errorf("%q: want task=model[:version[:output]]", s)
	}
	m := CalibrateModel{Model: parts[0]}
	if len(parts) > 1 {
		m.Version = parts[1]
	}
	if len(parts) > 2 {
		m.Output = parts[2]
	}
	return task, m, nil
}

// Names of calibrate fit's flags that are not keys of its file.
const (
	FlagConfig      = layer.FlagConfig
	FlagPrintConfig = layer.FlagPrintConfig
	FlagResume      = "resume"
	FlagProgress    = "progress"
	FlagQuiet       = "quiet"
)

// BindCalibrateFlags registers calibrate fit's configuration flags on fs:
// --config (the file, which LoadCalibrate reads when its path argument is
// ""), one flag per key that a flag can override, and --progress and
// --quiet, the shorthand for --progress never.
// LoadCalibrate applies only the flags that were set, over the file.
func BindCalibrateFlags(fs *pflag.FlagSet) {
	fs.String(FlagConfig, "", "configuration `FILE` (YAML, see calibrate.example.yaml); flags override its keys")
	fs.String("triton", "", "run the models on the Triton server (gRPC) at `HOST:PORT` instead of reading --embeddings (key triton.grpc)")
	fs.Duration("triton-timeout", DefaultCalibrateTimeout, "deadline of each request to Triton (key triton.timeout)")
	fs.Duration("retry-max-wait", DefaultRetryMaxWait, "longest total time a request is retried after UNAVAILABLE or DEADLINE_EXCEEDED; 0 disables retries (key triton.retry_max_wait)")
	fs.String("embeddings", "", "read <task>.merged.npy and <task>.expert.npy from this `DIR` (key embeddings)")
	fs.String("inputs", "", "with --triton, read each task's calibration inputs from <task>.npy, or the images of the folder <task>/, in this `DIR` (key inputs)")
	fs.String("image-layout", "auto", "how an image becomes a sample: `auto|chw|hwc|hw` (key images.layout; auto: from the backbone's input shape)")
	fs.String("image-channels", "auto", "an image's channels: `auto|grey|rgb|bgr` (key images.channels; auto: grey for 1 channel, rgb for 3)")
	fs.IntSlice("image-size", nil, "resize images to `HEIGHT,WIDTH` (key images.size; default: the backbone's input size)")
	fs.String("image-resize", "bilinear", "an image of another size is resized (bilinear) or refused (none): `bilinear|none` (key images.resize)")
	fs.Float64Slice("image-mean", nil, "subtract this `MEAN` from each channel in [0,1], one value or one per channel (key images.mean)")
	fs.Float64Slice("image-std", nil, "then divide each channel by this `STD`, one value or one per channel (key images.std)")
	fs.String("image-decode", DecodeGo, "where images are decoded: `go|triton` (key images.decode; triton: each file's bytes go to models taking encoded images, BYTES [n,1])")
	fs.String("image-on-error", OnErrorFail, "an image file that does not decode: `fail|skip` (key images.on_error; skip: left out and reported by name)")
	fs.String("out", "", "`FILE` to write: a components file, or with --shard a partial-statistics file (key out; default with --into: that file)")
	fs.String(FlagBeta, strconv.FormatFloat(DefaultCalibrateBeta, 'g', -1, 64), "default regulariser `B` ≥ 0 (β) that pulls each correction towards its orthogonal factor (key beta), or auto: β and the normalisation (sum or mean) chosen by the reconstruction error on held-out samples (key beta_select.auto)")
	fs.String(FlagNormalize, DefaultCalibrateNormalize, "default normalisation of the statistics, `sum|mean` (key normalize)")
	fs.StringSlice("tasks", nil, "comma-separated `TASKS` to fit, in this order (key tasks; default: every task in --embeddings or --inputs, sorted)")
	fs.String("backbone-model", "", "the merged backbone model's `NAME` (key backbone.model; required with --triton)")
	fs.String("backbone-version", "", "the merged backbone model's `VERSION` (key backbone.version; default with --triton: the server's choice)")
	fs.String("backbone-output", "", "the merged backbone's output `TENSOR` holding the features (key backbone.output; default with --triton: its only output)")
	fs.StringArray(flagExpert, nil, "a task's expert as `task=model[:version[:output]]`, replacing the file's (key experts; repeatable; with --triton, one per task)")
	fs.Int("chunk", 0, "send this many `SAMPLES` per request to Triton, or read this many rows at a time from --embeddings (key chunk; default 256 with --triton, capped by max_batch_size; 4096 otherwise)")
	fs.Int("in-flight", modelinfo.DefaultInFlight, "`CHUNKS` of a task in flight on Triton at once (key in_flight)")
	fs.String("checkpoint-dir", "", "`DIR` of the checkpoints (key checkpoint.dir; default: --out followed by .ckpt)")
	fs.Int("checkpoint-every", DefaultCheckpointEvery, "save a task's partial statistics every `N` chunks (key checkpoint.every)")
	fs.Float64("fraction", 0, "fit a seeded random `F` of each task's samples, 0 < F ≤ 1 (key sample.fraction; default all)")
	fs.Int("limit", 0, "fit a seeded random subset of at most `N` samples per task (key sample.limit; default all)")
	fs.Int("seed", 0, "`SEED` of the random subset of --fraction or --limit, and of --beta auto's held-out samples (key sample.seed)")
	fs.Float64("holdout", DefaultHoldout, "with --beta auto, the share `H` of each task's samples held out to choose β, 0 < H < 1 (key beta_select.holdout)")
	fs.String("beta-report", "", "with --beta auto, write every option's held-out error and the choice as JSON to `FILE` (key beta_select.report)")
	fs.String("shard", "", "fit shard `i/n` of every task's samples into a partial-statistics file for calibrate merge (key shard)")
	fs.String("only", "", "fit this one `TASK` and add it to, or replace it in, the components file --into (key only)")
	fs.String("into", "", "the existing components `FILE` that --only adds its task to (key into)")
	BindProgressFlags(fs)
}

// flagSource is how a problem names a value that came from a flag.
func flagSource(name string) string { return "--" + name }

// BindProgressFlags registers --progress MODE, how progress is shown on
// stderr (auto, always, log or never; see ParseProgress), and --quiet, the
// shorthand for --progress never: the same two flags, with one meaning,
// in every calibrate command that shows progress.
func BindProgressFlags(fs *pflag.FlagSet) {
	fs.String(FlagProgress, DefaultProgress, "how progress is shown on stderr: `auto|always|log|never` (key progress; auto: a bar on a terminal, log lines otherwise)")
	fs.Bool(FlagQuiet, false, "show no progress (--progress never)")
}

// ProgressFlag returns the progress mode the flags of BindProgressFlags
// give, checked. CommandFlags.Load has applied --quiet already, as
// --progress never.
func ProgressFlag(fs *pflag.FlagSet) (string, error) {
	mode, err := fs.GetString(FlagProgress)
	if err != nil {
		return "", err
	}
	quiet, err := fs.GetBool(FlagQuiet)
	if err != nil {
		return "", err
	}
	switch {
	case quiet && fs.Changed(FlagProgress) && mode != ProgressNever:
		return "", fmt.Errorf("--progress and --quiet exclude each other")
	case quiet:
		return ProgressNever, nil
	}
	if err := CheckProgress(mode); err != nil {
		return "", fmt.Errorf("--progress %w", err)
	}
	return mode, nil
}
