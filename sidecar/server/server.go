package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/frontdoor"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/passthrough"
)

// DefaultShutdownTimeout is how long Serve lets calls in flight finish once
// asked to stop, before it closes the remaining ones.
const DefaultShutdownTimeout = 10 * time.Second

// Config is what a Server needs.
type Config struct {
	// TritonGRPC and TritonHTTP are the upstream Triton's endpoints (host:port).
	TritonGRPC, TritonHTTP string
	// TritonTLS, when not nil, secures both upstream connections.
	TritonTLS *tls.Config
	// Conn is the gRPC connection to Triton (see DialTriton); nil makes New
	// dial one. The server closes it when it stops.
	Conn *grpc.ClientConn
	// GRPCListen and HTTPListen are where the sidecar listens (host:port;
	// port 0 picks a free one, see Server.GRPCAddr).
	GRPCListen, HTTPListen string
	// MetricsListen, when not empty, serves MetricsHandler (Prometheus
	// metrics, health).
	MetricsListen  string
	MetricsHandler http.Handler
	// PprofListen, when not empty, serves PprofHandler (Go's profiles) on
	// a listener of its own.
	PprofListen  string
	PprofHandler http.Handler
	// Server bounds what clients of the gRPC and HTTP listeners may hold
	// and send; its zero fields take config.Default()'s values. Its TLS
	// section is not read: see TLS.
	Server config.Server
	// TLS, when not nil, serves the gRPC and HTTP listeners with TLS only
	// (mutual TLS when it has a client CA), and the metrics listener when
	// MetricsTLS is set (without asking for client certificates).
	TLS        *frontdoor.CertStore
	MetricsTLS bool
	// Management guards Triton's management API; nil refuses every
	// management call.
	Management *frontdoor.Management
	// Metrics counts connections; nil counts nothing.
	Metrics *metrics.Metrics
	// MaxRecvMsgSize bounds every gRPC message the sidecar receives, after
	// decompression (grpc stops decompressing at the limit); 0 means
	// math.MaxInt32, Triton's own bound.
	MaxRecvMsgSize int
	// ShutdownTimeout bounds the graceful part of shutting down; 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// InterceptGRPC and InterceptHTTP are the interception seams; nil
	// passes everything through.
	InterceptGRPC passthrough.GRPCInterceptor
	InterceptHTTP passthrough.HTTPInterceptor
	// Private, when not nil, returns the headers and metadata keys that
	// never reach Triton beside ReACT's own (the sampling opt-out header of
	// the configuration in service), asked on each call relayed.
	Private func() *passthrough.PrivateKeys
	// RegisterGRPC, when not nil, registers the sidecar's own gRPC
	// services (react.Feedback) on the gRPC server, beside the
	// pass-through: their calls pass the front door's checks, as every
	// call does, and are served here; calls of any other service still go
	// to Triton.
	RegisterGRPC func(grpc.ServiceRegistrar)
	// Log receives proxy error messages; nil discards them.
	Log *slog.Logger
}

// Server is a running sidecar's listeners, its upstream connection and its
// gRPC and HTTP servers.
type Server struct {
	cfg      Config
	conn     *grpc.ClientConn
	grpc     *grpc.Server
	http     *http.Server
	metrics  *http.Server
	pprof    *http.Server
	grpcLis  net.Listener
	httpLis  net.Listener
	metLis   net.Listener
	pprofLis net.Listener
	shutdown time.Duration
}

// DialTriton returns a gRPC connection to Triton at addr, TLS when tlsCfg
// is not nil. It connects lazily: an unreachable Triton shows up as
// UNAVAILABLE per call. It reconnects at least once a second after an
// outage.
func DialTriton(addr string, tlsCfg *tls.Config) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(creds),
		// Triton and its clients allow messages up to INT32_MAX; grpc-go's
		// default receive limit is 4 MiB, too small for a large batch's
		// feature or a head's output.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.MaxCallSendMsgSize(math.MaxInt32)),
		// grpc-go's default reconnect backoff grows to 120 s, so after a long
		// Triton outage the sidecar would stay UNAVAILABLE for up to two
		// minutes after Triton is back. Retry at least once a second.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		}))
	if err != nil {
		return nil, fmt.Errorf("upstream Triton gRPC %s: %w", addr, err)
	}
	return conn, nil
}

