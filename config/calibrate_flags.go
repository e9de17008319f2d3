package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/triton"
)

// calibrateFlag is a flag of calibrate fit that overrides a key of its
// configuration file.
type calibrateFlag struct {
	name, key string
	// set applies the flag's value to c, or returns the problem with it.
	set func(c *Calibrate, fs *pflag.FlagSet) error
}

func stringFlag(name, key string, field func(c *Calibrate) *string) calibrateFlag {
	return calibrateFlag{name, key, func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		*field(c), err = fs.GetString(name)
		return err
	}}
}

func intFlag(name, key string, field func(c *Calibrate) *int) calibrateFlag {
	return calibrateFlag{name, key, func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		*field(c), err = fs.GetInt(name)
		return err
	}}
}

// calibrateFlags are the flags that override keys, in the order of the
// schema.
var calibrateFlags = []calibrateFlag{
	stringFlag("triton", "triton.grpc", func(c *Calibrate) *string { return &c.Triton.GRPC }),
	{"triton-timeout", "triton.timeout", func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		c.Triton.Timeout, err = fs.GetDuration("triton-timeout")
		return err
	}},
	{"retry-max-wait", "triton.retry_max_wait", func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		c.Triton.RetryMaxWait, err = fs.GetDuration("retry-max-wait")
		return err
	}},
	stringFlag("embeddings", "embeddings", func(c *Calibrate) *string { return &c.Embeddings }),
	stringFlag("inputs", "inputs", func(c *Calibrate) *string { return &c.Inputs }),
	stringFlag("image-layout", "images.layout", func(c *Calibrate) *string { return &c.Images.Layout }),
	stringFlag("image-channels", "images.channels", func(c *Calibrate) *string { return &c.Images.Channels }),
	{"image-size", "images.size", func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		c.Images.Size, err = fs.GetIntSlice("image-size")
		return err
	}},
	stringFlag("image-resize", "images.resize", func(c *Calibrate) *string { return &c.Images.Resize }),
	{"image-mean", "images.mean", func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		c.Images.Mean, err = fs.GetFloat64Slice("image-mean")
		return err
	}},
	{"image-std", "images.std", func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		c.Images.Std, err = fs.GetFloat64Slice("image-std")
		return err
	}},
	stringFlag("image-on-error", "images.on_error", func(c *Calibrate) *string { return &c.Images.OnError }),
	stringFlag("image-decode", "images.decode", func(c *Calibrate) *string { return &c.Images.Decode }),
	stringFlag("out", "out", func(c *Calibrate) *string { return &c.Out }),
	{"beta", "beta", func(c *Calibrate, fs *pflag.FlagSet) error {
		v, err := fs.GetString("beta")
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
	}},
	stringFlag("normalize", "normalize", func(c *Calibrate) *string { return &c.Normalize }),
	{"tasks", "tasks", func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		c.Tasks, err = fs.GetStringSlice("tasks")
		return err
	}},
	stringFlag("backbone-model", "backbone.model", func(c *Calibrate) *string { return &c.Backbone.Model }),
	stringFlag("backbone-version", "backbone.version", func(c *Calibrate) *string { return &c.Backbone.Version }),
	stringFlag("backbone-output", "backbone.output", func(c *Calibrate) *string { return &c.Backbone.Output }),
	{"expert", "experts", setExperts},
	intFlag("chunk", "chunk", func(c *Calibrate) *int { return &c.Chunk }),
	intFlag("in-flight", "in_flight", func(c *Calibrate) *int { return &c.InFlight }),
	stringFlag("checkpoint-dir", "checkpoint.dir", func(c *Calibrate) *string { return &c.Checkpoint.Dir }),
	intFlag("checkpoint-every", "checkpoint.every", func(c *Calibrate) *int { return &c.Checkpoint.Every }),
	{"fraction", "sample.fraction", func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		c.Sample.Fraction, err = fs.GetFloat64("fraction")
		return err
	}},
	intFlag("limit", "sample.limit", func(c *Calibrate) *int { return &c.Sample.Limit }),
	intFlag("seed", "sample.seed", func(c *Calibrate) *int { return &c.Sample.Seed }),
	{"holdout", "beta_select.holdout", func(c *Calibrate, fs *pflag.FlagSet) (err error) {
		c.BetaSelect.Holdout, err = fs.GetFloat64("holdout")
		return err
	}},
	stringFlag("beta-report", "beta_select.report", func(c *Calibrate) *string { return &c.BetaSelect.Report }),
	stringFlag("shard", "shard", func(c *Calibrate) *string { return &c.Shard }),
	stringFlag("only", "only", func(c *Calibrate) *string { return &c.Only }),
	stringFlag("into", "into", func(c *Calibrate) *string { return &c.Into }),
	stringFlag("progress-mode", "progress", func(c *Calibrate) *string { return &c.Progress }),
}

// setExperts applies the --expert flags over the file's experts: each
// names one task's expert, and replaces the file's entry for that task.
func setExperts(c *Calibrate, fs *pflag.FlagSet) error {
	list, err := fs.GetStringArray("expert")
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
	FlagPrintConfig = "print-config"
	FlagResume      = "resume"
	FlagProgress    = "progress"
	FlagQuiet       = "quiet"
)

// BindCalibrateFlags registers calibrate fit's configuration flags on fs:
// --config (the file, which LoadCalibrate reads when its path argument is
// ""), one flag per key that a flag can override, and --progress and
// --quiet, shorthands for progress: always and progress: never.
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
	fs.String("beta", strconv.FormatFloat(DefaultCalibrateBeta, 'g', -1, 64), "default regulariser `B` ≥ 0 (β) that pulls each correction towards its orthogonal factor (key beta), or auto: β and the normalisation (sum or mean) chosen by the reconstruction error on held-out samples (key beta_select.auto)")
	fs.String("normalize", DefaultCalibrateNormalize, "default normalisation of the statistics, `sum|mean` (key normalize)")
	fs.StringSlice("tasks", nil, "comma-separated `TASKS` to fit, in this order (key tasks; default: every task in --embeddings or --inputs, sorted)")
	fs.String("backbone-model", "", "the merged backbone model's `NAME` (key backbone.model; required with --triton)")
	fs.String("backbone-version", "", "the merged backbone model's `VERSION` (key backbone.version; default with --triton: the server's choice)")
	fs.String("backbone-output", "", "the merged backbone's output `TENSOR` holding the features (key backbone.output; default with --triton: its only output)")
	fs.StringArray("expert", nil, "a task's expert as `task=model[:version[:output]]`, replacing the file's (key experts; repeatable; with --triton, one per task)")
	fs.Int("chunk", 0, "send this many `SAMPLES` per request to Triton, or read this many rows at a time from --embeddings (key chunk; default 256 with --triton, capped by max_batch_size; 4096 otherwise)")
	fs.Int("in-flight", triton.DefaultInFlight, "`CHUNKS` of a task in flight on Triton at once (key in_flight)")
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
	fs.String("progress-mode", DefaultProgress, "how progress is shown on stderr: `auto|always|log|never` (key progress; auto: a bar on a terminal, log lines otherwise)")
	fs.Bool(FlagProgress, false, "show a progress bar even when stderr is not a terminal (progress: always)")
	fs.Bool(FlagQuiet, false, "show no progress (progress: never)")
}

// flagSource is how a problem names a value that came from a flag.
func flagSource(name string) string { return "--" + name }
