package sidecar

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/internal/buildinfo"
	"github.com/mergectl/react-triton/internal/cli"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/metrics"
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
	backend, err := useLinAlg(cfg.LinAlg, log)
	if err != nil {
		return err
	}
	p, err := newParts(cfg, log)
	if err != nil {
		return err
	}
	defer p.liveConn.Close()
	s, err := server.New(p.serverConfig(cfg, log))
	if err != nil {
		p.conn.Close()
		return err
	}
	log.Info("sidecar listening", listening(cfg, s, backend, p.certs)...)
	r := &reloader{flags: flags, models: p.models, metrics: p.prom, log: log, level: level, guard: p.guard, certs: p.certs, sampler: p.live}
	return p.serve(ctx, s, r, hup, cfg, log)
}

// useLinAlg chooses the linear algebra of the configuration's linalg
// section (react.UseBackend) and returns the backend in use, warning when
// the CPU serves instead of a GPU the binary was built for.
func useLinAlg(c config.LinAlg, log *slog.Logger) (string, error) {
	backend, err := react.UseBackend(c.Backend)
	if err != nil {
		return "", fmt.Errorf("linalg.backend: %w", err)
	}
	react.SetBackendThreads(c.Threads)
	if why := react.BackendFallback(); why != "" {
		log.Warn("linear algebra on the CPU", "linalg", backend, "reason", why)
	}
	return backend, nil
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
