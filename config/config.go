package config

import "time"

// Config is the sidecar's whole configuration: the upstream Triton, where
// the sidecar listens, its limits, the W_p cache, logging, the components
// files, the controllable models and the experiments over them. Load fills it from a YAML file,
// REACT_* environment variables and flags, applies the defaults and
// validates it.
type Config struct {
	Triton      Triton       `mapstructure:"triton"`
	Listen      Listen       `mapstructure:"listen"`
	Limits      Limits       `mapstructure:"limits"`
	Cache       Cache        `mapstructure:"cache"`
	LinAlg      LinAlg       `mapstructure:"linalg"`
	Log         Log          `mapstructure:"log"`
	Components  []Components `mapstructure:"components"`
	Models      []Model      `mapstructure:"models"`
	Experiments []Experiment `mapstructure:"experiments"`

	// File is the absolute path of the file the configuration was read
	// from, "" when it came from flags and the environment only. Relative
	// paths in the file (components, TLS files) are resolved against its
	// directory by Load.
	File string `mapstructure:"-"`
}

// Triton is the upstream Triton server the sidecar stands in front of.
type Triton struct {
	// GRPC and HTTP are Triton's gRPC and HTTP endpoints, host:port.
	GRPC string `mapstructure:"grpc"`
	HTTP string `mapstructure:"http"`
	// TLS, when enabled, is used for both upstream connections.
	TLS TLS `mapstructure:"tls"`
	// Timeout bounds each upstream call of the controllable path whose
	// client sent no deadline; 0 means no bound. Default 60s.
	Timeout time.Duration `mapstructure:"timeout"`
	// StartupTimeout is how long start-up (and a reload) waits for Triton
	// and the models it names to be ready. Default 2m.
	StartupTimeout time.Duration `mapstructure:"startup_timeout"`
}

// TLS configures TLS to the upstream Triton.
type TLS struct {
	Enabled bool `mapstructure:"enabled"`
	// CAFile verifies the server; "" uses the system roots.
	CAFile string `mapstructure:"ca_file"`
	// CertFile and KeyFile are a client certificate for mutual TLS: both
	// or neither.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// ServerName overrides the name checked against the certificate.
	ServerName string `mapstructure:"server_name"`
	// InsecureSkipVerify disables verification (tests only).
	InsecureSkipVerify bool `mapstructure:"insecure_skip_verify"`
}

// Listen says where the sidecar serves.
type Listen struct {
	// GRPC and HTTP are the addresses clients call (Triton's protocol),
	// host:port; port 0 picks a free port. Defaults ":8001" and ":8000".
	GRPC string `mapstructure:"grpc"`
	HTTP string `mapstructure:"http"`
	// Metrics serves Prometheus metrics at /metrics; "" disables it.
	// Default ":8003".
	Metrics string `mapstructure:"metrics"`
	// ShutdownTimeout is how long calls in flight may finish after SIGTERM
	// or SIGINT. Default 10s; must be positive.
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
}

// Limits protect the sidecar and Triton from oversized requests.
type Limits struct {
	// MaxRequestBytes bounds an inference request: an HTTP infer body
	// (after decompression) and a gRPC message of a controllable model.
	// Written as an integer or with a unit ("64MiB", "1GB"). Default 64MiB;
	// at most 2GiB-1.
	MaxRequestBytes ByteSize `mapstructure:"max_request_bytes"`
	// MaxBatchSize caps the batch of a controllable model's request; 0
	// means the model's own limit (the smallest max_batch_size of its
	// backbone and heads). Default 0.
	MaxBatchSize int `mapstructure:"max_batch_size"`
	// MaxPreferenceLength bounds the length in bytes of a preference or
	// preset name sent with a request. Default 1024.
	MaxPreferenceLength int `mapstructure:"max_preference_length"`
}

// ByteSize is a size in bytes. In YAML and the environment it is an
// integer, or a number with a unit: B, KB, MB, GB (powers of 1000) or
// KiB, MiB, GiB (powers of 1024).
type ByteSize int64

// Cache configures the W_p cache.
type Cache struct {
	// Size is how many W_p matrices solved for per-request preferences
	// the LRU keeps; the default preference and the presets are kept
	// apart and never evicted. Default 128; at least 1.
	Size int `mapstructure:"size"`
}

// LinAlg chooses the linear algebra behind the W_p solves and the batch
// correction (react.UseBackend).
type LinAlg struct {
	// Backend is auto, go, openblas or cuda. auto picks the GPU when the
	// binary has the cuda backend (make build-cuda) and a GPU and the CUDA
	// libraries are there, else OpenBLAS when the binary has it (make
	// build), else the pure-Go kernels (a static build); it logs why it did
	// not pick a GPU it was built for. Default auto.
	Backend string `mapstructure:"backend"`
	// Threads bounds the threads one OpenBLAS call may use. Default 1: the
	// sidecar's parallelism comes from serving requests concurrently, and
	// every core it takes is one Triton's backbone and heads lose.
	Threads int `mapstructure:"threads"`
}

