package main

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// fakeTriton answers ModelInfer in memory: "backbone" returns its input's
// bytes reversed as output "feature" (after an unrelated output), "head"
// checks that it got exactly those bytes, "model" just answers, any other
// name is NOT_FOUND. Every call's metadata and parameters are checked.
type fakeTriton struct {
	tritonpb.UnimplementedGRPCInferenceServiceServer

	calls atomic.Int64

	mu       sync.Mutex
	problems []string
	// backboneIn is the last input the backbone got.
	backboneIn []byte
}

// problem records a failed check (the test reports them at the end).
func (f *fakeTriton) problem(msg string) error {
	f.mu.Lock()
	f.problems = append(f.problems, msg)
	f.mu.Unlock()
	return status.Error(codes.InvalidArgument, msg)
}

// reversed returns a reversed copy of b.
func reversed(b []byte) []byte {
	r := slices.Clone(b)
	slices.Reverse(r)
	return r
}

// ModelInfer implements the fake models.
func (f *fakeTriton) ModelInfer(ctx context.Context, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
	f.calls.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	if got := md.Get("react-preference"); len(got) != 1 || got[0] != "a=0.6,b=0.4" {
		return nil, f.problem("metadata react-preference = " + strings.Join(got, "|"))
	}
	if p := req.Parameters["tag"]; p == nil || p.GetStringParam() != "bench" {
		return nil, f.problem("parameter tag missing")
	}
	if len(req.Inputs) != 1 || len(req.RawInputContents) != 1 {
		return nil, f.problem("want one input in raw_input_contents")
	}
	in, raw := req.Inputs[0], req.RawInputContents[0]
	switch req.ModelName {
	case "backbone":
		if in.Name != "x" || in.Datatype != "FP32" || !slices.Equal(in.Shape, []int64{2, 3}) || len(raw) != 2*3*4 {
			return nil, f.problem("backbone input " + in.String())
		}
		if len(req.Outputs) != 1 {
			return nil, f.problem("backbone: want only the feature requested")
		}
		f.mu.Lock()
		f.backboneIn = raw
		f.mu.Unlock()
		return &tritonpb.ModelInferResponse{
			ModelName: "backbone",
			Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{
				{Name: "other", Datatype: "INT8", Shape: []int64{2, 1}},
				{Name: "feature", Datatype: "FP16", Shape: []int64{2, 6}},
			},
			RawOutputContents: [][]byte{{1, 2}, reversed(raw)},
		}, nil
	case "head":
		if in.Name != "feat_in" || in.Datatype != "FP16" || !slices.Equal(in.Shape, []int64{2, 6}) {
			return nil, f.problem("head input " + in.String())
		}
		// Every worker sends the same input, so every backbone answer is
		// the same: the head must get exactly its bytes.
		f.mu.Lock()
		want := reversed(f.backboneIn)
		f.mu.Unlock()
		if !bytes.Equal(raw, want) {
			return nil, f.problem("head: raw input is not the backbone's answer")
		}
		return &tritonpb.ModelInferResponse{ModelName: "head"}, nil
	case "model":
		return &tritonpb.ModelInferResponse{ModelName: "model"}, nil
	}
	return nil, status.Error(codes.NotFound, "no model "+req.ModelName)
}

// startFake serves f over an in-memory listener and returns a dial option
// that reaches it.
func startFake(t *testing.T, f *fakeTriton) grpc.DialOption {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	tritonpb.RegisterGRPCInferenceServiceServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })
}

// runFake runs loadgen's run with args against a fresh fake.
func runFake(t *testing.T, args ...string) (result, *fakeTriton) {
	t.Helper()
	f := &fakeTriton{}
	opt := startFake(t, f)
	base := []string{"-addr", "passthrough:///fake", "-input", "x:3", "-batch", "2",
		"-concurrency", "3", "-conns", "2", "-warmup", "50ms", "-duration", "200ms",
		"-metadata", "react-preference=a=0.6,b=0.4", "-param", "tag=bench", "-label", "test"}
	c, err := parseFlags(append(base, args...), t.Output())
	if err != nil {
		t.Fatal(err)
	}
	conns, err := dial(c, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, conn := range conns {
			conn.Close()
		}
	})
	r := run(t.Context(), c, conns)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Errorf("server saw: %s", p)
	}
	return r, f
}

