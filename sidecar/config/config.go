package config

import (
	"time"

	"github.com/mergectl/react-triton/internal/bytesize"
)

// Config is the sidecar's whole configuration: the upstream Triton, where
// the sidecar listens and how it treats its clients (server limits, TLS,
// the management API, profiling), its limits, the W_p cache, logging, the
// components files, the controllable models, the experiments over
// them and their outcome feedback, and the sampling of live traffic for
// calibration (off by default). Load fills it from a YAML file,
// REACT_* environment variables and flags, applies the defaults and
// validates it.
type Config struct {
	Triton      Triton       `yaml:"triton"`
	Listen      Listen       `yaml:"listen"`
	Server      Server       `yaml:"server"`
	Management  Management   `yaml:"management"`
	Pprof       Pprof        `yaml:"pprof"`
	Limits      Limits       `yaml:"limits"`
	Cache       Cache        `yaml:"cache"`
	Admission   Admission    `yaml:"admission"`
	LinAlg      LinAlg       `yaml:"linalg"`
	Log         Log          `yaml:"log"`
	Components  []Components `yaml:"components"`
	Models      []Model      `yaml:"models"`
	Experiments []Experiment `yaml:"experiments"`
	Feedback    Feedback     `yaml:"feedback"`
	Sampling    Sampling     `yaml:"sampling"`

	// File is the absolute path of the file the configuration was read
	// from, "" when it came from flags and the environment only. Relative
	// paths in the file (components, TLS files) are resolved against its
	// directory by Load.
	File string `yaml:"-"`
}

// Triton is the upstream Triton server the sidecar stands in front of.
type Triton struct {
	// GRPC and HTTP are Triton's gRPC and HTTP endpoints, host:port.
	GRPC string `yaml:"grpc"`
	HTTP string `yaml:"http"`
	// TLS, when enabled, is used for both upstream connections.
	TLS TLS `yaml:"tls"`
	// Timeout bounds each upstream call of the controllable path whose
	// client sent no deadline; 0 means no bound. Default 60s.
	Timeout time.Duration `yaml:"timeout"`
	// StartupTimeout is how long start-up (and a reload) waits for Triton
	// and the models it names to be ready. Default 2m.
	StartupTimeout time.Duration `yaml:"startup_timeout"`
	// ForwardHeaders are the HTTP headers (case-insensitive) that the
	// sidecar's own gRPC calls to Triton for an HTTP request carry as
	// metadata; any other header stays with the sidecar. gRPC clients'
	// metadata, and every pass-through request, reach Triton as sent.
	// Default authorization, traceparent, tracestate.
	ForwardHeaders []string `yaml:"forward_headers"`
}

