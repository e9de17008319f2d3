// Command loadgen is a closed-loop load generator for Triton's gRPC
// ModelInfer, used by bench/sidecar-controllable.sh to compare the sidecar's
// controllable models with the same work done by a client and by a Triton
// ensemble.
//
//	loadgen -addr HOST:PORT -mode infer -model M -input NAME:DIMS [flags]
//	loadgen -addr HOST:PORT -mode twocall -backbone B -feature OUT -head H -input NAME:DIMS [flags]
//	loadgen -addr HOST:PORT -mode pair -backbone B -expert E -input NAME:DIMS [flags]
//
// In infer mode each request is one ModelInfer call of -model. In twocall
// mode it is a call of -backbone asking only for its output -feature, then
// a call of -head whose input (-head-input, by default named like the
// feature) is that output's bytes, sent on as raw_input_contents unchanged,
// with the datatype and shape the backbone answered. In pair mode it is a
// call of -backbone and a call of -expert with the same input, sent at the
// same time, and done when both answered: what calibrate fit --triton does
// with each chunk, without reading inputs or accumulating (used by
// bench/calibrate.sh).
//
// -concurrency workers each keep one request in flight: send, wait for the
// answer, send the next. They share -conns gRPC connections (default one;
// HTTP/2 multiplexes the calls). The inputs are FP32, [-batch, DIMS...],
// uniform in [-1, 1) from a generator seeded with -seed, made once; each
// worker builds its requests once and reuses them, so the per-request cost
// on the client is what grpc-go needs to marshal, send and decode. Latency
// is measured per request on the client, from just before the call to just
// after its answer (both calls in twocall mode). Requests started during
// -warmup are not measured; the measurement lasts -duration, and
// throughput counts inferences (requests × batch) per second from the end
// of the warmup to the last measured answer. Failed requests are counted,
// never fatal, and the worker pauses 10 ms after each so that a server
// that refuses everything is not hammered in a busy loop.
//
// The output is one JSON line on stdout: label, mode, addr, models,
// concurrency, batch, conns, requests, errors, warmup_errors, first_error,
// duration_s, throughput, p50_ms, p90_ms, p99_ms, mean_ms and max_ms
// (percentiles by nearest rank; null when nothing succeeded). The exit
// status is 0 when a run happened, whatever its errors, and 2 for a usage
// error.
//
// Is the client the bottleneck? Checked on the shared 2-core development
// machine (load average 9 to 11 from other sessions' work) by running
// loadgen and perf_analyzer alternately, three rounds at concurrency 8,
// against the synth ensemble of bench/models and against affine_fp32 of
// triton/testdata/repo, a model that does almost nothing: loadgen's
// throughput was at or above perf_analyzer's in 5 of the 6 pairs (medians
// 1128 against 791 infer/s on synth, 3999 against 3130 on affine_fp32), at
// similar latencies, and its own CPU time (user + sys) came to roughly 85 to
// 140 µs per request, against roughly 130 to 190 µs for perf_analyzer. The
// numbers are in bench/README.md, "Sidecar: controllable path".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(mainErr(os.Args[1:], os.Stdout, os.Stderr))
}

// mainErr runs the command and returns its exit status.
func mainErr(args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	conns, err := dial(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := run(ctx, c, conns)
	line, err := json.Marshal(r)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: encoding the result: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", line)
	return 0
}
