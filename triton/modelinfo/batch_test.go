package modelinfo

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/internal/tritontest"
)

func TestBatchOptions(t *testing.T) {
	for _, tc := range []struct {
		o        BatchOptions
		maxBatch []int
		batch    int
		parallel int
	}{
		{BatchOptions{}, nil, DefaultBatch, DefaultInFlight},
		{BatchOptions{Batch: -1, InFlight: -1}, nil, DefaultBatch, DefaultInFlight},
		{BatchOptions{Batch: 8, InFlight: 2}, []int{0}, 8, 2},
		{BatchOptions{Batch: 8}, []int{5, 0, 6}, 5, DefaultInFlight},
		{BatchOptions{}, []int{1000}, DefaultBatch, DefaultInFlight},
	} {
		if b, p := tc.o.BatchSize(tc.maxBatch...), tc.o.Parallel(); b != tc.batch || p != tc.parallel {
			t.Errorf("%+v, max_batch_size %v: batch %d, in flight %d; want %d, %d", tc.o, tc.maxBatch, b, p, tc.batch, tc.parallel)
		}
	}
}

// startFake serves f and returns a client dialed to it.
func startFake(t *testing.T, f *tritontest.Server) *triton.Client {
	t.Helper()
	c, err := triton.Dial(context.Background(), tritontest.Target, triton.WithDialOptions(tritontest.Serve(t, f)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestResolve(t *testing.T) {
	c := startFake(t, &tritontest.Server{})
	m, err := Resolve(context.Background(), c, "affine_fp32", "")
	if err != nil || m.Name != "affine_fp32" || len(m.Metadata.GetInputs()) != 1 || m.Config.GetName() != "affine_fp32" {
		t.Fatalf("got %+v, %v", m, err)
	}
	_, err = Resolve(context.Background(), c, "nope", "2")
	var nr *triton.NotReadyError
	if !errors.As(err, &nr) || status.Code(err) != codes.Unavailable ||
		err.Error() != `model "nope" version 2 is not ready on Triton passthrough:///bufnet` {
		t.Errorf("not ready: %v (code %v)", err, status.Code(err))
	}
}

// TestResolveWithoutConfig: a server that does not implement ModelConfig
// (UNIMPLEMENTED) resolves with no configuration; any other failure of
// ModelConfig is Resolve's error, with its code.
func TestResolveWithoutConfig(t *testing.T) {
	for _, code := range []codes.Code{codes.Unimplemented, codes.Internal, codes.NotFound} {
		c := startFake(t, &tritontest.Server{ConfigCode: code})
		m, err := Resolve(context.Background(), c, "affine_fp32", "")
		switch {
		case code == codes.Unimplemented && (err != nil || m.Config != nil || len(m.Metadata.GetInputs()) != 1):
			t.Errorf("ModelConfig %v: got %+v, %v; want the metadata and no configuration", code, m, err)
		case code != codes.Unimplemented && status.Code(err) != code:
			t.Errorf("ModelConfig %v: got %+v, %v; want the error", code, m, err)
		}
	}
}

// TestRunBatched: every sample's output in order, whatever the batch and
// the requests in flight; a failure names the samples of its request.
func TestRunBatched(t *testing.T) {
	f := &tritontest.Server{}
	c := startFake(t, f)
	ctx := context.Background()
	m, err := Resolve(ctx, c, "affine_fp32", "")
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	x := make([]float32, n*4)
	for i := range x {
		x[i] = float32(i)
	}
	inputs := func(lo, hi int) ([]triton.Tensor, error) {
		return []triton.Tensor{triton.NewFP32("INPUT0", []int64{int64(hi - lo), 4}, x[4*lo:4*hi])}, nil
	}
	for _, o := range []BatchOptions{{}, {Batch: 3, InFlight: 2}, {Batch: 1, InFlight: 1}} {
		before := f.Count("ModelInfer")
		out, cols, err := RunBatched(ctx, c, m, "OUTPUT0", n, o, inputs)
		if err != nil || cols != 4 || len(out) != n*4 {
			t.Fatalf("%+v: %d values, %d per sample, %v", o, len(out), cols, err)
		}
		for i, v := range out {
			if v != 2*x[i]+1 {
				t.Fatalf("%+v: value %d is %v, want %v", o, i, v, 2*x[i]+1)
			}
		}
		if want := (n + o.BatchSize() - 1) / o.BatchSize(); f.Count("ModelInfer")-before != want {
			t.Errorf("%+v: %d requests, want %d", o, f.Count("ModelInfer")-before, want)
		}
	}
	_, _, err = RunBatched(ctx, c, m, "OUTPUT0", n, BatchOptions{Batch: 4}, func(lo, hi int) ([]triton.Tensor, error) {
		if lo == 4 {
			return nil, errors.New("bad file")
		}
		return inputs(lo, hi)
	})
	if err == nil || !strings.Contains(err.Error(), "samples 4 to 7: bad file") {
		t.Errorf("failing batch: %v", err)
	}
	if _, _, err := RunBatched(ctx, c, m, "OUTPUT0", 0, BatchOptions{}, inputs); err == nil {
		t.Error("no samples: no error")
	}
}
