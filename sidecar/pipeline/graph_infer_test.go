package pipeline_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// graphRequestOf wraps a request with no header.
func graphRequestOf(req *tritonpb.ModelInferRequest) pipeline.Request {
	return pipeline.Request{Proto: req}
}

// withPreference wraps a request with a react-preference header.
func withPreference(req *tritonpb.ModelInferRequest, pref string) pipeline.Request {
	return pipeline.Request{Proto: req, Header: control.Values{Preference: pref, HasPreference: true}}
}

// decoded returns a response's outputs, decoded, by name.
func decoded(t *testing.T, resp *tritonpb.ModelInferResponse) map[string]triton.Tensor {
	t.Helper()
	out := map[string]triton.Tensor{}
	raw := resp.GetRawOutputContents()
	if len(raw) != len(resp.GetOutputs()) {
		t.Fatalf("%d raw contents for %d outputs", len(raw), len(resp.GetOutputs()))
	}
	for i, o := range resp.GetOutputs() {
		out[o.GetName()] = triton.Tensor{Name: o.GetName(), Datatype: o.GetDatatype(), Shape: o.GetShape(), Raw: raw[i]}
	}
	return out
}

// closeTo checks got against want within tol times the largest |want|,
// and returns the largest difference.
func closeTo(t *testing.T, what string, got []float32, want []float32, tol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale, diff := 1e-6, 0.0
	for i := range want {
		scale = math.Max(scale, math.Abs(float64(want[i])))
		diff = math.Max(diff, math.Abs(float64(got[i])-float64(want[i])))
	}
	if diff > tol*scale {
		t.Errorf("%s: max |diff| %.3g > %g × %.3g\n got %v\nwant %v", what, diff, tol, scale, got, want)
	}
	return diff / scale
}

// graphTol is the relative tolerance of the corrected graph's outputs: the
// corrected tensor travels as FP16, whose rounding (half an ulp, 2⁻¹¹) can
// fall either side with W_p in float32.
const graphTol = 4e-3

// TestGraphInferCorrected: with a preference, every output of the graph,
// post-processing included, is the graph computed by the test with W_p
// (from the scenario's samples, in float64) applied to the named tensor;
// the heads receive the corrected tensor in its own datatype (FP16), for
// an ensemble that batches and one that does not.
func TestGraphInferCorrected(t *testing.T) {
	e := newGraphEnv(t)
	set := e.mustBuild(t, e.graphConfig())
	s := graphSteps{e.sc}
	w := e.sc.Reference(weights(0.25, 0.75, 0), e.sc.Beta, false)
	for _, n := range []graphNames{batched, unbatched} {
		t.Run(n.ensemble, func(t *testing.T) {
			image, mask := graphImages, graphMasks
			if !n.batch {
				image, mask = image[9:12], mask[9:12]
			}
			res, err := set.Models[n.ensemble].Infer(context.Background(), e.up, withPreference(graphRequest(n.ensemble, n.batch, image, mask), "a=1,b=3"))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Response.GetParameters()[control.KeyPreference].GetStringParam(); got != "a=0.25,b=0.75" {
				t.Errorf("react-preference %q", got)
			}
			// As Triton's ensembles answer (2.51).
			if p := res.Response.GetParameters(); p["sequence_id"].GetInt64Param() != 0 || p["sequence_start"] == nil || p["sequence_end"] == nil {
				t.Errorf("sequence parameters %v", p)
			}
			if res.Response.GetModelName() != n.ensemble || res.Response.GetId() != "g-1" || res.Response.GetModelVersion() != "1" {
				t.Errorf("response names %q version %q id %q", res.Response.GetModelName(), res.Response.GetModelVersion(), res.Response.GetId())
			}
			want := s.compute(image, mask, w)
			plain := s.compute(image, mask, nil)
			out := decoded(t, res.Response)
			if len(out) != 4 {
				t.Fatalf("outputs %v, want label, index, probs, scores_a", res.Response.GetOutputs())
			}
			rows := int64(len(image) / 3)
			wantShape := func(dims ...int64) []int64 {
				if n.batch {
					return append([]int64{rows}, dims...)
				}
				return dims
			}
			for name, shape := range map[string][]int64{"label": wantShape(1), "index": wantShape(1), "probs": wantShape(2), "scores_a": wantShape(2)} {
				if got := out[name].Shape; triton.FormatShape(got) != triton.FormatShape(shape) {
					t.Errorf("%s shape %v, want %v", name, got, shape)
				}
			}
			// What head_a received: the corrected emb, FP16.
			last := e.fake.LastRequest(n.headA)
			emb := triton.Tensor{Datatype: last.GetInputs()[0].GetDatatype(), Raw: last.GetRawInputContents()[0]}
			gotEmb, err := emb.FP16()
			if err != nil || last.GetInputs()[0].GetName() != "feature" {
				t.Fatalf("head_a's input %v: %v", last.GetInputs(), err)
			}
			wantEmb := make([]float32, len(want.emb))
			for i, v := range want.emb {
				wantEmb[i] = float32(v)
			}
			closeTo(t, "emb", gotEmb, wantEmb, graphTol)
			scores, _ := out["scores_a"].FP32()
			closeTo(t, "scores_a", scores, want.scoresA, graphTol)
			probs, _ := out["probs"].FP32()
			closeTo(t, "probs", probs, want.probs, graphTol)
			// The test can tell: the uncorrected graph is far off.
			if d := closeTo(&testing.T{}, "", probs, plain.probs, 0); d < 10*graphTol {
				t.Errorf("the corrected probs are within %.3g of the uncorrected ones: the test cannot tell them apart", d)
			}
			// The post-processing ran on the corrected scores.
			labels, err := out["label"].Strings()
			if err != nil {
				t.Fatal(err)
			}
			index, _ := out["index"].Int32()
			wantLabels, wantIndex := s.top1(scores)
			if strings.Join(labels, ",") != strings.Join(wantLabels, ",") || len(index) != len(wantIndex) {
				t.Errorf("label %v index %v, want %v %v (top-1 of the scores returned)", labels, index, wantLabels, wantIndex)
			}
			for i := range wantIndex {
				if index[i] != wantIndex[i] {
					t.Errorf("index %v, want %v", index, wantIndex)
					break
				}
			}
			if res.Rows != int(rows) {
				t.Errorf("Rows %d, want %d", res.Rows, rows)
			}
		})
	}
}

