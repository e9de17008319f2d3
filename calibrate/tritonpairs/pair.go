package tritonpairs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/calibrate/images"
	"github.com/mergectl/react-triton/internal/samples"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/modelinfo"
)

// Config says what a Triton-backed fit runs, and on which inputs.
type Config struct {
	// Inputs is the directory of each task's unlabeled calibration inputs:
	// DIR/<task>.npy, float32, samples along the first axis, then the
	// shape of one model input without its batch dimension; or DIR/<task>/,
	// a folder of PNG or JPEG images, each preprocessed into one sample as
	// Images says.
	Inputs string
	// Images completes, from the backbone's input shape, how an image
	// becomes a sample.
	Images images.Options
	// SkipBadImages leaves out the image files whose header does not
	// decode (Pair.Skipped), and with SendEncoded those the models
	// refuse (Pair.TakeSkipped), rather than failing.
	SkipBadImages bool
	// SendEncoded sends each image file's bytes as they are, one element of
	// a BYTES tensor [n,1], to models that take encoded images (such as
	// ensembles of a preprocessing model and a backbone), instead of
	// decoding them here: every task's inputs must then be a folder, and
	// every model's input BYTES. A chunk a model refuses with
	// INVALID_ARGUMENT is sent again one file at a time to find the files
	// it refuses.
	SendEncoded bool
	// Tasks lists the tasks to fit, in order; empty means every <task>.npy
	// in Inputs, sorted.
	Tasks []string
	// Backbone is the merged backbone. An empty Output picks its only output.
	Backbone react.ModelRef
	// Experts maps every task to its expert. An empty Output picks the
	// expert's only output, or else the one named like the backbone's.
	Experts map[string]react.ModelRef
	// Batch caps the samples per request (0: modelinfo.DefaultBatch); each
	// model's max_batch_size caps it further.
	Batch int
	// InFlight is the number of chunks of a task in flight at once (0:
	// modelinfo.DefaultInFlight).
	InFlight int
	// RetryMaxWait bounds how long one request is retried after transient
	// failures (UNAVAILABLE, DEADLINE_EXCEEDED, NOT_FOUND of a model
	// unloaded by a Triton shutting down), counted from its first failure;
	// 0 disables retries.
	RetryMaxWait time.Duration
	// OnRetry, if not nil, is told of each retry: the failure and the wait
	// before the next try. It may be called from several goroutines.
	OnRetry func(err error, wait time.Duration)
}

// Backoff between the tries of a request that failed transiently.
const (
	retryInitialBackoff = 200 * time.Millisecond
	retryMaxBackoff     = 5 * time.Second
)

// Pair is the pairs.Source of one task whose features a Triton server
// computes: each chunk of the task's calibration inputs is sent to the
// merged backbone and to the task's expert at the same time, and the two
// feature outputs, decoded to float32 from their datatype (FP32, FP16 or
// BF16: modelinfo.IsFeatureDatatype), are the pairs. A few chunks are in
// flight at once; pairs come out in input order.
type Pair struct {
	task     string
	client   *triton.Client
	in       sampleInput
	backbone *tritonModel
	expert   *tritonModel
	bound    [2]samples.Binding // the samples' tensors for the backbone and the expert
	batch    int
	inFlight int
	retryMax time.Duration
	onRetry  func(error, time.Duration)
	skipBad  bool // leave out the encoded files the models refuse

	parent  context.Context // of the requests; nil: context.Background()
	started bool
	cancel  context.CancelFunc
	results chan chan chunkResult
	cur     chunkResult
	off     int
	err     error
	version [2]string        // the versions that answered: backbone, expert
	pending []images.Problem // files skipped, not yet taken (TakeSkipped)
}

// chunkResult is the features of one chunk of inputs.
type chunkResult struct {
	first, rows int
	mtl, ind    []float32
	version     [2]string
	err         error
	// skipped are the files of the chunk the models refused, left out of
	// its rows (encoded images with SkipBadImages).
	skipped []images.Problem
}

