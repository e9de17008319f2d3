package triton

import (
	"crypto/tls"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Defaults of the options.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultRetryAttempts  = 5
	DefaultInitialBackoff = 50 * time.Millisecond
	DefaultMaxBackoff     = time.Second
)

// Option configures a Client in Dial.
type Option func(*options)

type options struct {
	tlsFiles  *TLSFiles
	tlsConfig *tls.Config
	timeout   time.Duration
	keepalive *keepalive.ClientParameters
	retry     retryPolicy
	validate  bool
	block     bool
	dialOpts  []grpc.DialOption
}

func defaultOptions() options {
	return options{
		timeout:  DefaultTimeout,
		retry:    retryPolicy{attempts: DefaultRetryAttempts, initial: DefaultInitialBackoff, max: DefaultMaxBackoff},
		validate: true,
	}
}

// TLSFiles names the PEM files of a TLS connection to Triton.
type TLSFiles struct {
	// CAFile holds the certificates that verify the server. Empty uses the
	// system roots.
	CAFile string
	// CertFile and KeyFile hold the client certificate and its key, for
	// mutual TLS. Both or neither.
	CertFile, KeyFile string
	// ServerName overrides the name checked against the server certificate.
	ServerName string
	// InsecureSkipVerify disables verification of the server certificate.
	// For tests only.
	InsecureSkipVerify bool
}

// WithTLS connects with TLS, configured from PEM files. The files are read
// in Dial, which fails if they cannot be read or parsed.
func WithTLS(f TLSFiles) Option {
	return func(o *options) { o.tlsFiles, o.tlsConfig = &f, nil }
}

// WithTLSConfig connects with TLS, configured by cfg; nil means the
// defaults (system roots, no client certificate).
func WithTLSConfig(cfg *tls.Config) Option {
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return func(o *options) { o.tlsConfig, o.tlsFiles = cfg.Clone(), nil }
}

// WithInsecure connects in plaintext, without TLS. It is the default.
func WithInsecure() Option {
	return func(o *options) { o.tlsConfig, o.tlsFiles = nil, nil }
}

// WithTimeout sets the deadline of every call whose context has none
// (default DefaultTimeout). Zero leaves such calls without a deadline. The
// deadline covers retries.
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithKeepalive enables HTTP/2 keepalive pings. The server's keepalive
// enforcement must allow the interval, or it closes the connection
// (GOAWAY "too_many_pings"). Keepalive is off by default.
func WithKeepalive(p keepalive.ClientParameters) Option {
	return func(o *options) { o.keepalive = &p }
}

// WithRetry sets how the metadata, health and configuration calls are
// retried on UNAVAILABLE: at most attempts tries in all, waiting a random
// time in [b/2, b] between them, where b starts at initial and doubles up to
// max. attempts <= 1 disables retries. Infer is never retried.
func WithRetry(attempts int, initial, max time.Duration) Option {
	return func(o *options) { o.retry = retryPolicy{attempts: attempts, initial: initial, max: max} }
}

// WithoutValidation makes Infer send requests without checking them against
// the model's metadata first.
func WithoutValidation() Option {
	return func(o *options) { o.validate = false }
}

// WithBlock makes Dial wait until the connection is ready, or fail with
// UNAVAILABLE when its context ends first. By default Dial returns at once
// and connects in the background.
func WithBlock() Option {
	return func(o *options) { o.block = true }
}

// WithDialOptions adds gRPC dial options, after the client's own: a custom
// dialer, interceptors, stats handlers.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOpts = append(o.dialOpts, opts...) }
}