// TestGraphInferForwardsUncorrected: a request that gets no correction
// goes to the ensemble itself, and its answer is Triton's, byte for byte,
// with the applied preference added; no step is called by the sidecar. A
// request for another version of the ensemble goes to that version.
func TestGraphInferForwardsUncorrected(t *testing.T) {
	e := newGraphEnv(t)
	set := e.mustBuild(t, e.graphConfig())
	m := set.Models["cls"]
	for _, req := range []pipeline.Request{
		withPreference(graphRequest("cls", true, graphImages, graphMasks), "none"),
		withPreference(graphRequest("cls", true, graphImages, graphMasks, "probs", "label"), "none"),
	} {
		req.Proto.Parameters = map[string]*tritonpb.InferParameter{"keep": stringParam("y"), control.KeyPreset: stringParam("even")}
		before := e.fake.TotalCalls()
		res, err := m.Infer(context.Background(), e.up, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.fake.TotalCalls() - before; got != 1 || e.fake.LastRequest("cls") == nil {
			t.Errorf("%d calls reached Triton, want 1, to the ensemble", got)
		}
		sent := e.fake.LastRequest("cls")
		if _, ok := sent.GetParameters()["keep"]; !ok || len(sent.GetParameters()) != 1 {
			t.Errorf("the ensemble got parameters %v, want keep only", sent.GetParameters())
		}
		want := e.fake.LastResponse("cls")
		got := proto.Clone(res.Response).(*tritonpb.ModelInferResponse)
		if p := got.GetParameters()[control.KeyPreference].GetStringParam(); p != "none" {
			t.Errorf("react-preference %q, want none", p)
		}
		delete(got.Parameters, control.KeyPreference)
		if len(got.Parameters) == 0 {
			got.Parameters = nil
		}
		if !proto.Equal(got, want) {
			t.Errorf("answer\n%v\nwant Triton's\n%v", got, want)
		}
	}
	// Another version of the ensemble (the fake serves only version 1):
	// Triton's answer, its error as it gave it.
	other := graphRequest("cls", true, graphImages, graphMasks)
	other.ModelVersion = "2"
	_, err := m.Infer(context.Background(), e.up, withPreference(other, "none"))
	if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != "Request for unknown model: 'cls' version 2 is not found" {
		t.Errorf("version 2: %v, want Triton's NOT_FOUND", err)
	}
}

// TestGraphInferConcurrentSteps: steps that do not depend on each other
// (the two heads) are in flight at the same time.
func TestGraphInferConcurrentSteps(t *testing.T) {
	e := newGraphEnv(t)
	m := e.mustBuild(t, e.graphConfig()).Models["cls"]
	releaseA, releaseB := e.fake.Hold("head_a"), e.fake.Hold("head_b")
	defer releaseA()
	defer releaseB()
	done := make(chan error, 1)
	go func() {
		_, err := m.Infer(context.Background(), e.up, withPreference(graphRequest("cls", true, graphImages, graphMasks), "a=1"))
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for e.fake.Calls("head_a") == 0 || e.fake.Calls("head_b") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("head_a and head_b not both called while each is held: %d and %d calls", e.fake.Calls("head_a"), e.fake.Calls("head_b"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e.fake.Calls("top1") != 0 || e.fake.Calls("softmax") != 0 {
		t.Error("a post-processing step ran before its head answered")
	}
	releaseA()
	releaseB()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestGraphInferStepError: a step that fails fails the request with its
// status code, naming the step; the other steps in flight are cancelled.
func TestGraphInferStepError(t *testing.T) {
	e := newGraphEnv(t)
	m := e.mustBuild(t, e.graphConfig()).Models["cls"]
	release := e.fake.Hold("head_a")
	defer release()
	// head_b fails once both heads' calls are in flight, so that head_a's
	// is there to be cancelled (on a loaded machine head_b could otherwise
	// fail before head_a's call is sent).
	releaseB := e.fake.Hold("head_b")
	defer releaseB()
	e.fake.Fail("head_b", status.Error(codes.ResourceExhausted, "out of memory"))
	done := make(chan error, 1)
	go func() {
		_, err := m.Infer(context.Background(), e.up, withPreference(graphRequest("cls", true, graphImages, graphMasks), "a=1"))
		done <- err
	}()
	inFlight := time.Now().Add(10 * time.Second)
	for (e.fake.Calls("head_a") == 0 || e.fake.Calls("head_b") == 0) && time.Now().Before(inFlight) {
		time.Sleep(time.Millisecond)
	}
	releaseB()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second): // half the calls' own timeout
		t.Fatal("Infer did not return after head_b failed: head_a's call was left to its timeout")
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), `model "cls": ensemble step 3 model "head_b": out of memory`) ||
		!strings.Contains(err.Error(), "out of memory") {
		t.Errorf("error %v, want RESOURCE_EXHAUSTED naming step 3 and Triton's message", err)
	}
	// Cancelled by the failure, not by the call's own timeout (10 s): the
	// fake sees the client's cancellation a moment after Infer returns.
	deadline := time.Now().Add(2 * time.Second)
	for e.fake.Cancelled("head_a") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if e.fake.Cancelled("head_a") != 1 {
		t.Error("head_a's call was not cancelled")
	}
	if e.fake.Calls("top1")+e.fake.Calls("softmax") != 0 {
		t.Error("post-processing ran after a failure")
	}
}

// TestGraphInferOutputsAndInputs: only the steps the requested outputs
// need run; an output's classification goes to the step that produces it;
// typed contents are read; the requests Triton would refuse are refused.
func TestGraphInferOutputsAndInputs(t *testing.T) {
	e := newGraphEnv(t)
	m := e.mustBuild(t, e.graphConfig()).Models["cls"]
	ctx := context.Background()

	// probs only: head_a and top1 are not called.
	req := graphRequest("cls", true, graphImages, graphMasks, "probs")
	req.Outputs[0].Parameters = map[string]*tritonpb.InferParameter{"classification": {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 1}}}
	res, err := m.Infer(ctx, e.up, withPreference(req, "b=1"))
	if err != nil {
		t.Fatal(err)
	}
	if e.fake.Calls("head_a")+e.fake.Calls("top1") != 0 || e.fake.Calls("softmax") != 1 {
		t.Errorf("calls: head_a %d, top1 %d, softmax %d; want 0, 0, 1", e.fake.Calls("head_a"), e.fake.Calls("top1"), e.fake.Calls("softmax"))
	}
	if outs := res.Response.GetOutputs(); len(outs) != 1 || outs[0].GetName() != "probs" {
		t.Errorf("outputs %v, want probs", outs)
	}
	if got := e.fake.LastRequest("softmax").GetOutputs(); len(got) != 1 || got[0].GetName() != "probs" ||
		got[0].GetParameters()["classification"].GetInt64Param() != 1 {
		t.Errorf("softmax was asked for %v, want probs with classification 1", got)
	}

	// Typed contents, as a gRPC client may send them.
	req = graphRequest("cls", true, graphImages, graphMasks, "scores_a")
	raw := req.RawInputContents
	req.RawInputContents = nil
	img, _ := (triton.Tensor{Datatype: "UINT8", Shape: req.Inputs[0].Shape, Raw: raw[0]}).Uint8()
	for _, v := range img {
		req.Inputs[0].Contents = appendUint(req.Inputs[0].Contents, uint32(v))
	}
	req.Inputs[1].Contents = &tritonpb.InferTensorContents{Int64Contents: graphMasks}
	res, err = m.Infer(ctx, e.up, withPreference(req, "a=1"))
	if err != nil {
		t.Fatal(err)
	}
	want := graphSteps{e.sc}.compute(graphImages, graphMasks, e.sc.Reference(weights(1, 0, 0), e.sc.Beta, false))
	got, _ := decoded(t, res.Response)["scores_a"].FP32()
	closeTo(t, "scores_a from typed contents", got, want.scoresA, graphTol)

	for _, tt := range []struct {
		name string
		edit func(*tritonpb.ModelInferRequest)
		msg  string
	}{
		{"unknown output", func(r *tritonpb.ModelInferRequest) {
			r.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "emb"}}
		}, `unknown output "emb" (outputs: label, index, probs, scores_a)`},
		{"classification of a tensor another step reads", func(r *tritonpb.ModelInferRequest) {
			r.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "scores_a",
				Parameters: map[string]*tritonpb.InferParameter{"classification": {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 1}}}}}
		}, `output "scores_a": its parameters (classification) are not served with a correction when another step reads it`},
		{"an output twice", func(r *tritonpb.ModelInferRequest) {
			r.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "probs"}, {Name: "probs"}}
		}, `output "probs" requested more than once`},
		{"output in shared memory", func(r *tritonpb.ModelInferRequest) {
			r.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "probs",
				Parameters: map[string]*tritonpb.InferParameter{"shared_memory_region": stringParam("r")}}}
		}, "outputs in shared memory are not served with a correction"},
		{"input of another datatype", func(r *tritonpb.ModelInferRequest) { r.Inputs[1].Datatype = "INT32" },
			`input "mask": datatype INT32, the model takes INT64`},
		{"missing input", func(r *tritonpb.ModelInferRequest) {
			// image, which is required (mask is optional: TestGraphInferOptionalInput).
			r.Inputs, r.RawInputContents = r.Inputs[1:], r.RawInputContents[1:]
		}, `missing input "image"`},
		{"batch too large", func(r *tritonpb.ModelInferRequest) {
			*r = *graphRequest("cls", true, make([]uint8, 27), make([]int64, 27))
		}, "batch size 9 exceeds the model's maximum of 8"},
		{"input in shared memory", func(r *tritonpb.ModelInferRequest) {
			r.RawInputContents = nil
			r.Inputs[0].Parameters = map[string]*tritonpb.InferParameter{"shared_memory_region": stringParam("r")}
			r.Inputs[1].Parameters = map[string]*tritonpb.InferParameter{"shared_memory_region": stringParam("r")}
		}, `input "image": inputs in shared memory are not served with a correction`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := graphRequest("cls", true, graphImages, graphMasks)
			tt.edit(req)
			before := e.fake.TotalCalls()
			_, err := m.Infer(ctx, e.up, withPreference(req, "a=1"))
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v, want INVALID_ARGUMENT with %q", err, tt.msg)
			}
			if e.fake.TotalCalls() != before {
				t.Error("a refused request reached Triton")
			}
		})
	}
}

