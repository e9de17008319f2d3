package triton

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

func TestResolveModel(t *testing.T) {
	c := startFake(t, &fakeTriton{})
	m, err := c.ResolveModel(context.Background(), "affine_fp32", "")
	if err != nil || m.Name != "affine_fp32" || len(m.Metadata.GetInputs()) != 1 || m.Config.GetName() != "affine_fp32" {
		t.Fatalf("got %+v, %v", m, err)
	}
	_, err = c.ResolveModel(context.Background(), "nope", "2")
	var nr *NotReadyError
	if !errors.As(err, &nr) || status.Code(err) != codes.Unavailable ||
		err.Error() != `model "nope" version 2 is not ready on Triton passthrough:///bufnet` {
		t.Errorf("not ready: %v (code %v)", err, status.Code(err))
	}
}

// TestRunBatched: every sample's output in order, whatever the batch and
// the requests in flight; a failure names the samples of its request.
func TestRunBatched(t *testing.T) {
	f := &fakeTriton{}
	c := startFake(t, f)
	ctx := context.Background()
	m, err := c.ResolveModel(ctx, "affine_fp32", "")
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	x := make([]float32, n*4)
	for i := range x {
		x[i] = float32(i)
	}
	inputs := func(lo, hi int) ([]Tensor, error) {
		return []Tensor{NewFP32("INPUT0", []int64{int64(hi - lo), 4}, x[4*lo:4*hi])}, nil
	}
	for _, o := range []BatchOptions{{}, {Batch: 3, InFlight: 2}, {Batch: 1, InFlight: 1}} {
		before := f.count("ModelInfer")
		out, cols, err := c.RunBatched(ctx, m, "OUTPUT0", n, o, inputs)
		if err != nil || cols != 4 || len(out) != n*4 {
			t.Fatalf("%+v: %d values, %d per sample, %v", o, len(out), cols, err)
		}
		for i, v := range out {
			if v != 2*x[i]+1 {
				t.Fatalf("%+v: value %d is %v, want %v", o, i, v, 2*x[i]+1)
			}
		}
		if want := (n + o.BatchSize() - 1) / o.BatchSize(); f.count("ModelInfer")-before != want {
			t.Errorf("%+v: %d requests, want %d", o, f.count("ModelInfer")-before, want)
		}
	}
	_, _, err = c.RunBatched(ctx, m, "OUTPUT0", n, BatchOptions{Batch: 4}, func(lo, hi int) ([]Tensor, error) {
		if lo == 4 {
			return nil, errors.New("bad file")
		}
		return inputs(lo, hi)
	})
	if err == nil || !strings.Contains(err.Error(), "samples 4 to 7: bad file") {
		t.Errorf("failing batch: %v", err)
	}
	if _, _, err := c.RunBatched(ctx, m, "OUTPUT0", 0, BatchOptions{}, inputs); err == nil {
		t.Error("no samples: no error")
	}
}

func TestInferResponseRows(t *testing.T) {
	resp := &InferResponse{Outputs: []Tensor{NewFP32("y", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})}}
	for _, tc := range []struct {
		name string
		rows int
		cols int
		err  string
	}{
		{"y", 2, 3, ""},
		{"y", 3, 2, ""},
		{"y", 4, 0, `output "y" has 6 values for 4 samples`},
		{"z", 2, 0, `the response has no output "z"`},
	} {
		_, cols, err := resp.Rows(tc.name, tc.rows)
		if cols != tc.cols || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("Rows(%q, %d): %d, %v; want %d, %q", tc.name, tc.rows, cols, err, tc.cols, tc.err)
		}
	}
}