// Log configures the structured log (log/slog).
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `mapstructure:"level"`
	// Format is text or json. Default text.
	Format string `mapstructure:"format"`
}

// Components is one components file and how it is used: β, the
// normalisation, the default preference and the named presets over its
// tasks.
type Components struct {
	// Name is how models refer to this entry.
	Name string `mapstructure:"name"`
	// Path is the components file (safetensors), made absolute by Load.
	Path string `mapstructure:"path"`
	// Beta overrides the file's β; nil keeps the file's.
	Beta *float64 `mapstructure:"beta"`
	// Normalize overrides the file's normalisation ("sum" or "mean"); ""
	// keeps the file's.
	Normalize string `mapstructure:"normalize"`
	// DefaultPreference applies when a request names none; "" applies no
	// correction (the backbone's feature goes to the heads unchanged).
	DefaultPreference string `mapstructure:"default_preference"`
	// Presets are named preferences clients select with react-preset.
	Presets map[string]string `mapstructure:"presets"`
}

// Model is one controllable model, in one of two forms.
//
// The graph form names a Triton ensemble (Name) and the tensor of its
// graph to correct (Correct): the sidecar reads the ensemble's steps from
// Triton and runs them itself, applying W_p to that tensor, so that the
// model keeps the ensemble's signature and every step of its pipeline.
//
// The explicit form names a merged backbone and the heads that consume its
// corrected output: the sidecar serves backbone -> W_p -> head(s) under
// Name, with the backbone's inputs (renamed by Inputs) and the heads'
// outputs (renamed by each head's Outputs).
type Model struct {
	// Name is the model name clients call. It may shadow a Triton model of
	// the same name (for example the ensemble it replaces); in the graph
	// form it is the ensemble's name.
	Name string `mapstructure:"name"`
	// Components names the Components entry; it may be omitted when there
	// is only one.
	Components string `mapstructure:"components"`
	// Correct, in the graph form, is the tensor of the ensemble's graph
	// that W_p corrects: the output of exactly one step, read by at least
	// one other.
	Correct string `mapstructure:"correct"`
	// Backbone is the merged backbone (explicit form). The controllable
	// model's inputs are the backbone's inputs.
	Backbone Backbone `mapstructure:"backbone"`
	// Heads consume the corrected feature, each for one task (explicit
	// form). With several, one backbone pass fans out to all of them.
	Heads []Head `mapstructure:"heads"`
	// Inputs renames the backbone's inputs (explicit form): backbone input
	// name to the name clients send it under. An input left out keeps its
	// name.
	Inputs map[string]string `mapstructure:"inputs"`
	// Signature says whether the model must answer with the signature of
	// the Triton model of the same name, when Triton has one: SignatureMatch
	// (the default, "") checks it when the model is built and refuses a
	// difference; SignatureDiffers declares the difference intended.
	Signature string `mapstructure:"signature"`
	// CalibratedOn is the backbone model the components file was
	// calibrated on, when the model corrected here is another one known to
	// be a variant of it (an FP16 copy, a re-export). Left out, the model
	// corrected must be the one the file records.
	CalibratedOn string `mapstructure:"calibrated_on"`
}

// The values of Model.Signature.
const (
	// SignatureMatch checks the model's signature against the Triton
	// model it shadows (the default; also written as "").
	SignatureMatch = "match"
	// SignatureDiffers serves the model whatever the Triton model of the
	// same name looks like.
	SignatureDiffers = "differs"
)

// Graph reports whether m is in the graph form (it names the tensor to
// correct).
func (m *Model) Graph() bool { return m.Correct != "" }

// Backbone names the merged backbone model and the output that is
// corrected.
type Backbone struct {
	Model string `mapstructure:"model"`
	// Version is a positive integer, or "" for Triton's choice.
	Version string `mapstructure:"version"`
	// Output is the backbone output holding the feature (D wide).
	Output string `mapstructure:"output"`
}

// Head is a task head fed with the corrected feature.
type Head struct {
	// Task is the task of the components file this head serves.
	Task  string `mapstructure:"task"`
	Model string `mapstructure:"model"`
	// Version is a positive integer, or "" for Triton's choice.
	Version string `mapstructure:"version"`
	// Input is the head's input that receives the feature; "" means its
	// only input.
	Input string `mapstructure:"input"`
	// Outputs maps a head output to the name the client sees; empty
	// returns every output of the head under its own name.
	Outputs map[string]string `mapstructure:"outputs"`
}