// appendUint appends a value to typed UINT8 contents (uint_contents).
func appendUint(c *tritonpb.InferTensorContents, v uint32) *tritonpb.InferTensorContents {
	if c == nil {
		c = &tritonpb.InferTensorContents{}
	}
	c.UintContents = append(c.UintContents, v)
	return c
}

// TestGraphInferConcurrentRequests: requests with different preferences at
// once each get their own correction (the pooled buffers are not shared).
func TestGraphInferConcurrentRequests(t *testing.T) {
	e := newGraphEnv(t)
	m := e.mustBuild(t, e.graphConfig()).Models["cls"]
	s := graphSteps{e.sc}
	prefs := map[string][]float64{"a=1": weights(1, 0, 0), "b=1": weights(0, 1, 0), "c=1": weights(0, 0, 1)}
	var wg sync.WaitGroup
	for pref, wts := range prefs {
		want := s.compute(graphImages, graphMasks, e.sc.Reference(wts, e.sc.Beta, false))
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := m.Infer(context.Background(), e.up, withPreference(graphRequest("cls", true, graphImages, graphMasks, "probs", "scores_a"), pref))
				if err != nil {
					t.Error(err)
					return
				}
				out := decoded(t, res.Response)
				got, _ := out["scores_a"].FP32()
				closeTo(t, pref+" scores_a", got, want.scoresA, graphTol)
			}()
		}
	}
	wg.Wait()
}