// TLS configures TLS to the upstream Triton.
type TLS struct {
	Enabled bool `yaml:"enabled"`
	// CAFile verifies the server; "" uses the system roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate for mutual TLS: both
	// or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name checked against the certificate.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify disables verification (tests only).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// Listen says where the sidecar serves.
type Listen struct {
	// GRPC and HTTP are the addresses clients call (Triton's protocol),
	// host:port; port 0 picks a free port. Defaults ":8001" and ":8000".
	GRPC string `yaml:"grpc"`
	HTTP string `yaml:"http"`
	// Metrics serves Prometheus metrics at /metrics; "" disables it.
	// Default ":8003".
	Metrics string `yaml:"metrics"`
	// ShutdownTimeout is how long calls in flight may finish after SIGTERM
	// or SIGINT. Default 10s; must be positive.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// Limits protect the sidecar and Triton from oversized requests, and bound
// the work and memory one request may take.
type Limits struct {
	// MaxRequestBytes bounds an inference request: an HTTP infer body
	// (after decompression) and a gRPC message. Written as an integer or
	// with a unit ("64MiB", "1GB"). Default 2GiB-1, Triton's own bound (its
	// gRPC limit; its HTTP server has none); MaxInflightBytes bounds a
	// request further.
	MaxRequestBytes ByteSize `yaml:"max_request_bytes"`
	// MaxInflightBytes bounds the memory of the inference request bodies
	// held at once, over both protocols: beyond it a request is refused
	// (HTTP 429, gRPC RESOURCE_EXHAUSTED) until others finish, and a
	// single request larger than it can never be served (413,
	// RESOURCE_EXHAUSTED). An eighth more is kept for requests of at most
	// a 64th of it, so that a few large bodies cannot starve ordinary
	// ones. Default 128MiB.
	MaxInflightBytes ByteSize `yaml:"max_inflight_bytes"`
	// MaxInputs, MaxOutputs and MaxParameters bound an inference
	// request's inputs, requested outputs, and the parameters of any one
	// of its objects (the request's, an input's, an output's), for every
	// model: beyond them it is refused (HTTP 413, gRPC RESOURCE_EXHAUSTED)
	// before it is checked further. Defaults 1024, 1024 and 256.
	MaxInputs     int `yaml:"max_inputs"`
	MaxOutputs    int `yaml:"max_outputs"`
	MaxParameters int `yaml:"max_parameters"`
	// MaxBatchSize caps the batch of a controllable model's request; 0
	// means the model's own limit (the smallest max_batch_size of its
	// backbone and heads). Default 0.
	MaxBatchSize int `yaml:"max_batch_size"`
	// MaxPreferenceLength bounds the length in bytes of a preference or
	// preset name sent with a request. Default 1024.
	MaxPreferenceLength int `yaml:"max_preference_length"`
}

// ByteSize is a size in bytes. In YAML and the environment it is an
// integer, or a number with a unit: B, KB, MB, GB (powers of 1000) or
// KiB, MiB, GiB (powers of 1024). The react backend's cache_max_bytes
// parameter reads it alike.
type ByteSize = bytesize.Size

// Cache configures the W_p cache of per-request preferences. Each
// components file (with its β and normalisation) has a cache of its own,
// so that a flood of new preferences on one model never evicts another's;
// the default preference, the presets and the experiment arms are kept
// apart and never evicted.
type Cache struct {
	// MaxBytes bounds the memory of one components file's cache: a formed
	// W_p takes 4·D² bytes, one still in factored form 16·D². Least
	// recently used entries go first. Default 128MiB.
	MaxBytes ByteSize `yaml:"max_bytes"`
	// Size, when positive, also bounds the number of entries of each
	// components file's cache. Default 0: only MaxBytes.
	Size int `yaml:"size"`
}

// Admission controls the solving of new preferences: a bounded queue, a
// limit per client key, a limit for the whole process, and the option to accept only preferences that
// need no solve, or to round them to a grid so that clients share W_p.
type Admission struct {
	// MaxPendingSolves bounds the new preferences waiting for a solver;
	// beyond it a request that needs a solve is shed (HTTP 429 with
	// Retry-After, gRPC RESOURCE_EXHAUSTED). 0 sheds whenever every solver
	// is busy. Default 32.
	MaxPendingSolves int `yaml:"max_pending_solves"`
	// MaxConcurrentSolves is how many solves run at once; 0 means half the
	// cores (GOMAXPROCS), at least one, so that solves never take every
	// core from the requests being served. Default 0.
	MaxConcurrentSolves int `yaml:"max_concurrent_solves"`
	// RetryAfter is what a shed request is told to wait (the Retry-After
	// header, the retry-after trailer). Default 1s.
	RetryAfter time.Duration `yaml:"retry_after"`
	// KeyHeader names the header (gRPC metadata key) whose value is a
	// client's key for KeyRate; "" uses the key header of the model's
	// experiment, and a request without either is keyed by its peer
	// address.
	KeyHeader string `yaml:"key_header"`
	// KeyRate bounds the new preferences one key may have solved, per
	// second, with bursts of KeyBurst; 0 means no bound. Default 0.
	KeyRate  float64 `yaml:"key_rate"`
	KeyBurst int     `yaml:"key_burst"`
	// SolveRate bounds the new preferences the process has solved, per
	// second, whatever their key and model, with bursts of SolveBurst; 0
	// means no bound. A request is charged to it only once its key's rate
	// admits it. Default 0.
	SolveRate float64 `yaml:"solve_rate"`
	// SolveBurst is SolveRate's burst; 0 means one second of SolveRate
	// (its ceiling), at least 1. Default 0.
	SolveBurst int `yaml:"solve_burst"`
	// SolveShare bounds the share of the solvers' time that new
	// preferences may take on average, from 0 to 1, with bursts of
	// SolveShareBurst of solver time (0: one second's worth); beyond it
	// requests that need a solve are shed (reason solve_share); 0 means no
	// bound (control.CacheOptions.SolveShare). Default 0.1 and 0.
	SolveShare      float64       `yaml:"solve_share"`
	SolveShareBurst time.Duration `yaml:"solve_share_burst"`
	// ShedDelay holds a request shed by the queue, KeyRate, SolveRate or
	// SolveShare that long before its answer (less a margin before its
	// deadline), so that a client ignoring RetryAfter asks again at most
	// once per ShedDelay for each request it has in flight; 0 answers at
	// once. A refusal is held at most RetryAfter (Config.CacheOptions), so
	// that a short RetryAfter needs no ShedDelay of its own. Default
	// 100ms.
	ShedDelay time.Duration `yaml:"shed_delay"`
	// PresetsOnly refuses preferences that would need a solve: only
	// presets, experiment arms, the default, "none" and preferences equal
	// to one of those are served. Default false.
	PresetsOnly bool `yaml:"presets_only"`
	// PreferenceGrid, when positive, rounds every preference a request
	// sends to multiples of 1/PreferenceGrid (20: steps of 0.05), so that
	// nearby slider positions share one W_p. Default 0: the rounding of
	// the canonical form only (10⁻⁶).
	PreferenceGrid int `yaml:"preference_grid"`
}

// LinAlg chooses the linear algebra behind the W_p solves and the batch
// correction (react.UseBackend).
type LinAlg struct {
	// Backend is auto, go, openblas or cuda. auto picks the GPU when the
	// binary has the cuda backend (make build-cuda) and a GPU and the CUDA
	// libraries are there, else OpenBLAS when the binary has it (make
	// build), else the pure-Go kernels (a static build); it logs why it did
	// not pick a GPU it was built for. Default auto.
	Backend string `yaml:"backend"`
	// Threads bounds the threads one OpenBLAS call may use. Default 1: the
	// sidecar's parallelism comes from serving requests concurrently, and
	// every core it takes is one Triton's backbone and heads lose.
	Threads int `yaml:"threads"`
}

// Log configures the structured log (log/slog).
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `yaml:"level"`
	// Format is text or json. Default text.
	Format string `yaml:"format"`
}

// Components is one components file and how it is used: β, the
// normalisation, the default preference and the named presets over its
// tasks.
type Components struct {
	// Name is how models refer to this entry.
	Name string `yaml:"name"`
	// Path is the components file (safetensors), made absolute by Load.
	Path string `yaml:"path"`
	// Beta overrides the file's β; nil keeps the file's.
	Beta *float64 `yaml:"beta"`
	// Normalize overrides the file's normalisation ("sum" or "mean"); ""
	// keeps the file's.
	Normalize string `yaml:"normalize"`
	// DefaultPreference applies when a request names none; "" applies no
	// correction (the backbone's feature goes to the heads unchanged).
	DefaultPreference string `yaml:"default_preference"`
	// Presets are named preferences clients select with react-preset.
	Presets map[string]string `yaml:"presets"`
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
	Name string `yaml:"name"`
	// Components names the Components entry; it may be omitted when there
	// is only one.
	Components string `yaml:"components"`
	// Correct, in the graph form, is the tensor of the ensemble's graph
	// that W_p corrects: the output of exactly one step, read by at least
	// one other.
	Correct string `yaml:"correct"`
	// Backbone is the merged backbone (explicit form). The controllable
	// model's inputs are the backbone's inputs.
	Backbone Backbone `yaml:"backbone"`
	// Heads consume the corrected feature, each for one task (explicit
	// form). With several, one backbone pass fans out to all of them.
	Heads []Head `yaml:"heads"`
	// Inputs renames the backbone's inputs (explicit form): backbone input
	// name to the name clients send it under. An input left out keeps its
	// name.
	Inputs map[string]string `yaml:"inputs"`
	// Signature says whether the model must answer with the signature of
	// the Triton model of the same name, when Triton has one: SignatureMatch
	// (the default, "") checks it when the model is built and refuses a
	// difference; SignatureDiffers declares the difference intended.
	Signature string `yaml:"signature"`
	// VariantOf is the backbone model the components file was
	// calibrated on, when the model corrected here is another one known to
	// be a variant of it (an FP16 copy, a re-export), as calibrate
	// upgrade's --variant-of. Left out, the model corrected must be the
	// one the file records.
	VariantOf string `yaml:"variant_of"`
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
	Model string `yaml:"model"`
	// Version is a positive integer, or "" for Triton's choice.
	Version string `yaml:"version"`
	// Output is the backbone output holding the feature (D wide).
	Output string `yaml:"output"`
}

// Head is a task head fed with the corrected feature.
type Head struct {
	// Task is the task of the components file this head serves.
	Task  string `yaml:"task"`
	Model string `yaml:"model"`
	// Version is a positive integer, or "" for Triton's choice.
	Version string `yaml:"version"`
	// Input is the head's input that receives the feature; "" means its
	// only input.
	Input string `yaml:"input"`
	// Outputs maps a head output to the name the client sees; empty
	// returns every output of the head under its own name.
	Outputs map[string]string `yaml:"outputs"`
}