// checkHealthy checks the summary of a run where everything succeeded.
func checkHealthy(t *testing.T, r result) {
	t.Helper()
	if r.Errors != 0 || r.WarmupErrors != 0 || r.FirstError != "" {
		t.Errorf("errors %d, warmup errors %d, first %q; want none", r.Errors, r.WarmupErrors, r.FirstError)
	}
	if r.Requests < 10 {
		t.Errorf("only %d requests measured", r.Requests)
	}
	if r.DurationS < 0.2 || r.DurationS > 2 {
		t.Errorf("duration %v s, want about 0.2", r.DurationS)
	}
	want := float64(r.Requests) * 2 / r.DurationS
	if r.Throughput < 0.99*want || r.Throughput > 1.01*want {
		t.Errorf("throughput %v, want requests×batch/duration = %v", r.Throughput, want)
	}
	if r.P50ms == nil || r.P99ms == nil || *r.P50ms > *r.P99ms || *r.P99ms > *r.MaxMs {
		t.Errorf("percentiles p50 %v, p99 %v, max %v", r.P50ms, r.P99ms, r.MaxMs)
	}
	if r.Concurrency != 3 || r.Batch != 2 || r.Conns != 2 || r.Label != "test" {
		t.Errorf("echoed settings %+v", r)
	}
}

func TestRunInfer(t *testing.T) {
	r, f := runFake(t, "-model", "model")
	checkHealthy(t, r)
	if r.Mode != modeInfer || !slices.Equal(r.Models, []string{"model"}) {
		t.Errorf("mode %q, models %v", r.Mode, r.Models)
	}
	// Warmup requests reach the server too.
	if f.calls.Load() <= r.Requests {
		t.Errorf("server calls %d, measured requests %d: want warmup calls on top", f.calls.Load(), r.Requests)
	}
}

func TestRunTwoCall(t *testing.T) {
	r, f := runFake(t, "-mode", "twocall", "-backbone", "backbone", "-feature", "feature",
		"-head", "head", "-head-input", "feat_in")
	checkHealthy(t, r)
	if calls := f.calls.Load(); calls%2 != 0 || calls < 2*r.Requests {
		t.Errorf("server calls %d for %d two-call requests", calls, r.Requests)
	}
	if !slices.Equal(r.Models, []string{"backbone", "head"}) {
		t.Errorf("models %v", r.Models)
	}
}

func TestRunPair(t *testing.T) {
	r, f := runFake(t, "-mode", "pair", "-backbone", "backbone", "-expert", "model", "-feature", "feature")
	checkHealthy(t, r)
	if calls := f.calls.Load(); calls < 2*r.Requests {
		t.Errorf("server calls %d for %d pairs", calls, r.Requests)
	}
	if !slices.Equal(r.Models, []string{"backbone", "model"}) {
		t.Errorf("models %v", r.Models)
	}
	r, _ = runFake(t, "-mode", "pair", "-backbone", "backbone", "-expert", "absent", "-feature", "feature")
	if r.Requests != 0 || !strings.Contains(r.FirstError, "expert absent: ") || !strings.Contains(r.FirstError, "no model absent") {
		t.Errorf("requests %d, first error %q", r.Requests, r.FirstError)
	}
}

func TestRunErrorsCounted(t *testing.T) {
	start := time.Now()
	r, _ := runFake(t, "-mode", "twocall", "-backbone", "backbone", "-feature", "missing", "-head", "head")
	if r.Requests != 0 || r.P50ms != nil {
		t.Errorf("requests %d, p50 %v; want none", r.Requests, r.P50ms)
	}
	// With a 10 ms pause after each failure, 3 workers make about 60 in
	// 200 ms: enough to see they are counted, few enough to show the pause.
	if r.Errors < 10 || r.Errors > 200 {
		t.Errorf("errors %d, want about 60", r.Errors)
	}
	if r.WarmupErrors == 0 {
		t.Error("no warmup errors counted")
	}
	if want := `backbone backbone: no output "missing" in its answer`; r.FirstError != want {
		t.Errorf("first error %q, want %q", r.FirstError, want)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("a failing run took too long")
	}
}

func TestRunServerError(t *testing.T) {
	r, _ := runFake(t, "-model", "absent")
	if r.Requests != 0 || r.Errors == 0 {
		t.Errorf("requests %d, errors %d", r.Requests, r.Errors)
	}
	if !strings.Contains(r.FirstError, "NotFound") || !strings.Contains(r.FirstError, "no model absent") {
		t.Errorf("first error %q", r.FirstError)
	}
}
