package config

import (
	"slices"
	"time"

	"github.com/mergectl/react-triton/control"
)

// Defaults of the keys that have one. Every other key defaults to its zero
// value: "", false, 0, no components, no models.
const (
	DefaultTritonTimeout       = 60 * time.Second
	DefaultStartupTimeout      = 2 * time.Minute
	DefaultGRPCListen          = ":8001"
	DefaultHTTPListen          = ":8000"
	DefaultMetricsListen       = ":8003"
	DefaultShutdownTimeout     = 10 * time.Second
	DefaultMaxRequestBytes     = MaxRequestBytesLimit
	DefaultMaxInflightBytes    = 128 * MiB
	DefaultMaxInputs           = 1024
	DefaultMaxOutputs          = 1024
	DefaultMaxParameters       = 256
	DefaultMaxBatchSize        = 0
	DefaultMaxPreferenceLength = control.DefaultMaxPreferenceLength
	DefaultCacheMaxBytes       = control.DefaultCacheMaxBytes
	DefaultCacheSize           = control.DefaultCacheSize
	DefaultMaxPendingSolves    = 32
	DefaultRetryAfter          = time.Second
	DefaultKeyBurst            = 10
	DefaultSolveShare          = 0.1
	DefaultShedDelay           = 100 * time.Millisecond
	DefaultLinAlgBackend       = "auto"
	DefaultLinAlgThreads       = 1
	DefaultLogLevel            = "info"
	DefaultLogFormat           = "text"

	DefaultMaxConnections       = 1024
	DefaultMaxHeaderBytes       = 7 * KiB
	DefaultReadHeaderTimeout    = 10 * time.Second
	DefaultReadTimeout          = 2 * time.Minute
	DefaultWriteTimeout         = 30 * time.Second
	DefaultIdleTimeout          = 5 * time.Minute
	DefaultMaxConcurrentStreams = 256
	DefaultKeepaliveTime        = 2 * time.Hour
	DefaultKeepaliveTimeout     = 20 * time.Second
	DefaultKeepaliveMinTime     = 10 * time.Second
	DefaultPprofListen          = "127.0.0.1:6060"
	DefaultPprofMaxSeconds      = 30
)

// DefaultForwardHeaders are the HTTP headers the sidecar's gRPC calls to
// Triton carry by default (triton.forward_headers): a token for Triton's
// restricted endpoints, and W3C trace context.
var DefaultForwardHeaders = []string{"authorization", "traceparent", "tracestate"}

// MaxHeaderBytesLimit is the largest server.max_header_bytes.
const MaxHeaderBytesLimit ByteSize = MiB

// MaxRequestBytesLimit is the largest limits.max_request_bytes: 2GiB-1,
// the largest message gRPC handles.
const MaxRequestBytesLimit ByteSize = 1<<31 - 1

// Default returns the configuration with every default applied and
// nothing else: no upstream Triton (triton.grpc and triton.http are
// required), no components and no models. Load starts from it.
func Default() *Config {
	return &Config{
		Triton: Triton{
			Timeout:        DefaultTritonTimeout,
			StartupTimeout: DefaultStartupTimeout,
			ForwardHeaders: slices.Clone(DefaultForwardHeaders),
		},
		Listen: Listen{
			GRPC:            DefaultGRPCListen,
			HTTP:            DefaultHTTPListen,
			Metrics:         DefaultMetricsListen,
			ShutdownTimeout: DefaultShutdownTimeout,
		},
		Server: Server{
			MaxConnections:    DefaultMaxConnections,
			MaxHeaderBytes:    DefaultMaxHeaderBytes,
			ReadHeaderTimeout: DefaultReadHeaderTimeout,
			ReadTimeout:       DefaultReadTimeout,
			WriteTimeout:      DefaultWriteTimeout,
			IdleTimeout:       DefaultIdleTimeout,
			GRPC: GRPCServer{
				MaxConcurrentStreams: DefaultMaxConcurrentStreams,
				KeepaliveTime:        DefaultKeepaliveTime,
				KeepaliveTimeout:     DefaultKeepaliveTimeout,
				KeepaliveMinTime:     DefaultKeepaliveMinTime,
			},
		},
		Pprof: Pprof{Listen: DefaultPprofListen, MaxSeconds: DefaultPprofMaxSeconds},
		Limits: Limits{
			MaxRequestBytes:     DefaultMaxRequestBytes,
			MaxInflightBytes:    DefaultMaxInflightBytes,
			MaxInputs:           DefaultMaxInputs,
			MaxOutputs:          DefaultMaxOutputs,
			MaxParameters:       DefaultMaxParameters,
			MaxBatchSize:        DefaultMaxBatchSize,
			MaxPreferenceLength: DefaultMaxPreferenceLength,
		},
		Cache: Cache{MaxBytes: DefaultCacheMaxBytes, Size: DefaultCacheSize},
		Admission: Admission{
			MaxPendingSolves: DefaultMaxPendingSolves,
			RetryAfter:       DefaultRetryAfter,
			KeyBurst:         DefaultKeyBurst,
			SolveShare:       DefaultSolveShare,
			ShedDelay:        DefaultShedDelay,
		},
		LinAlg:   LinAlg{Backend: DefaultLinAlgBackend, Threads: DefaultLinAlgThreads},
		Log:      Log{Level: DefaultLogLevel, Format: DefaultLogFormat},
		Feedback: defaultFeedback(),
		Sampling: defaultSampling(),
	}
}