// New opens the upstream gRPC connection (lazily: an unreachable Triton
// shows up as UNAVAILABLE per call, not here) and both listeners. Call
// Serve to serve, or Close to release everything without serving.
func New(cfg Config) (*Server, error) {
	logger := cfg.Log
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	s := &Server{cfg: cfg, shutdown: cfg.ShutdownTimeout}
	if s.shutdown <= 0 {
		s.shutdown = DefaultShutdownTimeout
	}
	if cfg.TritonGRPC == "" || cfg.TritonHTTP == "" {
		return nil, errors.New("sidecar: both upstream Triton addresses (gRPC and HTTP) are required")
	}
	handler, err := passthrough.NewHTTPProxy(cfg.TritonHTTP, cfg.TritonTLS, cfg.InterceptHTTP, cfg.Private, errLog)
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	if s.conn = cfg.Conn; s.conn == nil {
		if s.conn, err = DialTriton(cfg.TritonGRPC, cfg.TritonTLS); err != nil {
			return nil, fmt.Errorf("sidecar: %w", err)
		}
	}
	lim := frontdoor.ServerLimits(cfg.Server)
	proxy := passthrough.NewGRPCProxy(s.conn, cfg.TritonGRPC, cfg.InterceptGRPC)
	proxy.Check, proxy.ReadTimeout, proxy.Log = frontdoor.GRPCCheck(cfg.Management, int(lim.MaxHeaderBytes)), lim.ReadTimeout, logger
	proxy.Private = cfg.Private
	opts := append(frontdoor.GRPCServerOptions(lim), grpc.UnaryInterceptor(frontdoor.GRPCUnaryCheck(proxy.Check)))
	if cfg.MaxRecvMsgSize > 0 {
		opts = append(opts, grpc.MaxRecvMsgSize(cfg.MaxRecvMsgSize))
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS.ServerConfig([]string{"h2"}, true))))
	}
	s.grpc = proxy.NewServer(opts...)
	if cfg.RegisterGRPC != nil {
		cfg.RegisterGRPC(s.grpc)
	}
	s.http = &http.Server{
		Handler:           frontdoor.WrapHTTP(handler, lim, cfg.Management, cfg.Metrics),
		ErrorLog:          errLog,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		IdleTimeout:       lim.IdleTimeout,
		// Go reads up to this and 4 KiB more before it answers 431 itself;
		// frontdoor.WrapHTTP answers the exact bound.
		MaxHeaderBytes: int(lim.MaxHeaderBytes),
		ConnState:      frontdoor.ClearWriteDeadline,
		// HTTP/1.1 only, as Triton's HTTP endpoint.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	if s.grpcLis, err = s.listen("gRPC", cfg.GRPCListen, "grpc", lim.MaxConnections, nil); err != nil {
		s.Close()
		return nil, err
	}
	var httpTLS *tls.Config
	if cfg.TLS != nil {
		httpTLS = cfg.TLS.ServerConfig([]string{"http/1.1"}, true)
	}
	if s.httpLis, err = s.listen("HTTP", cfg.HTTPListen, "http", lim.MaxConnections, httpTLS); err != nil {
		s.Close()
		return nil, err
	}
	if cfg.MetricsListen != "" && cfg.MetricsHandler != nil {
		var metTLS *tls.Config
		if cfg.TLS != nil && cfg.MetricsTLS {
			metTLS = cfg.TLS.ServerConfig([]string{"http/1.1"}, false)
		}
		if s.metLis, err = s.listen("metrics", cfg.MetricsListen, "metrics", lim.MaxConnections, metTLS); err != nil {
			s.Close()
			return nil, err
		}
		s.metrics = &http.Server{Handler: cfg.MetricsHandler, ErrorLog: errLog,
			ReadHeaderTimeout: lim.ReadHeaderTimeout, ReadTimeout: lim.ReadTimeout, IdleTimeout: lim.IdleTimeout}
	}
	if cfg.PprofListen != "" && cfg.PprofHandler != nil {
		if s.pprofLis, err = s.listen("pprof", cfg.PprofListen, "pprof", 16, nil); err != nil {
			s.Close()
			return nil, err
		}
		// No write timeout: a CPU profile answers after its seconds.
		s.pprof = &http.Server{Handler: cfg.PprofHandler, ErrorLog: errLog, ReadHeaderTimeout: lim.ReadHeaderTimeout, IdleTimeout: lim.IdleTimeout}
	}
	return s, nil
}