// TestGraphInferEdges: what the graph form promises beyond
// the zoo's ensemble (each of these a mutant once survived).
func TestGraphInferEdges(t *testing.T) {
	ctx := context.Background()

	// The corrected tensor is also an output of the ensemble: the answer
	// owns its bytes, which the next request's correction (in the same
	// pooled buffers) does not change.
	t.Run("corrected tensor returned", func(t *testing.T) {
		e := newGraphEnv(t)
		n := batched
		tt := func(name, dt string, dims ...int64) faketriton.Tensor {
			return faketriton.Tensor{Name: name, Datatype: dt, Shape: n.shape(dims...)}
		}
		e.fake.Put(&faketriton.Model{Name: "cls_emb", MaxBatchSize: n.maxBatch(),
			Inputs:  []faketriton.Tensor{tt("image", "UINT8", 3), tt("mask", "INT64", 3)},
			Outputs: []faketriton.Tensor{tt("emb", "FP16", 4), tt("scores_a", "FP32", 2)},
			Steps: []*tritonpb.ModelEnsembling_Step{
				faketriton.Step(n.pre, map[string]string{"image": "image"}, map[string]string{"pixels": "pixels"}),
				faketriton.Step(n.backbone, map[string]string{"x": "pixels", "mask": "mask"}, map[string]string{"feature": "emb"}),
				faketriton.Step(n.headA, map[string]string{"feature": "emb"}, map[string]string{"logits": "scores_a"}),
			}})
		cfg := e.config()
		cfg.Models = []config.Model{{Name: "cls_emb", Components: "zoo", Correct: "emb"}}
		m := e.mustBuild(t, cfg).Models["cls_emb"]
		first, err := m.Infer(ctx, e.up, withPreference(graphRequest("cls_emb", true, graphImages, graphMasks, "emb"), "a=1"))
		if err != nil {
			t.Fatal(err)
		}
		kept := append([]byte(nil), first.Response.GetRawOutputContents()[0]...)
		if _, err := m.Infer(ctx, e.up, withPreference(graphRequest("cls_emb", true, graphImages, graphMasks, "emb"), "b=1")); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Response.GetRawOutputContents()[0], kept) {
			t.Error("the first answer's emb changed with the second request's correction: it aliases the pooled buffers")
		}
	})

	// Triton's ensembles answer with the request's sequence parameters.
	t.Run("sequence parameters", func(t *testing.T) {
		e := newGraphEnv(t)
		m := e.mustBuild(t, e.graphConfig()).Models["cls"]
		req := graphRequest("cls", true, graphImages, graphMasks)
		req.Parameters = map[string]*tritonpb.InferParameter{
			"sequence_id":    {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 7}},
			"sequence_start": {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: true}},
		}
		res, err := m.Infer(ctx, e.up, withPreference(req, "a=1"))
		if err != nil {
			t.Fatal(err)
		}
		p := res.Response.GetParameters()
		if p["sequence_id"].GetInt64Param() != 7 || !p["sequence_start"].GetBoolParam() || p["sequence_end"] == nil || p["sequence_end"].GetBoolParam() {
			t.Errorf("sequence parameters %v, want id 7, start true, end false", p)
		}
	})

	// The model's version is the highest the ensemble serves.
	t.Run("latest version", func(t *testing.T) {
		e := newGraphEnv(t)
		models := graphModels(e.sc, batched)
		ens := models[len(models)-1]
		ens.Versions = []string{"1", "3", "2"}
		e.fake.Put(ens)
		if v := e.mustBuild(t, e.graphConfig()).Models["cls"].Version(); v != "3" {
			t.Errorf("Version %q, want 3", v)
		}
	})

	// limits.max_batch_size lowers the ensemble's own maximum.
	t.Run("limits.max_batch_size", func(t *testing.T) {
		e := newGraphEnv(t)
		cfg := e.graphConfig()
		cfg.Limits.MaxBatchSize = 2
		m := e.mustBuild(t, cfg).Models["cls"]
		_, err := m.Infer(ctx, e.up, withPreference(graphRequest("cls", true, graphImages[:9], graphMasks[:9]), "a=1"))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "maximum of 2") {
			t.Errorf("a batch of 3 under limits.max_batch_size 2: %v", err)
		}
	})

	// A request to an ensemble that does not batch is one row, whatever
	// its first dimension.
	t.Run("rows of an unbatched ensemble", func(t *testing.T) {
		e := newGraphEnv(t)
		m := e.mustBuild(t, e.graphConfig()).Models["cls_nb"]
		for _, pref := range []string{"none", "a=1"} {
			res, err := m.Infer(ctx, e.up, withPreference(graphRequest("cls_nb", false, graphImages[9:12], graphMasks[9:12]), pref))
			if err != nil {
				t.Fatal(err)
			}
			if res.Rows != 1 {
				t.Errorf("preference %s: Rows %d, want 1", pref, res.Rows)
			}
		}
	})

	// A producing step whose output changed datatype since the build is
	// an INTERNAL error that says to reload, not a correction in the
	// wrong type.
	t.Run("producer changed", func(t *testing.T) {
		e := newGraphEnv(t)
		m := e.mustBuild(t, e.graphConfig()).Models["cls"]
		in := []faketriton.Tensor{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}, {Name: "mask", Datatype: "INT64", Shape: []int64{-1, 3}}}
		e.fake.Put(faketriton.Func("backbone", 8, in, []faketriton.Tensor{{Name: "feature", Datatype: "FP32", Shape: []int64{-1, 4}}},
			func(in map[string]triton.Tensor) (map[string]triton.Tensor, error) {
				rows := in["x"].Shape[0]
				return map[string]triton.Tensor{"feature": triton.NewFP32("feature", []int64{rows, 4}, make([]float32, rows*4))}, nil
			}))
		_, err := m.Infer(ctx, e.up, withPreference(graphRequest("cls", true, graphImages, graphMasks), "a=1"))
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "not FP16 as at load time: reload the sidecar") {
			t.Errorf("error %v, want INTERNAL saying the datatype changed", err)
		}
	})
}

