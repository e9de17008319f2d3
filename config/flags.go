package config

import (
	"github.com/spf13/pflag"
)

// Names of the flags BindFlags registers.
const (
	FlagConfig          = "config"
	FlagTritonGRPC      = "triton-grpc"
	FlagTritonHTTP      = "triton-http"
	FlagGRPCListen      = "grpc-listen"
	FlagHTTPListen      = "http-listen"
	FlagMetricsListen   = "metrics-listen"
	FlagLogLevel        = "log-level"
	FlagShutdownTimeout = "shutdown-timeout"
)

// flagKeys maps each flag that overrides a key to that key.
var flagKeys = map[string]string{
	FlagTritonGRPC:      "triton.grpc",
	FlagTritonHTTP:      "triton.http",
	FlagGRPCListen:      "listen.grpc",
	FlagHTTPListen:      "listen.http",
	FlagMetricsListen:   "listen.metrics",
	FlagLogLevel:        "log.level",
	FlagShutdownTimeout: "listen.shutdown_timeout",
}

// BindFlags registers the sidecar's configuration flags on fs: --config
// (the file, which Load reads when its path argument is ""),
// --print-config (Config.YAML, for the command to answer) and the flags
// that override a key of the file: --triton-grpc, --triton-http,
// --grpc-listen, --http-listen, --metrics-listen, --log-level and
// --shutdown-timeout. Load applies only the flags that were set, so the
// defaults shown in the help are the built-in ones.
func BindFlags(fs *pflag.FlagSet) {
	fs.String(FlagConfig, "", "configuration file (YAML); keys it leaves out take their defaults, and REACT_* environment variables override it")
	fs.Bool(FlagPrintConfig, false, "print the configuration that would run, as YAML (every key, the environment and flags applied), and exit")
	fs.String(FlagTritonGRPC, "", "upstream Triton's gRPC endpoint, HOST:PORT (key triton.grpc)")
	fs.String(FlagTritonHTTP, "", "upstream Triton's HTTP endpoint, HOST:PORT (key triton.http)")
	fs.String(FlagGRPCListen, DefaultGRPCListen, "where to serve gRPC, [HOST]:PORT (key listen.grpc)")
	fs.String(FlagHTTPListen, DefaultHTTPListen, "where to serve HTTP, [HOST]:PORT (key listen.http)")
	fs.String(FlagMetricsListen, DefaultMetricsListen, `where to serve Prometheus metrics, [HOST]:PORT; "" disables them (key listen.metrics)`)
	fs.String(FlagLogLevel, DefaultLogLevel, "log level: debug, info, warn or error (key log.level)")
	fs.Duration(FlagShutdownTimeout, DefaultShutdownTimeout, "how long calls in flight may finish after SIGTERM or SIGINT (key listen.shutdown_timeout)")
}
