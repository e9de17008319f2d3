package config

import (
	"fmt"
	"time"

	"github.com/mergectl/react-triton/triton/modelinfo"
)

// Calibrate is the configuration of calibrate fit: where the features come
// from (.npy embeddings, or the models run on a Triton server over each
// task's calibration inputs), the models, the statistics' defaults, the
// checkpoints, the subset of samples and the shard. LoadCalibrate fills it
// from a YAML file and the flags of BindCalibrateFlags, applies the
// defaults and validates it.
type Calibrate struct {
	// Triton is the server that runs the models; with triton.grpc unset
	// the features come from embeddings instead.
	Triton CalibrateTriton `yaml:"triton"`
	// Embeddings is a directory of <task>.merged.npy and <task>.expert.npy
	// feature files. It excludes triton.grpc.
	Embeddings string `yaml:"embeddings"`
	// Inputs is the directory of each task's calibration inputs for a fit
	// on Triton: <task>.npy, a float32 array of samples, or <task>/, a
	// folder of PNG or JPEG images that Images turns into samples.
	Inputs string `yaml:"inputs"`
	// Images says how the images of a task's folder become the models'
	// input.
	Images CalibrateImages `yaml:"images"`
	// Out is the file to write: a components file, or with Shard a
	// partial-statistics file. Default: Into when it is set.
	Out string `yaml:"out"`
	// Beta is the default regulariser β ≥ 0 recorded in the file. Default
	// 0.1.
	Beta float64 `yaml:"beta"`
	// Normalize is the default normalisation, sum or mean. Default sum.
	Normalize string `yaml:"normalize"`
	// Tasks lists the tasks to fit, in order; empty means every task found
	// in Embeddings or Inputs, sorted.
	Tasks []string `yaml:"tasks"`
	// Backbone is the merged backbone model.
	Backbone CalibrateModel `yaml:"backbone"`
	// Experts maps each task to its expert model.
	Experts map[string]CalibrateModel `yaml:"experts"`
	// Chunk is the number of samples per request on Triton, or of rows
	// read at a time from embeddings; 0 picks the default (256 on Triton,
	// capped by the models' max_batch_size; 4096 from embeddings).
	Chunk int `yaml:"chunk"`
	// InFlight is the number of chunks of a task in flight on Triton at
	// once. Default 4.
	InFlight int `yaml:"in_flight"`
	// Checkpoint says where and how often the partial statistics are saved.
	Checkpoint Checkpoint `yaml:"checkpoint"`
	// Sample restricts each task to a seeded random subset of its samples.
	Sample Sample `yaml:"sample"`
	// BetaSelect chooses β and the normalisation without labels (--beta
	// auto), by the reconstruction error on held-out samples.
	BetaSelect BetaSelect `yaml:"beta_select"`
	// Shard, "i/n", fits the i-th of n deterministic parts of every task's
	// samples into a partial-statistics file, for calibrate merge. "" fits
	// everything.
	Shard string `yaml:"shard"`
	// Only fits this one task and adds it to, or replaces it in, the
	// components file Into; the other tasks are kept byte for byte.
	Only string `yaml:"only"`
	// Into is the existing components file Only adds its task to.
	Into string `yaml:"into"`
	// Progress is auto (a bar on a terminal, periodic log lines
	// otherwise), always (a bar even when not on a terminal), log
	// (periodic lines only) or never. Default auto.
	Progress string `yaml:"progress"`

	// File is the absolute path of the file the configuration was read
	// from, "" when it came from flags only. Relative paths in the file are
	// resolved against its directory by LoadCalibrate.
	File string `yaml:"-"`
}

// CalibrateTriton is the Triton server a fit runs the models on, and how
// its transient failures are ridden out.
type CalibrateTriton struct {
	// GRPC is Triton's gRPC endpoint, host:port.
	GRPC string `yaml:"grpc"`
	// Timeout bounds each request. Default 60s; must be positive.
	Timeout time.Duration `yaml:"timeout"`
	// RetryMaxWait bounds the total time one request is retried after
	// transient failures (UNAVAILABLE, DEADLINE_EXCEEDED), with backoff,
	// before the fit stops. Default 5m; 0 disables retries.
	RetryMaxWait time.Duration `yaml:"retry_max_wait"`
}

// CalibrateImages says how the encoded images (PNG, JPEG) of a task's
// folder inputs/<task>/ become one sample of the models' input each
// (package calibrate/images): decoded, made grey or RGB, resized, scaled to
// [0, 1], normalised and laid out. What is left at auto comes from the
// backbone's input shape.
type CalibrateImages struct {
	// Layout of a sample: auto (from the model's input shape: chw when its
	// first of three dimensions is 1 or 3, else hwc; hw for two
	// dimensions), chw, hwc or hw. Default auto.
	Layout string `yaml:"layout"`
	// Channels: auto (grey for one channel, rgb for three), grey, rgb or
	// bgr. Default auto.
	Channels string `yaml:"channels"`
	// Size is [height, width]; empty takes the model's, which must then be
	// fixed.
	Size []int `yaml:"size"`
	// Resize is bilinear (an image of another size is resized, as
	// Pillow's BILINEAR) or none (it is refused). Default bilinear.
	Resize string `yaml:"resize"`
	// Mean and Std normalise each channel after scaling to [0, 1], (x −
	// mean) / std: empty (0 and 1), one value, or one per channel.
	Mean []float64 `yaml:"mean"`
	Std  []float64 `yaml:"std"`
	// OnError is what a file that does not decode does: fail (the fit
	// stops, naming it; before sending anything when its header is the
	// problem) or skip (it is left out and reported by name). Default fail.
	OnError string `yaml:"on_error"`
	// Decode is where the images are decoded: go (in calibrate, as the keys
	// above say, then sent as the models' tensor) or triton (each file's
	// bytes are sent as they are, a BYTES tensor [n,1], to models that take
	// encoded images, such as ensembles of a preprocessing model and the
	// backbone or expert; the keys above but on_error do not apply).
	// Default go.
	Decode string `yaml:"decode"`
}

