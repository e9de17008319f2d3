package sidecar

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/controllable"
	"github.com/mergectl/react-triton/sidecar/frontdoor"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/outcomes"
	"github.com/mergectl/react-triton/sidecar/sampling"
	"github.com/mergectl/react-triton/sidecar/server"
)

// parts are what run wires together: the upstream connection, the
// metrics, the outcome feedback's join window, the controllable models,
// live sampling (with a connection of its own), the guard of Triton's
// management API and, with TLS, the listeners' certificates.
type parts struct {
	tlsCfg   *tls.Config // to Triton, nil for none
	conn     *grpc.ClientConn
	prom     *metrics.Metrics
	fb       *outcomes.Feedback
	models   *controllable.Models
	live     *sampling.Sampler
	liveConn io.Closer
	guard    *frontdoor.Management
	certs    *frontdoor.CertStore // nil without TLS
}

// newParts makes the parts of cfg. On failure it closes what it opened.
func newParts(cfg *config.Config, log *slog.Logger) (*parts, error) {
	p := &parts{prom: metrics.New()}
	var err error
	if p.tlsCfg, err = tritonTLS(cfg.Triton.TLS); err != nil {
		return nil, err
	}
	if p.conn, err = server.DialTriton(cfg.Triton.GRPC, p.tlsCfg); err != nil {
		return nil, err
	}
	if err := p.wire(cfg, log); err != nil {
		p.conn.Close()
		if p.liveConn != nil {
			p.liveConn.Close()
		}
		return nil, err
	}
	return p, nil
}

// wire makes the parts that use the upstream connection and the metrics.
func (p *parts) wire(cfg *config.Config, log *slog.Logger) error {
	var err error
	// One join window for the whole process, kept across reloads.
	if p.fb, err = outcomes.FromConfig(cfg.Feedback, p.prom.Registerer(), log); err != nil {
		return err
	}
	if p.models, err = controllable.NewModels(cfg, p.conn, p.prom, log, controllable.WithFeedback(p.fb)); err != nil {
		return err
	}
	if p.live, p.liveConn, err = newSampler(cfg, p.tlsCfg, p.prom, log); err != nil {
		return err
	}
	p.models.SetSampler(p.live)
	if p.guard, err = frontdoor.NewManagement(cfg.Management, p.prom); err != nil {
		return err
	}
	if cfg.Server.TLS.Enabled {
		if p.certs, err = frontdoor.NewCertStore(cfg.Server.TLS, log, p.prom); err != nil {
			return err
		}
	}
	return nil
}

// serverConfig is the listeners' configuration: the front door before the
// pass-through, the controllable models' and the feedback's seams, the
// metrics listener with the models' readiness.
func (p *parts) serverConfig(cfg *config.Config, log *slog.Logger) server.Config {
	metricsMux := http.NewServeMux()
	metricsMux.Handle("/", p.prom.Handler())
	metricsMux.Handle("/readyz", p.models.ReadyzHandler())
	sc := server.Config{
		TritonGRPC:      cfg.Triton.GRPC,
		TritonHTTP:      cfg.Triton.HTTP,
		TritonTLS:       p.tlsCfg,
		Conn:            p.conn,
		GRPCListen:      cfg.Listen.GRPC,
		HTTPListen:      cfg.Listen.HTTP,
		MetricsListen:   cfg.Listen.Metrics,
		MetricsHandler:  metricsMux,
		ShutdownTimeout: cfg.Listen.ShutdownTimeout,
		MaxRecvMsgSize:  int(min(cfg.Limits.MaxRequestBytes, cfg.Limits.MaxInflightBytes)),
		InterceptGRPC:   p.models.GRPCInterceptor(),
		InterceptHTTP:   p.fb.HTTPInterceptor(p.models.HTTPInterceptor()),
		Private:         p.models.PrivateKeys,
		RegisterGRPC:    p.fb.RegisterGRPC,
		Log:             log,
		Server:          cfg.Server,
		TLS:             p.certs,
		MetricsTLS:      cfg.Server.TLS.Metrics,
		Management:      p.guard,
		Metrics:         p.prom,
	}
	if cfg.Pprof.Enabled {
		sc.PprofListen, sc.PprofHandler = cfg.Pprof.Listen, frontdoor.PprofHandler(cfg.Pprof.MaxSeconds)
	}
	return sc
}

// listening returns the attributes of the "sidecar listening" log line:
// where it listens and calls, how it computes, and what it turned on.
func listening(cfg *config.Config, s *server.Server, backend string, certs *frontdoor.CertStore) []any {
	attrs := []any{"grpc", s.GRPCAddr().String(), "http", s.HTTPAddr().String(),
		"triton_grpc", cfg.Triton.GRPC, "triton_http", cfg.Triton.HTTP, "controllable_models", len(cfg.Models),
		"linalg", backend, "linalg_threads", cfg.LinAlg.Threads}
	if acc := react.CurrentAccelerator(); acc != nil {
		attrs = append(attrs, "linalg_device", acc.Name())
	}
	if a := s.MetricsAddr(); a != nil {
		attrs = append(attrs, "metrics", a.String())
	}
	if a := s.PprofAddr(); a != nil {
		attrs = append(attrs, "pprof", a.String())
	}
	if certs != nil {
		attrs = append(attrs, "tls", true, "mutual_tls", cfg.Server.TLS.ClientCAFile != "", "tls_not_after", certs.NotAfter().UTC().Format(time.RFC3339))
	}
	attrs = append(attrs, "management_allowed", len(cfg.Management.Allow))
	if cfg.Feedback.Enabled {
		attrs = append(attrs, "feedback_max_entries", cfg.Feedback.MaxEntries, "feedback_max_age", cfg.Feedback.MaxAge)
	} else {
		attrs = append(attrs, "feedback", false)
	}
	if cfg.File != "" {
		attrs = append(attrs, "config", cfg.File)
	}
	return attrs
}

// serve serves s until ctx is done or a listener fails: the controllable
// models started in the background (then live sampling configured),
// reloads served by r, the certificates watched. Then it closes the
// models and sampling (the samples in flight finish, the final checkpoint
// is written). It returns nil when stopped on request, else why serving
// ended (the models' start failing, or a listener).
func (p *parts) serve(ctx context.Context, s *server.Server, r *reloader, hup <-chan os.Signal, cfg *config.Config, log *slog.Logger) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		if err := p.models.Start(ctx); err != nil {
			stop(err)
			return
		}
		log.Info("sidecar ready")
		configureSampling(ctx, p.live, p.models.Config(), log)
	}()
	go r.run(ctx, hup)
	if p.certs != nil {
		go p.certs.Watch(ctx)
	}
	go func() {
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), context.Canceled) {
			log.Info("stopping: calls in flight may finish (a second signal stops at once)", "shutdown_timeout", cfg.Listen.ShutdownTimeout)
		}
	}()

	serveErr := s.Serve(ctx)
	p.models.Close() // shadow comparisons still under way are dropped
	// The samples in flight finish (within the shutdown timeout), then the
	// final checkpoint is written.
	if err := p.live.Close(cfg.Listen.ShutdownTimeout); err != nil {
		log.Error("sampling: the final checkpoint", "error", err)
	}
	if cause := context.Cause(ctx); serveErr == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	if serveErr != nil {
		return serveErr
	}
	log.Info("sidecar stopped")
	return nil
}
