package config

import "time"

// Server bounds what the clients of the sidecar's listeners may hold and
// send: connections, the size of a request's headers, the timeouts of
// reading and writing, gRPC's streams and keepalive pings; and it
// configures TLS on the listeners. A reload cannot change it: the new
// values take effect at the next start (a warning says so).
type Server struct {
	// MaxConnections bounds the open connections of each client listener
	// (HTTP and gRPC, each on its own); a connection beyond it is closed
	// as soon as it is accepted. Default 1024.
	MaxConnections int `yaml:"max_connections"`
	// MaxHeaderBytes bounds a request's header fields (HTTP headers or gRPC
	// metadata), counted as HTTP/2 counts a header list: each field's name
	// and value, plus 32 bytes. Beyond it a request is refused with 431 /
	// INVALID_ARGUMENT. Default 7KiB: Triton's gRPC server refuses some
	// calls at random once their metadata pass 8 KiB by its count, which
	// includes about 550 bytes of headers that gRPC adds to each call the
	// sidecar makes.
	MaxHeaderBytes ByteSize `yaml:"max_header_bytes"`
	// ReadHeaderTimeout bounds how long a new HTTP connection, or a kept
	// one, may take to send a request's headers (the TLS handshake
	// included), and a new gRPC connection its TLS handshake and HTTP/2
	// preface. Default 10s; must be positive.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds how long an HTTP request, body included, may take
	// to arrive, and a gRPC call's first request message (a unary call's
	// only one) after the call opened; 0 means no bound. Default 2m.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds how long one write of an HTTP response (at most
	// 64 KiB) may wait for a client that does not read; the connection is
	// then closed. It does not bound a long response that keeps flowing;
	// 0 means no bound. Default 30s. (gRPC's flow control bounds what a
	// client that does not read can make the sidecar hold.)
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout closes a connection with no request in flight for this
	// long: a kept-alive HTTP connection, a gRPC connection with no call
	// (with a GOAWAY, after which clients reconnect by themselves); 0
	// means never. Default 5m.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// GRPC holds what applies to the gRPC listener only.
	GRPC GRPCServer `yaml:"grpc"`
	// TLS secures the client listeners.
	TLS ServerTLS `yaml:"tls"`
}

// GRPCServer bounds the streams and keepalive pings of the gRPC listener.
type GRPCServer struct {
	// MaxConcurrentStreams bounds the calls one connection may have open
	// at once (clients queue the others), and the requests one
	// ModelStreamInfer stream may have in flight in the sidecar (it reads
	// no more until one is answered). Default 256.
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
	// KeepaliveTime is how long a connection may stay silent before the
	// sidecar pings it, and KeepaliveTimeout how long it waits for the
	// answer before closing the connection. Defaults 2h and 20s, Triton's.
	KeepaliveTime    time.Duration `yaml:"keepalive_time"`
	KeepaliveTimeout time.Duration `yaml:"keepalive_timeout"`
	// KeepaliveMinTime is the shortest interval between a client's pings
	// that the sidecar accepts; a client that pings more often is sent a
	// GOAWAY ("too_many_pings") and disconnected. Default 10s.
	KeepaliveMinTime time.Duration `yaml:"keepalive_min_time"`
	// KeepalivePermitWithoutStream accepts pings on a connection with no
	// call open; otherwise such pings count against the client as above.
	// Default false, as Triton.
	KeepalivePermitWithoutStream bool `yaml:"keepalive_permit_without_stream"`
}

// ServerTLS configures TLS on the sidecar's own listeners. The
// certificate, its key and the client CA are read again whenever one of
// their files changes (a Kubernetes Secret update included) and on
// SIGHUP; a pair that does not load keeps the previous one serving.
type ServerTLS struct {
	// Enabled serves the gRPC and HTTP listeners with TLS only. Default
	// false.
	Enabled bool `yaml:"enabled"`
	// CertFile is the server's certificate chain (PEM), KeyFile its
	// private key (PEM). Both required with enabled: true.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile, when set, turns on mutual TLS: a client must present a
	// certificate signed by one of these CAs (PEM). Not on the metrics
	// listener.
	ClientCAFile string `yaml:"client_ca_file"`
	// Metrics serves the metrics listener with TLS too (the same
	// certificate, no client certificate asked). Default false.
	Metrics bool `yaml:"metrics"`
}

// Management says which calls of Triton's management API pass through the
// sidecar: the model repository (index, load, unload), logging, tracing and
// shared-memory registration. Every one not listed is refused with 403 /
// PERMISSION_DENIED. A reload applies a change at once.
type Management struct {
	// Allow lists the calls that pass, by their gRPC method name (see
	// ManagementCalls, which also gives each one's HTTP routes). Empty by
	// default: none passes.
	Allow []string `yaml:"allow"`
	// TokenFile, when set, is a file of bearer tokens, one a line: an
	// allowed management call must then carry one of them (HTTP
	// "Authorization: Bearer TOKEN", gRPC metadata "authorization"), or it
	// is refused with 401 / UNAUTHENTICATED. Each token at least 16
	// characters. The file is read again at every reload, and a change to
	// it reloads.
	TokenFile string `yaml:"token_file"`
}

// Pprof configures Go's profiling endpoints (/debug/pprof/), on a listener
// of their own. A reload cannot change it.
type Pprof struct {
	// Enabled serves the profiles. Default false.
	Enabled bool `yaml:"enabled"`
	// Listen is where, host:port. Default "127.0.0.1:6060": this host
	// only (in Kubernetes: kubectl port-forward). Another host exposes the
	// profiles to whoever reaches it.
	Listen string `yaml:"listen"`
	// MaxSeconds bounds the seconds parameter of the CPU profile and the
	// execution trace; a larger one is refused with 400. Default 30.
	MaxSeconds int `yaml:"max_seconds"`
}
