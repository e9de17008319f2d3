package sidecar

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/internal/buildinfo"
	"github.com/mergectl/react-triton/internal/cli"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/controllable"
	"github.com/mergectl/react-triton/sidecar/frontdoor"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/outcomes"
	"github.com/mergectl/react-triton/sidecar/sampling"
	"github.com/mergectl/react-triton/sidecar/server"
)

// Exit codes of the sidecar command: those of package cli, the same for
// both binaries.
const (
	ExitOK      = cli.ExitOK      // stopped on request (SIGTERM, SIGINT)
	ExitFailure = cli.ExitFailure // could not start (a bad configuration, models that do not fit), or a listener failed
	ExitUsage   = cli.ExitUsage   // unknown flag or argument
)

// NewCommand returns the sidecar command. It serves until ctx is done.
// hup delivers reload requests (SIGHUP); nil disables them.
func NewCommand(ctx context.Context, hup <-chan os.Signal, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sidecar [--config FILE] [flags]",
		Short: "Serve Triton's gRPC and HTTP protocol in front of a Triton server, correcting controllable models with ReACT",
		Long: `sidecar listens for Triton's gRPC and HTTP protocol in front of an existing
Triton Inference Server. Clients change only the address they call.

For the controllable models of its configuration, it calls the merged
backbone on Triton, corrects the backbone's feature with W_p for the
request's preference (the react-preference header or parameter, a preset
named by react-preset, or the default), and calls the head(s). Every other
call is relayed to Triton byte for byte, after HTTP inference bodies are
checked for malformed framing, except Triton's management API (model
loading and unloading, logging, tracing, shared memory), which is refused
unless the configuration's management section allows a call. Connections,
header sizes and read, write and idle times are bounded (the server
section); the listeners can serve TLS, their certificate reloaded when its
files change.

The configuration is a YAML file (see sidecar/config/example.yaml), with REACT_*
environment variables and the flags below overriding it. Without --config it
is a pure pass-through to --triton-grpc and --triton-http.

It reloads the configuration and the components files on SIGHUP and when
they change; a reload that fails keeps the previous state serving. It stops
on SIGTERM or SIGINT, letting calls in flight finish for up to
--shutdown-timeout.

Exit status: 0 when stopped by a signal, 1 on a failure (a bad
configuration, models that do not match Triton), 2 on a usage error.`,
		Example: `  sidecar --config /etc/react/sidecar.yaml
  sidecar --triton-grpc 127.0.0.1:8101 --triton-http 127.0.0.1:8100 --grpc-listen :8001 --http-listen :8000`,
		Version:       buildinfo.Version(),
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ok, _ := cmd.Flags().GetBool(config.FlagPrintConfig); ok {
				return printConfig(cmd.Flags(), stdout)
			}
			return run(ctx, cmd.Flags(), hup, stderr)
		},
	}
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	config.BindFlags(cmd.Flags())
	return cmd
}

// printConfig writes the configuration that would run (config.Config.YAML).
func printConfig(flags *pflag.FlagSet, stdout io.Writer) error {
	cfg, err := config.Load("", flags)
	if err != nil {
		return err
	}
	b, err := cfg.YAML()
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}

