package config

import "time"

// Defaults of the keys that have one. Every other key defaults to its zero
// value: "", false, 0, no components, no models.
const (
	DefaultTritonTimeout       = 60 * time.Second
	DefaultStartupTimeout      = 2 * time.Minute
	DefaultGRPCListen          = ":8001"
	DefaultHTTPListen          = ":8000"
	DefaultMetricsListen       = ":8003"
	DefaultShutdownTimeout     = 10 * time.Second
	DefaultMaxRequestBytes     = 64 * MiB
	DefaultMaxBatchSize        = 0
	DefaultMaxPreferenceLength = 1024
	DefaultCacheSize           = 128
	DefaultLinAlgBackend       = "auto"
	DefaultLinAlgThreads       = 1
	DefaultLogLevel            = "info"
	DefaultLogFormat           = "text"
)

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
		},
		Listen: Listen{
			GRPC:            DefaultGRPCListen,
			HTTP:            DefaultHTTPListen,
			Metrics:         DefaultMetricsListen,
			ShutdownTimeout: DefaultShutdownTimeout,
		},
		Limits: Limits{
			MaxRequestBytes:     DefaultMaxRequestBytes,
			MaxBatchSize:        DefaultMaxBatchSize,
			MaxPreferenceLength: DefaultMaxPreferenceLength,
		},
		Cache:  Cache{Size: DefaultCacheSize},
		LinAlg: LinAlg{Backend: DefaultLinAlgBackend, Threads: DefaultLinAlgThreads},
		Log:    Log{Level: DefaultLogLevel, Format: DefaultLogFormat},
	}
}
