package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/internal/buildinfo"
)

// Exit codes of the sidecar command.
const (
	ExitOK      = 0 // stopped on request (SIGTERM, SIGINT)
	ExitFailure = 1 // could not start, or a listener failed
	ExitUsage   = 2 // unknown or missing flag
)

// errServe marks a failure of the server itself, as opposed to a usage error.
type errServe struct{ err error }

func (e *errServe) Error() string { return e.err.Error() }
func (e *errServe) Unwrap() error { return e.err }

// NewCommand returns the sidecar command. It serves until ctx is done.
func NewCommand(ctx context.Context, stdout, stderr io.Writer) *cobra.Command {
	var cfg Config
	cmd := &cobra.Command{
		Use:   "sidecar --triton-grpc HOST:PORT --triton-http HOST:PORT",
		Short: "Serve Triton's gRPC and HTTP protocol in front of a Triton server",
		Long: `sidecar listens for Triton's gRPC and HTTP protocol and relays every call to
an existing Triton Inference Server, byte for byte: clients only change the
address they call. (Controllable models, whose features the sidecar will
correct with ReACT, are not handled yet: everything passes through.)

It stops on SIGTERM or SIGINT, letting calls in flight finish for up to
--shutdown-timeout.

Exit status: 0 when stopped by a signal, 1 on a failure, 2 on a usage error.`,
		Example:       `  sidecar --triton-grpc 127.0.0.1:8001 --triton-http 127.0.0.1:8000 --grpc-listen :9001 --http-listen :9000`,
		Version:       buildinfo.Version(),
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.ShutdownTimeout <= 0 {
				return fmt.Errorf("--shutdown-timeout must be positive, got %v", cfg.ShutdownTimeout)
			}
			cfg.Log = log.New(stderr, "", log.LstdFlags)
			s, err := New(cfg)
			if err != nil {
				return &errServe{err}
			}
			cfg.Log.Printf("sidecar: gRPC on %s -> Triton %s; HTTP on %s -> Triton %s",
				s.GRPCAddr(), cfg.TritonGRPC, s.HTTPAddr(), cfg.TritonHTTP)
			if err := s.Serve(ctx); err != nil {
				return &errServe{err}
			}
			cfg.Log.Printf("sidecar: stopped")
			return nil
		},
	}
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	f := cmd.Flags()
	f.StringVar(&cfg.TritonGRPC, "triton-grpc", "", "upstream Triton's gRPC endpoint, HOST:PORT (required)")
	f.StringVar(&cfg.TritonHTTP, "triton-http", "", "upstream Triton's HTTP endpoint, HOST:PORT (required)")
	f.StringVar(&cfg.GRPCListen, "grpc-listen", ":8001", "where to serve gRPC, ADDR")
	f.StringVar(&cfg.HTTPListen, "http-listen", ":8000", "where to serve HTTP, ADDR")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", DefaultShutdownTimeout, "how long calls in flight may finish after SIGTERM/SIGINT")
	for _, name := range []string{"triton-grpc", "triton-http"} {
		if err := cmd.MarkFlagRequired(name); err != nil {
			panic(err) // the flag is defined just above
		}
	}
	return cmd
}

// Main runs the sidecar command with args (without the program name) until
// SIGTERM or SIGINT, and returns the process exit code: ExitOK, ExitFailure
// or ExitUsage. Errors are printed to stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cmd := NewCommand(ctx, stdout, stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "sidecar: %v\n", err)
	var se *errServe
	if errors.As(err, &se) {
		return ExitFailure
	}
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return ExitUsage
}