// run loads the configuration and serves until ctx is done.
func run(ctx context.Context, flags *pflag.FlagSet, hup <-chan os.Signal, stderr io.Writer) error {
	cfg, err := config.Load("", flags)
	if err != nil {
		return err
	}
	level := new(slog.LevelVar)
	log := newLogger(stderr, cfg.Log, level)
	backend, err := react.UseBackend(cfg.LinAlg.Backend)
	if err != nil {
		return fmt.Errorf("linalg.backend: %w", err)
	}
	react.SetBackendThreads(cfg.LinAlg.Threads)
	if why := react.BackendFallback(); why != "" {
		log.Warn("linear algebra on the CPU", "linalg", backend, "reason", why)
	}
	tlsCfg, err := tritonTLS(cfg.Triton.TLS)
	if err != nil {
		return err
	}
	conn, err := server.DialTriton(cfg.Triton.GRPC, tlsCfg)
	if err != nil {
		return err
	}
	prom := metrics.New()
	// One join window for the whole process, kept across reloads.
	fb, err := outcomes.FromConfig(cfg.Feedback, prom.Registerer(), log)
	if err != nil {
		conn.Close()
		return err
	}
	models, err := controllable.NewModels(cfg, conn, prom, log, controllable.WithFeedback(fb))
	if err != nil {
		conn.Close()
		return err
	}
	live, liveConn, err := newSampler(cfg, tlsCfg, prom, log)
	if err != nil {
		conn.Close()
		return err
	}
	defer liveConn.Close()
	models.SetSampler(live)
	guard, err := frontdoor.NewManagement(cfg.Management, prom)
	if err != nil {
		conn.Close()
		return err
	}
	var certs *frontdoor.CertStore
	if cfg.Server.TLS.Enabled {
		if certs, err = frontdoor.NewCertStore(cfg.Server.TLS, log, prom); err != nil {
			conn.Close()
			return err
		}
	}
	metricsMux := http.NewServeMux()
	metricsMux.Handle("/", prom.Handler())
	metricsMux.Handle("/readyz", models.ReadyzHandler())
	sc := server.Config{
		TritonGRPC:      cfg.Triton.GRPC,
		TritonHTTP:      cfg.Triton.HTTP,
		TritonTLS:       tlsCfg,
		Conn:            conn,
		GRPCListen:      cfg.Listen.GRPC,
		HTTPListen:      cfg.Listen.HTTP,
		MetricsListen:   cfg.Listen.Metrics,
		MetricsHandler:  metricsMux,
		ShutdownTimeout: cfg.Listen.ShutdownTimeout,
		MaxRecvMsgSize:  int(min(cfg.Limits.MaxRequestBytes, cfg.Limits.MaxInflightBytes)),
		InterceptGRPC:   models.GRPCInterceptor(),
		InterceptHTTP:   fb.HTTPInterceptor(models.HTTPInterceptor()),
		Private:         models.PrivateKeys,
		RegisterGRPC:    fb.RegisterGRPC,
		Log:             log,
		Server:          cfg.Server,
		TLS:             certs,
		MetricsTLS:      cfg.Server.TLS.Metrics,
		Management:      guard,
		Metrics:         prom,
	}
	if cfg.Pprof.Enabled {
		sc.PprofListen, sc.PprofHandler = cfg.Pprof.Listen, frontdoor.PprofHandler(cfg.Pprof.MaxSeconds)
	}
	s, err := server.New(sc)
	if err != nil {
		conn.Close()
		return err
	}
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
	log.Info("sidecar listening", attrs...)

	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		if err := models.Start(ctx); err != nil {
			stop(err)
			return
		}
		log.Info("sidecar ready")
		configureSampling(ctx, live, models.Config(), log)
	}()
	r := &reloader{flags: flags, models: models, metrics: prom, log: log, level: level, guard: guard, certs: certs, sampler: live}
	go r.run(ctx, hup)
	if certs != nil {
		go certs.Watch(ctx)
	}
	go func() {
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), context.Canceled) {
			log.Info("stopping: calls in flight may finish (a second signal stops at once)", "shutdown_timeout", cfg.Listen.ShutdownTimeout)
		}
	}()

	serveErr := s.Serve(ctx)
	models.Close() // shadow comparisons still under way are dropped
	// The samples in flight finish (within the shutdown timeout), then the
	// final checkpoint is written.
	if err := live.Close(cfg.Listen.ShutdownTimeout); err != nil {
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

// newSampler returns live sampling, its metrics registered, off until
// configured (configureSampling), with a connection to Triton of its own.
func newSampler(cfg *config.Config, tlsCfg *tls.Config, prom *metrics.Metrics, log *slog.Logger) (*sampling.Sampler, io.Closer, error) {
	conn, err := server.DialTriton(cfg.Triton.GRPC, tlsCfg)
	if err != nil {
		return nil, nil, err
	}
	live := sampling.New(conn, log)
	if err := prom.Register(live); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("sampling: registering the metrics: %w", err)
	}
	return live, conn, nil
}

// configureSampling applies cfg's sampling section, reading the models'
// metadata from Triton for up to triton.startup_timeout. A failure leaves
// sampling as it was (off at start) until a reload: it never stops the
// sidecar.
func configureSampling(ctx context.Context, live *sampling.Sampler, cfg *config.Config, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Triton.StartupTimeout)
	defer cancel()
	if err := live.Configure(ctx, cfg); err != nil {
		log.Error("sampling not configured; it stays as it was until a reload", "error", err)
	}
}

// newLogger returns the structured log the configuration asks for. level
// holds its level, so that a reload can change it.
func newLogger(w io.Writer, c config.Log, level *slog.LevelVar) *slog.Logger {
	level.Set(parseLevel(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// parseLevel maps a validated log.level to slog's.
func parseLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}

// Main runs the sidecar command with args (without the program name) until
// SIGTERM or SIGINT, reloading on SIGHUP, and returns the process exit
// code: ExitOK, ExitFailure or ExitUsage, as cli.Main decides for both
// binaries. Errors are printed to stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// After the first signal, the default action returns: a second Ctrl-C
	// or SIGTERM ends the process at once, without waiting for the calls
	// in flight.
	go func() {
		<-ctx.Done()
		stop()
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return cli.Main(NewCommand(ctx, hup, stdout, stderr), args)
}
