package calibrate

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/calibrate/fit"
	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/react"
)

// fitOptions are fit's flags that are not keys of its configuration.
type fitOptions struct{ printConfig, resume bool }

// newFitCommand returns calibrate fit: its help, configuration and flags.
func newFitCommand(stdout, stderr io.Writer) *cobra.Command {
	var o fitOptions
	cmd := &cobra.Command{
		Use:     "fit (--embeddings DIR | --triton HOST:PORT --inputs DIR ...) --out FILE [flags]",
		Short:   "Fit per-task statistics from paired embeddings, or from models on Triton, into a components file",
		Long:    fitLong,
		Example: fitExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return o.run(cmd, stdout, stderr) },
	}
	f := cmd.Flags()
	config.BindCalibrateFlags(f)
	f.BoolVar(&o.printConfig, config.FlagPrintConfig, false, "print the configuration that would run, as YAML (every key, flags applied), and exit")
	f.BoolVar(&o.resume, config.FlagResume, false, "continue from the checkpoints of an earlier run of the same fit (checkpoint.dir)")
	return cmd
}

// run loads fit's configuration (file, environment, flags), then prints it or fits.
func (o *fitOptions) run(cmd *cobra.Command, stdout, stderr io.Writer) error {
	cfg, err := config.LoadCalibrate("", cmd.Flags())
	if err != nil {
		return asUsage(err)
	}
	if o.printConfig {
		b, err := cfg.YAML()
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	if f := cmd.Flag("threads"); cfg.Triton.GRPC != "" && (f == nil || !f.Changed) {
		// The sums of one chunk are small calls; OpenBLAS's default
		// pool (every core, spinning between calls) took the cores
		// the client and a local Triton need: half the throughput
		// on a 2-core machine (bench/README.md).
		react.SetBackendThreads(1)
	}
	return fit.Run(cmd.Context(), cfg, fit.Options{Resume: o.resume, Stdout: stdout, Stderr: stderr})
}

// fitLong is fit's long help.
const fitLong = `fit reads, for each task, the merged backbone's features and the task
expert's features of the same unlabeled calibration inputs, and writes the
statistics ReACT needs to a components file. The features come either from
.npy files (--embeddings) or from the models themselves, run on a Triton
server (--triton).

With --embeddings, DIR must hold two files per task:
  DIR/<task>.merged.npy   the merged backbone's features
  DIR/<task>.expert.npy   the task expert's features
Each is an N×D array of float32 or float64 in C order, one sample per row;
row i of both files comes from the same input. Tasks are every name found
in DIR, in sorted order, or those listed with --tasks, in that order.

With --triton HOST:PORT (gRPC), --inputs DIR holds each task's unlabeled
calibration inputs, DIR/<task>.npy: in C order, samples along the first
axis, then the shape of one input of the models without the batch
dimension (e.g. N×1×28×28), of the input's datatype (uint8 for a UINT8
image, int64 for INT64 token ids, S<n> byte strings for BYTES; float32 or
float64 for any floating-point input). For models of several inputs,
DIR/<task>.npz (numpy.savez): one such array per input, named as the input
(input_ids=..., attention_mask=...). Or DIR/<task>/, a folder of PNG or JPEG
images (subfolders included, in lexical order of their paths): each image
is decoded and preprocessed here into one sample of the backbone's input
(grey or RGB, resized, scaled to [0,1], optionally normalised with a mean
and std; the --image-* flags, key images), and every file's header is
checked first (--image-on-error fail or skip). With --image-decode triton
the files are not decoded here: their bytes go as they are, a BYTES tensor
[n,1], to models that decode them (ensembles of a preprocessing model and
the backbone or expert, which --backbone-model and --expert then name); a
file the models refuse (INVALID_ARGUMENT) is found by sending its chunk one
file at a time, and named, then fails the fit or is skipped as
--image-on-error says. Each chunk of samples goes to the merged
backbone (--backbone-model, --backbone-version, --backbone-output) and to
the task's expert (--expert task=model[:version[:output]], one per task) at
the same time, with a few chunks in flight; their feature outputs, FP32,
FP16, BF16 or FP64, are the pairs. An omitted output means the model's only
output (for an expert, else the output named like the backbone's). Requests
carry at most --chunk samples (default 256), and never more than a model's
max_batch_size. The models' names, the output used and the versions that
answered are recorded in the file.

Everything is checked before any data is read or sent: with --embeddings,
the files (pairs present, dtypes, shapes, sizes, the same D everywhere);
with --triton, the input files, that every task has an expert, that the
server is reachable and every model ready, that each model's input takes
the samples' shape and datatype, and that the feature output exists and
has the same D for every model. Rows are then streamed in chunks, so memory
stays O(D²) whatever N is.

For each task t fit stores S_t = Σ z_ind z_mtlᵀ, G_t = Σ z_mtl z_mtlᵀ, N_t
and the orthogonal Procrustes factor W_orth_t of S_t, plus the default β and
normalisation; both can be changed later, at solve time, without refitting.
With --normalize sum (the paper's choice) β competes with sums over N_t
samples; with mean it is relative to per-sample second moments and wants a
much smaller value, such as 1e-3.

With --triton, OpenBLAS calls use one thread unless --threads says
otherwise: the sums of a chunk are small, and the cores are better left to
the requests (and to a Triton on the same machine).

Every flag but --resume and --print-config is also a key of a YAML file
given with --config (see config/calibrate.example.yaml), and of a REACT_*
environment variable (REACT_ and the key, dots as underscores:
REACT_TRITON_GRPC, REACT_SAMPLE_LIMIT): a flag beats the environment,
which beats the file. --print-config shows what would run.

Progress: a bar per task on a terminal, a line every 10 s otherwise
(--progress auto|always|log|never, --quiet); at the end a line per task with N,
the time, samples/s and the condition number of C_t.

Nothing is lost: each task's partial sums are saved atomically in
checkpoint.dir (default: --out followed by .ckpt) every --checkpoint-every
chunks, when the task ends, at SIGINT or SIGTERM and when a chunk fails;
--resume continues from them and gives the same file bit for bit. Requests
failing with UNAVAILABLE or DEADLINE_EXCEEDED are retried with backoff for
at most --retry-max-wait. The checkpoints are removed once --out is
written.

--only TASK --into FILE fits one task and adds it to, or replaces it in,
FILE, leaving its other tasks byte for byte. --fraction F or --limit N fit a
seeded random subset (--seed) of each task's samples, recorded in the file.
--shard i/n fits the i-th of n parts of every task's samples into a
partial-statistics file; calibrate merge adds the n parts into a components
file.`

// fitExample is fit's examples.
const fitExample = `  # Fit every task found in emb/ with the paper's defaults.
  calibrate fit --embeddings emb/ --out components.safetensors

  # Two tasks only, per-sample normalisation, and the models' names recorded.
  calibrate fit --embeddings emb/ --tasks cars,dtd --normalize mean --beta 1e-3 \
      --backbone-model vit_merged --backbone-version 1 --backbone-output features \
      --expert cars=vit_cars --expert dtd=vit_dtd:2:features \
      --out components.safetensors

  # Run the models on Triton: calib/cars.npy and calib/dtd.npy hold the inputs.
  calibrate fit --triton localhost:8001 --inputs calib/ \
      --backbone-model vit_merged --backbone-output features \
      --expert cars=vit_cars --expert dtd=vit_dtd:2 \
      --out components.safetensors

  # Folders of images, calib/cars/*.jpg and calib/dtd/*.png, for an RGB
  # backbone taking 3×224×224 inputs normalised as ImageNet's.
  calibrate fit --triton localhost:8001 --inputs calib/ \
      --image-mean 0.485,0.456,0.406 --image-std 0.229,0.224,0.225 \
      --backbone-model vit_merged --expert cars=vit_cars --expert dtd=vit_dtd \
      --out components.safetensors

  # The same folders decoded on Triton, by the zoo's preprocess ensembles.
  calibrate fit --triton localhost:8001 --inputs calib/ --image-decode triton \
      --backbone-model preprocess_backbone_ta --expert mnist=preprocess_expert_mnist \
      --out components.safetensors

  # The same from a configuration file, one task into an existing file.
  calibrate fit --config calibrate.yaml --only dtd --into components.safetensors`

// checkBeta checks a --beta value (react.ValidateBeta).
func checkBeta(beta float64) error {
	if err := react.ValidateBeta(beta); err != nil {
		return fmt.Errorf("--beta: %w", err)
	}
	return nil
}
