package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
)

// DefaultShutdownTimeout is how long Serve lets calls in flight finish once
// asked to stop, before it closes the remaining ones.
const DefaultShutdownTimeout = 10 * time.Second

// Config is what a Server needs.
type Config struct {
	// TritonGRPC and TritonHTTP are the upstream Triton's endpoints (host:port).
	TritonGRPC, TritonHTTP string
	// GRPCListen and HTTPListen are where the sidecar listens (host:port;
	// port 0 picks a free one, see Server.GRPCAddr).
	GRPCListen, HTTPListen string
	// ShutdownTimeout bounds the graceful part of shutting down; 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// InterceptGRPC and InterceptHTTP are the interception seams; nil
	// passes everything through.
	InterceptGRPC GRPCInterceptor
	InterceptHTTP HTTPInterceptor
	// Log receives start, stop and proxy error messages; nil discards them.
	Log *log.Logger
}

// Server is a running sidecar's listeners, its upstream connection and its
// gRPC and HTTP servers.
type Server struct {
	cfg      Config
	conn     *grpc.ClientConn
	grpc     *grpc.Server
	http     *http.Server
	grpcLis  net.Listener
	httpLis  net.Listener
	shutdown time.Duration
}

// New opens the upstream gRPC connection (lazily: an unreachable Triton
// shows up as UNAVAILABLE per call, not here) and both listeners. Call
// Serve to serve, or Close to release everything without serving.
func New(cfg Config) (*Server, error) {
	logger := cfg.Log
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	s := &Server{cfg: cfg, shutdown: cfg.ShutdownTimeout}
	if s.shutdown <= 0 {
		s.shutdown = DefaultShutdownTimeout
	}
	if cfg.TritonGRPC == "" || cfg.TritonHTTP == "" {
		return nil, errors.New("sidecar: both upstream Triton addresses (gRPC and HTTP) are required")
	}
	handler, err := NewHTTPProxy(cfg.TritonHTTP, cfg.InterceptHTTP, logger)
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	s.conn, err = grpc.NewClient(cfg.TritonGRPC,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// grpc-go's default reconnect backoff grows to 120 s, so after a long
		// Triton outage the sidecar would stay UNAVAILABLE for up to two
		// minutes after Triton is back. Retry at least once a second.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		}))
	if err != nil {
		return nil, fmt.Errorf("sidecar: upstream Triton gRPC %s: %w", cfg.TritonGRPC, err)
	}
	s.grpc = NewGRPCProxy(s.conn, cfg.TritonGRPC, cfg.InterceptGRPC).NewServer()
	s.http = &http.Server{Handler: handler, ErrorLog: logger, ReadHeaderTimeout: time.Minute}
	if s.grpcLis, err = net.Listen("tcp", cfg.GRPCListen); err != nil {
		s.Close()
		return nil, fmt.Errorf("sidecar: gRPC listener: %w", err)
	}
	if s.httpLis, err = net.Listen("tcp", cfg.HTTPListen); err != nil {
		s.Close()
		return nil, fmt.Errorf("sidecar: HTTP listener: %w", err)
	}
	return s, nil
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
	failed := make(chan error, 2)
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
	for _, l := range []net.Listener{s.grpcLis, s.httpLis} {
		if l != nil {
			errs = append(errs, l.Close())
		}
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	return errors.Join(errs...)
}