// Open checks everything a Triton-backed fit needs before any
// sample is sent, and returns one source per task, in order:
//   - each task's input file is a float32 array in C order, with samples,
//     of the size its header says;
//   - every task has an expert, and every expert a task;
//   - the server is reachable and ready, and so is each model;
//   - each model has one batched floating-point input that takes the
//     samples' shape, and the feature output, floating-point with a fixed
//     size D, the same for every model.
//
// ctx bounds these checks only; a source sends its requests from its first
// Next until its end or Close. The sources share c, which the caller closes
// after them.
func Open(ctx context.Context, c *triton.Client, cfg Config) (pairs []*Pair, err error) {
	tasks := cfg.Tasks
	if len(tasks) == 0 {
		if tasks, err = DiscoverInputs(cfg.Inputs); err != nil {
			return nil, err
		}
	}
	if err := CheckExperts(tasks, cfg.Experts); err != nil {
		return nil, err
	}

	var files []sampleInput
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
		}
	}()
	for _, task := range tasks {
		f, err := openTaskInput(cfg.Inputs, task, cfg.SkipBadImages, cfg.SendEncoded)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", task, err)
		}
		files = append(files, f)
	}

	ready, err := c.ServerReady(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to Triton: %w", err)
	}
	if !ready {
		return nil, fmt.Errorf("connecting to Triton: the server at %s is live but not ready", c.Addr())
	}
	backbone, err := checkModel(ctx, c, "backbone", cfg.Backbone, "")
	if err != nil {
		return nil, err
	}
	batching := modelinfo.BatchOptions{Batch: cfg.Batch, InFlight: cfg.InFlight}
	for i, task := range tasks {
		expert, err := checkModel(ctx, c, "expert of task "+task, cfg.Experts[task], backbone.ref.Output)
		if err != nil {
			return nil, err
		}
		if im, ok := files[i].(*imageInput); ok {
			if len(backbone.inputs) != 1 {
				return nil, fmt.Errorf("task %s: images of %s: backbone %s has %d inputs (%s): images feed a model of one input",
					task, im.source(), describe(backbone.ref), len(backbone.inputs), samples.InputNames(backbone.inputs))
			}
			// (An input of encoded images is named as such before its shape
			// is taken for an image's.)
			if _, err := backbone.bind([]samples.Spec{{Datatype: triton.FP32, Shape: backbone.inputs[0].Shape, Images: "decoded"}}, im.source()); err != nil {
				return nil, fmt.Errorf("task %s: %w", task, err)
			}
			if err := im.resolve(backbone.inputs[0].Shape, cfg.Images); err != nil {
				return nil, fmt.Errorf("task %s: images of %s for backbone %s, input %q: %w",
					task, im.source(), describe(backbone.ref), backbone.inputs[0].Name, err)
			}
		}
		var bound [2]samples.Binding
		for k, m := range []*tritonModel{backbone, expert} {
			if bound[k], err = m.bind(files[i].specs(), files[i].source()); err != nil {
				return nil, fmt.Errorf("task %s: %w", task, err)
			}
		}
		if expert.dim != backbone.dim {
			return nil, fmt.Errorf("task %s: expert %s gives features of D=%d (output %q) but backbone %s gives D=%d (output %q): they must match",
				task, describe(expert.ref), expert.dim, expert.ref.Output, describe(backbone.ref), backbone.dim, backbone.ref.Output)
		}
		b := batching.BatchSize(backbone.maxBatch, expert.maxBatch)
		pairs = append(pairs, &Pair{task: task, client: c, in: files[i], backbone: backbone, expert: expert, bound: bound, batch: b, inFlight: batching.Parallel(),
			retryMax: cfg.RetryMaxWait, onRetry: cfg.OnRetry, skipBad: cfg.SkipBadImages})
	}
	return pairs, nil
}

// Skipped returns the image files of the task left out because their
// header did not decode (Config.SkipBadImages); none for a .npy
// input.
func (p *Pair) Skipped() []images.Problem {
	if im, ok := p.in.(interface{ skipped() []images.Problem }); ok {
		return im.skipped()
	}
	return nil
}