// TestGraphInferOptionalInput: an ensemble input its configuration marks
// optional (the graph's mask) may be left out of a corrected request, as
// Triton allows; the graph then runs without it (its backbone reads no
// mask as all zeros) and the correction applies as usual.
func TestGraphInferOptionalInput(t *testing.T) {
	e := newGraphEnv(t)
	m := e.mustBuild(t, e.graphConfig()).Models["cls"]
	s := graphSteps{e.sc}
	req := graphRequest("cls", true, graphImages, graphMasks)
	req.Inputs, req.RawInputContents = req.Inputs[:1], req.RawInputContents[:1] // image only
	res, err := m.Infer(context.Background(), e.up, withPreference(req, "a=1,b=3"))
	if err != nil {
		t.Fatalf("a request without the optional mask: %v", err)
	}
	for _, in := range e.fake.LastRequest("backbone").GetInputs() {
		if in.GetName() == "mask" {
			t.Error("the backbone was sent a mask the request did not have")
		}
	}
	want := s.compute(graphImages, make([]int64, len(graphMasks)), e.sc.Reference(weights(0.25, 0.75, 0), e.sc.Beta, false))
	out := decoded(t, res.Response)
	scores, _ := out["scores_a"].FP32()
	closeTo(t, "scores_a", scores, want.scoresA, graphTol)
}