// listen opens a listener bounded to max connections (counted in the
// metrics under name), with TLS when tlsCfg is not nil.
func (s *Server) listen(what, addr, name string, max int, tlsCfg *tls.Config) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sidecar: %s listener: %w", what, err)
	}
	l = frontdoor.LimitListener(l, name, max, s.cfg.Metrics)
	if tlsCfg != nil {
		l = tls.NewListener(l, tlsCfg)
	}
	return l, nil
}

// PprofAddr is the address the profiles are served at, nil when they are
// not.
func (s *Server) PprofAddr() net.Addr {
	if s.pprofLis == nil {
		return nil
	}
	return s.pprofLis.Addr()
}

// MetricsAddr is the address the metrics listener is bound to, nil when
// metrics are not served.
func (s *Server) MetricsAddr() net.Addr {
	if s.metLis == nil {
		return nil
	}
	return s.metLis.Addr()
}

// GRPCAddr is the address the gRPC listener is bound to.
func (s *Server) GRPCAddr() net.Addr { return s.grpcLis.Addr() }

// HTTPAddr is the address the HTTP listener is bound to.
func (s *Server) HTTPAddr() net.Addr { return s.httpLis.Addr() }

// Serve serves both protocols until ctx is done or a listener fails, then
// shuts down: it stops accepting, lets calls in flight finish for up to the
// shutdown timeout, closes what is left and the upstream connection. It
// returns nil after a requested stop, and the listener's error otherwise.
func (s *Server) Serve(ctx context.Context) error {
	failed := make(chan error, 4)
	go func() {
		if err := s.grpc.Serve(s.grpcLis); err != nil {
			failed <- fmt.Errorf("sidecar: serving gRPC: %w", err)
		}
	}()
	go func() {
		if err := s.http.Serve(s.httpLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			failed <- fmt.Errorf("sidecar: serving HTTP: %w", err)
		}
	}()
	if s.metrics != nil {
		go func() {
			if err := s.metrics.Serve(s.metLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("sidecar: serving metrics: %w", err)
			}
		}()
	}
	if s.pprof != nil {
		go func() {
			if err := s.pprof.Serve(s.pprofLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("sidecar: serving pprof: %w", err)
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-failed:
	}
	s.stop()
	return err
}

// stop shuts both servers down gracefully within the shutdown timeout, then
// forcibly, and closes the upstream connection.
func (s *Server) stop() {
	deadline, cancel := context.WithTimeout(context.Background(), s.shutdown)
	defer cancel()
	graceful := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(graceful)
	}()
	if err := s.http.Shutdown(deadline); err != nil {
		s.http.Close()
	}
	if s.metrics != nil {
		s.metrics.Close()
	}
	if s.pprof != nil {
		s.pprof.Close()
	}
	select {
	case <-graceful:
	case <-deadline.Done():
		s.grpc.Stop()
		<-graceful
	}
	s.conn.Close()
}

// Close releases the listeners and the upstream connection of a Server
// that is not serving.
func (s *Server) Close() error {
	var errs []error
	for _, l := range []net.Listener{s.grpcLis, s.httpLis, s.metLis, s.pprofLis} {
		if l != nil {
			errs = append(errs, l.Close())
		}
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	return errors.Join(errs...)
}