// CheckExperts checks that experts names an expert for each task and for
// no other.
func CheckExperts(tasks []string, experts map[string]react.ModelRef) error {
	known := make(map[string]bool, len(tasks))
	var missing []string
	for _, t := range tasks {
		known[t] = true
		if experts[t].Name == "" {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--expert: no expert for task %s: give --expert task=model for every task", strings.Join(missing, ", "))
	}
	var extra []string
	for t := range experts {
		if !known[t] {
			extra = append(extra, t)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("--expert: task %s has no calibration inputs among the tasks fitted (%s)", strings.Join(extra, ", "), strings.Join(tasks, ", "))
	}
	return nil
}

// Task implements pairs.Source.
func (p *Pair) Task() string { return p.task }

// Dim implements pairs.Source.
func (p *Pair) Dim() int { return p.backbone.dim }

// Len implements pairs.Source: the number of samples used (see Use).
func (p *Pair) Len() int64 { return int64(p.in.count()) }

// Use restricts the samples sent to idx, ascending indices of the task's
// input samples (nil: all of them), and starts at position skip among
// them. Call it before the first Next.
func (p *Pair) Use(idx []int, skip int) { p.in.use(idx, skip) }

// SetContext makes ctx the parent of the requests: when it ends, those in
// flight are cancelled and Next fails. Call it before the first Next.
func (p *Pair) SetContext(ctx context.Context) { p.parent = ctx }

// Models returns the names of the backbone and the expert, for messages.
func (p *Pair) Models() string {
	return fmt.Sprintf("backbone %s, expert %s", describe(p.backbone.ref), describe(p.expert.ref))
}

// PinVersions makes the versions recorded earlier (by a checkpoint) the
// ones every further answer must come from; "" leaves a model free.
func (p *Pair) PinVersions(backbone, expert string) {
	p.version = [2]string{backbone, expert}
}

// Backbone returns the backbone as it was used: its output resolved and,
// once a request was answered, the version that answered if none was asked.
func (p *Pair) Backbone() react.ModelRef { return p.used(p.backbone.ref, p.version[0]) }

// Expert returns the task's expert as it was used; see Backbone.
func (p *Pair) Expert() react.ModelRef { return p.used(p.expert.ref, p.version[1]) }

func (p *Pair) used(ref react.ModelRef, version string) react.ModelRef {
	if ref.Version == "" {
		ref.Version = version
	}
	return ref
}

// Inputs says what the task's calibration inputs hold and, for images,
// how they become samples: a part of a checkpoint's description of its
// run.
func (p *Pair) Inputs() string { return p.in.describe() }

// BatchSize returns the number of samples per request.
func (p *Pair) BatchSize() int { return p.batch }

// Next implements pairs.Source. The first call starts the requests.
func (p *Pair) Next(mtl, ind []float64) (int, error) {
	if len(mtl) != len(ind) {
		return 0, errors.New("Next: batches of different lengths")
	}
	if p.err != nil {
		return 0, p.err
	}
	if !p.started {
		p.start()
	}
	for p.off >= p.cur.rows {
		fut, ok := <-p.results
		if !ok {
			return 0, io.EOF
		}
		r := <-fut
		if r.err == nil {
			r.err = p.checkVersions(r.version)
		}
		if r.err != nil {
			p.err = r.err
			return 0, r.err
		}
		p.pending = append(p.pending, r.skipped...)
		p.cur, p.off = r, 0
	}
	d := p.Dim()
	n := min(len(mtl)/d, p.cur.rows-p.off)
	if n == 0 {
		return 0, errors.New("Next: destination smaller than one pair")
	}
	from, to := p.off*d, (p.off+n)*d
	for i, v := range p.cur.mtl[from:to] {
		mtl[i] = float64(v)
	}
	for i, v := range p.cur.ind[from:to] {
		ind[i] = float64(v)
	}
	p.off += n
	return n, nil
}

// checkVersions checks that the same model versions answered every chunk.
func (p *Pair) checkVersions(v [2]string) error {
	for i, m := range []*tritonModel{p.backbone, p.expert} {
		switch {
		case p.version[i] == "":
			p.version[i] = v[i]
		case v[i] != "" && v[i] != p.version[i]:
			return fmt.Errorf("%s %s answered as version %s, then as version %s: the model changed during calibration",
				m.role, describe(m.ref), p.version[i], v[i])
		}
	}
	return nil
}

// start reads the inputs chunk by chunk in a goroutine and sends each chunk
// to both models, keeping at most inFlight chunks in flight. The results
// channel holds one future per chunk, in input order.
func (p *Pair) start() {
	p.started = true
	parent := p.parent
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	p.cancel = cancel
	p.results = make(chan chan chunkResult, p.inFlight-1)
	go func() {
		defer close(p.results)
		for first := 0; ; {
			c, err := p.in.read(p.batch)
			if errors.Is(err, io.EOF) {
				return
			}
			fut := make(chan chunkResult, 1)
			select {
			case p.results <- fut:
			case <-ctx.Done():
				return
			}
			if err != nil {
				fut <- chunkResult{err: err}
				return
			}
			go func(first int) { fut <- p.infer(ctx, c, first) }(first)
			first += c.n
		}
	}()
}

// infer runs one chunk through both models at the same time; when they
// refuse a chunk of encoded images, it finds the files they refuse
// (isolate).
func (p *Pair) infer(ctx context.Context, c chunk, first int) chunkResult {
	r, errs := p.inferBoth(ctx, c, first)
	if r.err == nil || c.files == nil {
		return r
	}
	var refusedBy []*tritonModel
	for i, m := range []*tritonModel{p.backbone, p.expert} {
		if refused(errs[i]) {
			refusedBy = append(refusedBy, m)
		}
	}
	if len(refusedBy) == 0 {
		return r
	}
	return p.isolate(ctx, c, first, r.err, refusedBy)
}

// inferBoth runs one chunk through both models at the same time; errs are
// each model's error.
func (p *Pair) inferBoth(ctx context.Context, c chunk, first int) (chunkResult, [2]error) {
	r := chunkResult{first: first, rows: c.n}
	var wg sync.WaitGroup
	var errs [2]error
	outs := [2]*[]float32{&r.mtl, &r.ind}
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			*outs[i], r.version[i], errs[i] = p.run(ctx, i, c, first)
		}()
	}
	wg.Wait()
	r.err = errors.Join(errs[0], errs[1])
	return r, errs
}

