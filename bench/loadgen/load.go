package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// errorPause is how long a worker waits after a failed request before the
// next, so that a server refusing every call (the sidecar before its
// controllable path works, say) does not turn the closed loop into a busy
// loop that starves the machine. It only slows runs that are invalid anyway.
const errorPause = 10 * time.Millisecond

// overrun bounds how long a request may still run after the measurement
// window ends: every call's context expires then, and a request cut off
// counts as an error.
const overrun = 30 * time.Second

// result is the JSON line a run prints.
type result struct {
	Label       string   `json:"label"`
	Mode        string   `json:"mode"`
	Addr        string   `json:"addr"`
	Models      []string `json:"models"`
	Concurrency int      `json:"concurrency"`
	Batch       int      `json:"batch"`
	Conns       int      `json:"conns"`
	// Requests is the number of requests measured that succeeded (in
	// twocall and pair modes, one request is both calls).
	Requests int64 `json:"requests"`
	// Errors counts the measured requests that failed; WarmupErrors those
	// during the warmup. FirstError is the first failure of either.
	Errors       int64  `json:"errors"`
	WarmupErrors int64  `json:"warmup_errors"`
	FirstError   string `json:"first_error,omitempty"`
	// DurationS runs from the end of the warmup to the last measured
	// answer; Throughput is Requests×Batch/DurationS, inferences per second.
	DurationS  float64  `json:"duration_s"`
	Throughput float64  `json:"throughput"`
	P50ms      *float64 `json:"p50_ms"`
	P90ms      *float64 `json:"p90_ms"`
	P99ms      *float64 `json:"p99_ms"`
	MeanMs     *float64 `json:"mean_ms"`
	MaxMs      *float64 `json:"max_ms"`
}

// dial opens c.conns client connections to c.addr, plaintext, with
// Triton's message size limits (INT32_MAX both ways); extra options come
// last (tests use them to dial in memory).
func dial(c *config, extra ...grpc.DialOption) ([]*grpc.ClientConn, error) {
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(math.MaxInt32),
			grpc.MaxCallSendMsgSize(math.MaxInt32),
		),
	}, extra...)
	conns := make([]*grpc.ClientConn, 0, c.conns)
	for range c.conns {
		conn, err := grpc.NewClient(c.addr, opts...)
		if err != nil {
			for _, open := range conns {
				open.Close()
			}
			return nil, fmt.Errorf("loadgen: dialing %s: %w", c.addr, err)
		}
		conn.Connect()
		conns = append(conns, conn)
	}
	return conns, nil
}

// randomInputs makes the request inputs of c, FP32 values uniform in
// [-1, 1) from a PCG seeded with c.seed, little-endian: the tensors'
// descriptions and their raw contents, in the same order.
func randomInputs(c *config) ([]*tritonpb.ModelInferRequest_InferInputTensor, [][]byte) {
	rng := rand.New(rand.NewPCG(c.seed, 0x6c6f616467656e)) // "loadgen"
	tensors := make([]*tritonpb.ModelInferRequest_InferInputTensor, len(c.inputs))
	raw := make([][]byte, len(c.inputs))
	for i, in := range c.inputs {
		shape := append([]int64{int64(c.batch)}, in.dims...)
		tensors[i] = &tritonpb.ModelInferRequest_InferInputTensor{Name: in.name, Datatype: "FP32", Shape: shape}
		b := make([]byte, 4*int64(c.batch)*in.elements())
		for j := 0; j < len(b); j += 4 {
			binary.LittleEndian.PutUint32(b[j:], math.Float32bits(2*rng.Float32()-1))
		}
		raw[i] = b
	}
	return tensors, raw
}

// parameters turns -param flags into request parameters, nil for none.
func parameters(kvs []keyValue) map[string]*tritonpb.InferParameter {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]*tritonpb.InferParameter, len(kvs))
	for _, kv := range kvs {
		m[kv.key] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: kv.value}}
	}
	return m
}

// worker is one closed loop: it owns its requests (built once, then only
// re-pointed at new bytes) and its measurements, so workers share nothing
// but the connections.
type worker struct {
	client tritonpb.GRPCInferenceServiceClient
	// req is the request of infer mode, or the backbone's in twocall mode.
	req *tritonpb.ModelInferRequest
	// head is twocall's second request; its single input is re-pointed at
	// each backbone answer's feature tensor.
	head    *tritonpb.ModelInferRequest
	feature string
	// pair is pair mode's second request, sent with the same input as req
	// at the same time; pairErr carries its outcome back.
	pair    *tritonpb.ModelInferRequest
	pairErr chan error

	latencies    []time.Duration
	errors       int64
	warmupErrors int64
	firstErr     error
	firstErrAt   time.Time
	// last is when the last measured request ended.
	last time.Time
}