// Values of CalibrateImages.Decode.
const (
	DecodeGo     = "go"
	DecodeTriton = "triton"
)

// Values of CalibrateImages.OnError.
const (
	OnErrorFail = "fail"
	OnErrorSkip = "skip"
)

// CalibrateModel names a model served by Triton and its output holding the
// feature.
type CalibrateModel struct {
	Model string `yaml:"model"`
	// Version is a positive integer, or "" for Triton's choice (the
	// version that answered is recorded).
	Version string `yaml:"version"`
	// Output is the output tensor holding the feature; "" means the
	// model's only output (for an expert, else the one named like the
	// backbone's).
	Output string `yaml:"output"`
}

// Checkpoint configures the checkpoints of a fit: each task's partial
// statistics, saved atomically, from which --resume continues.
type Checkpoint struct {
	// Dir is the directory of the checkpoint files. Default: Out followed
	// by ".ckpt".
	Dir string `yaml:"dir"`
	// Every is the number of chunks between two checkpoints of a task; a
	// checkpoint is also written when a task ends and at SIGINT or
	// SIGTERM. Default 50; at least 1.
	Every int `yaml:"every"`
}

// Sample restricts each task to a seeded random subset of its samples.
type Sample struct {
	// Fraction keeps this share of each task's samples, rounded up, in
	// (0, 1]; 0 keeps them all.
	Fraction float64 `yaml:"fraction"`
	// Limit keeps at most this many samples of each task; 0 keeps them
	// all. It excludes Fraction.
	Limit int `yaml:"limit"`
	// Seed chooses the subset: the same seed and inputs give the same
	// samples. Default 0.
	Seed int `yaml:"seed"`
}

// BetaSelect is the label-free choice of β and the normalisation: a
// seeded random Holdout share of each task's samples is held out, every
// option of the grid (β from 10⁻⁴ to 10², a point a decade, under sum
// and under mean) is fitted on the rest, and the option with
// the lowest held-out reconstruction error ‖W Z_mtl − Z_ind‖² becomes the
// file's default. The file's statistics are those of every sample.
type BetaSelect struct {
	// Auto turns the selection on (--beta auto); Beta and Normalize are
	// then replaced by the choice.
	Auto bool `yaml:"auto"`
	// Holdout is the share of each task's samples held out, in (0, 1).
	// Default 0.2.
	Holdout float64 `yaml:"holdout"`
	// Report, if set, is a JSON file that receives every option's held-out
	// errors and the choice.
	Report string `yaml:"report"`
}

// Defaults of calibrate fit's keys that have one.
const (
	DefaultCalibrateBeta      = 10
	DefaultCalibrateNormalize = "sum"
	DefaultCalibrateTimeout   = 60 * time.Second
	DefaultRetryMaxWait       = 5 * time.Minute
	DefaultCheckpointEvery    = 50
	DefaultProgress           = "auto"
	DefaultHoldout            = 0.2
)

// Values of Calibrate.Progress.
const (
	ProgressAuto   = "auto"
	ProgressAlways = "always"
	ProgressLog    = "log"
	ProgressNever  = "never"
)

// CheckProgress checks a progress mode, the value of Calibrate.Progress
// and of every calibrate command's --progress.
func CheckProgress(mode string) error {
	switch mode {
	case ProgressAuto, ProgressAlways, ProgressLog, ProgressNever:
		return nil
	}
	return fmt.Errorf("%q: want %s, %s, %s or %s", mode, ProgressAuto, ProgressAlways, ProgressLog, ProgressNever)
}

// CheckpointSuffix is appended to Out to name the default checkpoint
// directory.
const CheckpointSuffix = ".ckpt"

// DefaultCalibrate returns calibrate fit's configuration with every default
// applied and nothing else.
func DefaultCalibrate() *Calibrate {
	return &Calibrate{
		Triton:     CalibrateTriton{Timeout: DefaultCalibrateTimeout, RetryMaxWait: DefaultRetryMaxWait},
		Images:     CalibrateImages{Layout: "auto", Channels: "auto", Resize: "bilinear", OnError: OnErrorFail, Decode: DecodeGo},
		Beta:       DefaultCalibrateBeta,
		Normalize:  DefaultCalibrateNormalize,
		InFlight:   modelinfo.DefaultInFlight,
		Checkpoint: Checkpoint{Every: DefaultCheckpointEvery},
		Progress:   DefaultProgress,
		BetaSelect: BetaSelect{Holdout: DefaultHoldout},
	}
}