// run sends the chunk's samples to model m (0: the backbone, 1: the
// expert) and returns their features as float32 and the version that
// answered.
func (p *Pair) run(ctx context.Context, which int, c chunk, first int) ([]float32, string, error) {
	m := [2]*tritonModel{p.backbone, p.expert}[which]
	n := c.n
	fail := func(err error) ([]float32, string, error) {
		return nil, "", fmt.Errorf("%s %s: samples %d to %d of %s: %w", m.role, describe(m.ref), first, first+n, p.in.source(), err)
	}
	inputs, err := p.bound[which].Tensors(p.in.specs(), c.raw, n)
	if err != nil {
		return fail(err)
	}
	req := &triton.InferRequest{Model: m.ref.Name, Version: m.ref.Version, Inputs: inputs, Outputs: []string{m.ref.Output}}
	resp, err := p.send(ctx, req)
	if err != nil {
		return fail(err)
	}
	v, cols, err := resp.Rows(m.ref.Output, n)
	if err == nil && cols != m.dim {
		out, _ := resp.Output(m.ref.Output)
		err = fmt.Errorf("output %q has shape %s: want %d samples of D=%d", m.ref.Output, triton.FormatShape(out.Shape), n, m.dim)
	}
	if err != nil {
		return fail(err)
	}
	return v, resp.Version, nil
}

// send sends req, retrying transient failures (UNAVAILABLE,
// DEADLINE_EXCEEDED) with exponential backoff for at most retryMax from the
// first failure.
func (p *Pair) send(ctx context.Context, req *triton.InferRequest) (*triton.InferResponse, error) {
	var first time.Time
	backoff := retryInitialBackoff
	for {
		resp, err := p.client.Infer(ctx, req)
		if err == nil || !transient(err) || ctx.Err() != nil {
			return resp, err
		}
		if first.IsZero() {
			first = time.Now()
		}
		left := p.retryMax - time.Since(first)
		if left <= 0 {
			if p.retryMax > 0 {
				err = fmt.Errorf("still failing after retrying for %v: %w", p.retryMax, err)
			}
			return nil, err
		}
		wait := min(backoff, left)
		if p.onRetry != nil {
			p.onRetry(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		backoff = min(2*backoff, retryMaxBackoff)
	}
}

// transient reports whether a failed request may succeed if sent again:
// UNAVAILABLE, DEADLINE_EXCEEDED, and NOT_FOUND, since every model was
// checked ready before the first request, and a Triton shutting down (to
// restart) unloads its models while it still answers, with NOT_FOUND
// "Request for unknown model: ... has no available versions".
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.NotFound:
		return true
	}
	return false
}

// Close implements pairs.Source: it cancels the requests in flight and closes
// the input file.
func (p *Pair) Close() error {
	if p.started {
		p.cancel()
		for range p.results {
			// Drain so that the reader goroutine ends before the file closes.
		}
		p.started = false
	}
	return p.in.Close()
}