// newWorkers builds c.concurrency workers over conns, round robin.
func newWorkers(c *config, conns []*grpc.ClientConn) []*worker {
	tensors, raw := randomInputs(c)
	params := parameters(c.params)
	template := &tritonpb.ModelInferRequest{Inputs: tensors, RawInputContents: raw, Parameters: params}
	switch c.mode {
	case modeInfer:
		template.ModelName = c.model
	case modePair:
		template.ModelName = c.backbone
		if c.feature != "" {
			template.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: c.feature}}
		}
	default:
		template.ModelName = c.backbone
		template.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: c.feature}}
	}
	clients := make([]tritonpb.GRPCInferenceServiceClient, len(conns))
	for i, conn := range conns {
		clients[i] = tritonpb.NewGRPCInferenceServiceClient(conn)
	}
	workers := make([]*worker, c.concurrency)
	for i := range workers {
		w := &worker{
			client: clients[i%len(clients)],
			// Each worker marshals its own copy: no message is shared
			// between goroutines.
			req:       proto.Clone(template).(*tritonpb.ModelInferRequest),
			latencies: make([]time.Duration, 0, 4096),
		}
		if c.mode == modePair {
			w.pair = proto.Clone(w.req).(*tritonpb.ModelInferRequest)
			w.pair.ModelName = c.expert
			w.pairErr = make(chan error, 1)
		}
		if c.mode == modeTwoCall {
			w.feature = c.feature
			w.head = &tritonpb.ModelInferRequest{
				ModelName:        c.head,
				Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: c.headInput}},
				RawInputContents: make([][]byte, 1),
				Parameters:       parameters(c.params),
			}
		}
		workers[i] = w
	}
	return workers
}

// call sends one request: the model, the backbone then the head, or the
// backbone and the expert at once.
func (w *worker) call(ctx context.Context) error {
	if w.pair != nil {
		go func() {
			_, err := w.client.ModelInfer(ctx, w.pair)
			if err != nil {
				err = fmt.Errorf("expert %s: %w", w.pair.ModelName, err)
			}
			w.pairErr <- err
		}()
		_, err := w.client.ModelInfer(ctx, w.req)
		if err != nil {
			err = fmt.Errorf("backbone %s: %w", w.req.ModelName, err)
		}
		return errors.Join(err, <-w.pairErr)
	}
	resp, err := w.client.ModelInfer(ctx, w.req)
	if err != nil || w.head == nil {
		return err
	}
	i := 0
	for i < len(resp.Outputs) && resp.Outputs[i].Name != w.feature {
		i++
	}
	switch {
	case i == len(resp.Outputs):
		return fmt.Errorf("backbone %s: no output %q in its answer", w.req.ModelName, w.feature)
	case i >= len(resp.RawOutputContents):
		return fmt.Errorf("backbone %s: output %q not in raw_output_contents", w.req.ModelName, w.feature)
	}
	out := resp.Outputs[i]
	in := w.head.Inputs[0]
	in.Datatype, in.Shape = out.Datatype, out.Shape
	w.head.RawInputContents[0] = resp.RawOutputContents[i]
	_, err = w.client.ModelInfer(ctx, w.head)
	if err != nil {
		return fmt.Errorf("head %s: %w", w.head.ModelName, err)
	}
	return nil
}

// loop sends requests until end; those started at or after measureFrom
// are measured.
func (w *worker) loop(ctx context.Context, measureFrom, end time.Time) {
	for {
		start := time.Now()
		if !start.Before(end) {
			return
		}
		err := w.call(ctx)
		elapsed := time.Since(start)
		measured := !start.Before(measureFrom)
		if measured {
			w.last = start.Add(elapsed)
		}
		if err == nil {
			if measured {
				w.latencies = append(w.latencies, elapsed)
			}
			continue
		}
		if measured {
			w.errors++
		} else {
			w.warmupErrors++
		}
		if w.firstErr == nil {
			w.firstErr, w.firstErrAt = err, start
		}
		if ctx.Err() != nil {
			return
		}
		time.Sleep(errorPause)
	}
}

// run drives c.concurrency workers over conns for c.warmup plus
// c.duration and returns the summary.
func run(ctx context.Context, c *config, conns []*grpc.ClientConn) result {
	workers := newWorkers(c, conns)
	if len(c.metadata) > 0 {
		md := metadata.MD{}
		for _, kv := range c.metadata {
			md.Append(kv.key, kv.value)
		}
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	start := time.Now()
	measureFrom := start.Add(c.warmup)
	end := measureFrom.Add(c.duration)
	// One deadline for every call: per-call timers would cost an allocation
	// each.
	ctx, cancel := context.WithDeadline(ctx, end.Add(overrun))
	defer cancel()

	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.loop(ctx, measureFrom, end) })
	}
	wg.Wait()

	r := result{
		Label: c.label, Mode: c.mode, Addr: c.addr, Models: c.models(),
		Concurrency: c.concurrency, Batch: c.batch, Conns: len(conns),
	}
	var all []time.Duration
	last := measureFrom
	var first error
	var firstAt time.Time
	for _, w := range workers {
		all = append(all, w.latencies...)
		r.Errors += w.errors
		r.WarmupErrors += w.warmupErrors
		if w.last.After(last) {
			last = w.last
		}
		if w.firstErr != nil && (first == nil || w.firstErrAt.Before(firstAt)) {
			first, firstAt = w.firstErr, w.firstErrAt
		}
	}
	if first != nil {
		r.FirstError = first.Error()
	}
	if errors.Is(ctx.Err(), context.Canceled) && r.FirstError == "" {
		r.FirstError = "interrupted"
	}
	r.Requests = int64(len(all))
	d := last.Sub(measureFrom)
	if r.Requests == 0 || d <= 0 {
		d = time.Since(measureFrom)
	}
	r.DurationS = roundTo(d.Seconds(), 3)
	r.Throughput = roundTo(float64(r.Requests)*float64(c.batch)/d.Seconds(), 1)
	s := summarize(all)
	r.P50ms, r.P90ms, r.P99ms, r.MeanMs, r.MaxMs = s.P50, s.P90, s.P99, s.Mean, s.Max
	return r
}
