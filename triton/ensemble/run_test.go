package ensemble

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// fakeCall answers each step with one output per requested output, whose
// data is the step's model name followed by the data of its inputs in
// order: the test reads from the data which tensors reached which step.
// It records the calls in order.
type fakeCall struct {
	mu    sync.Mutex
	calls []string
	reqs  map[string]*tritonpb.ModelInferRequest
	hold  map[string]chan struct{} // a call of this model waits for the channel to close
	fail  map[string]error
}

func (f *fakeCall) call(ctx context.Context, _ int, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req.GetModelName())
	if f.reqs == nil {
		f.reqs = map[string]*tritonpb.ModelInferRequest{}
	}
	f.reqs[req.GetModelName()] = req
	hold, fail := f.hold[req.GetModelName()], f.fail[req.GetModelName()]
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	data := req.GetModelName()
	for _, raw := range req.GetRawInputContents() {
		data += "(" + string(raw) + ")"
	}
	resp := &tritonpb.ModelInferResponse{}
	for _, o := range req.GetOutputs() {
		resp.Outputs = append(resp.Outputs, &tritonpb.ModelInferResponse_InferOutputTensor{Name: o.GetName(), Datatype: "UINT8", Shape: []int64{int64(len(data))}})
		resp.RawOutputContents = append(resp.RawOutputContents, []byte(data))
	}
	return resp, nil
}

// step is an ensemble step of model, version -1.
func step(model string, in, out map[string]string) *tritonpb.ModelEnsembling_Step {
	return &tritonpb.ModelEnsembling_Step{ModelName: model, ModelVersion: -1, InputMap: in, OutputMap: out}
}

// pipeline is pre → backbone (two inputs) → two heads, the second
// followed by post.
func pipeline(t *testing.T) *Graph {
	t.Helper()
	cfg := &tritonpb.ModelConfig{Name: "ens", Platform: "ensemble",
		Input:  []*tritonpb.ModelInput{{Name: "image"}, {Name: "mask"}},
		Output: []*tritonpb.ModelOutput{{Name: "a"}, {Name: "b_label"}},
		SchedulingChoice: &tritonpb.ModelConfig_EnsembleScheduling{EnsembleScheduling: &tritonpb.ModelEnsembling{Step: []*tritonpb.ModelEnsembling_Step{
			step("pre", map[string]string{"image": "image"}, map[string]string{"x": "pixels"}),
			step("backbone", map[string]string{"x": "pixels", "mask": "mask"}, map[string]string{"feature": "emb"}),
			step("head_a", map[string]string{"in": "emb"}, map[string]string{"out": "a"}),
			step("head_b", map[string]string{"in": "emb"}, map[string]string{"out": "b"}),
			step("post", map[string]string{"scores": "b"}, map[string]string{"label": "b_label"}),
		}}}}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNeeded(t *testing.T) {
	g := pipeline(t)
	for _, tt := range []struct {
		wanted []string
		need   []bool
	}{
		{[]string{"a"}, []bool{true, true, true, false, false}},
		{[]string{"b_label"}, []bool{true, true, false, true, true}},
		{[]string{"a", "b_label"}, []bool{true, true, true, true, true}},
		{[]string{"pixels"}, []bool{true, false, false, false, false}},
		{[]string{"image"}, []bool{false, false, false, false, false}},
	} {
		if got := g.Needed(tt.wanted); !slices.Equal(got, tt.need) {
			t.Errorf("Needed(%v) = %v, want %v", tt.wanted, got, tt.need)
		}
	}
}

// bytesTensor is a UINT8 tensor of s.
func bytesTensor(s string) Tensor {
	return Tensor{Datatype: "UINT8", Shape: []int64{int64(len(s))}, Raw: []byte(s)}
}

// TestRun: the steps run in dependency order with the tensors they read,
// only those the outputs need; the hooked tensor passes through the hook
// before its readers get it.
func TestRun(t *testing.T) {
	g := pipeline(t)
	f := &fakeCall{}
	r := &Run{Graph: g, ID: "r1", Parameters: map[string]*tritonpb.InferParameter{"p": {}},
		Inputs:  map[string]Tensor{"image": bytesTensor("I"), "mask": bytesTensor("M")},
		Outputs: []Output{{Name: "b_label"}},
		Call:    f.call,
		Tensor:  "emb",
		Hook: func(step int, x Tensor) (Tensor, error) {
			if step != 1 {
				t.Errorf("Hook called for step %d", step)
			}
			return bytesTensor("W" + string(x.Raw)), nil
		},
	}
	out, err := r.Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// backbone's inputs are ordered by its own names: mask, then x.
	if got, want := string(out["b_label"].Raw), "post(head_b(Wbackbone(M)(pre(I))))"; got != want {
		t.Errorf("b_label = %q, want %q", got, want)
	}
	if !slices.Equal(f.calls, []string{"pre", "backbone", "head_b", "post"}) {
		t.Errorf("calls %v: head_a is not needed", f.calls)
	}
	req := f.reqs["backbone"]
	if req.GetId() != "r1" || len(req.GetParameters()) != 1 || len(req.GetOutputs()) != 1 || req.GetOutputs()[0].GetName() != "feature" {
		t.Errorf("backbone's request %v", req)
	}
	if names := []string{req.GetInputs()[0].GetName(), req.GetInputs()[1].GetName()}; !slices.Equal(names, []string{"mask", "x"}) {
		t.Errorf("backbone's inputs %v", names)
	}
}

// TestRunConcurrentAndErrors: steps that do not depend on each other are
// in flight together; the first failure ends the run, cancels the others
// and is returned; an input left out (optional) is left out of the
// steps' requests.
func TestRunConcurrentAndErrors(t *testing.T) {
	g := pipeline(t)
	f := &fakeCall{hold: map[string]chan struct{}{"head_a": make(chan struct{}), "head_b": make(chan struct{})}}
	r := &Run{Graph: g, Inputs: map[string]Tensor{"image": bytesTensor("I")}, Outputs: []Output{{Name: "a"}, {Name: "b_label"}}, Call: f.call}
	done := make(chan error, 1)
	go func() {
		_, err := r.Do(context.Background())
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		both := slices.Contains(f.calls, "head_a") && slices.Contains(f.calls, "head_b")
		f.mu.Unlock()
		if both {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the heads were not both in flight")
		}
		time.Sleep(time.Millisecond)
	}
	if n := len(f.reqs["backbone"].GetInputs()); n != 1 {
		t.Errorf("backbone got %d inputs, want x only (mask left out)", n)
	}
	close(f.hold["head_a"])
	close(f.hold["head_b"])
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	boom := errors.New("boom")
	f = &fakeCall{hold: map[string]chan struct{}{"head_a": make(chan struct{})}, fail: map[string]error{"head_b": boom}}
	r.Call = f.call
	if _, err := r.Do(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Do: %v, want head_b's error", err)
	}
	if slices.Contains(f.calls, "post") {
		t.Error("post ran after its head failed")
	}

	// An answer without an output the run needs.
	r.Call = func(ctx context.Context, i int, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
		return &tritonpb.ModelInferResponse{}, nil
	}
	if _, err := r.Do(context.Background()); err == nil || !strings.Contains(err.Error(), `ensemble step 0 ("pre"): the answer has no output "x"`) {
		t.Errorf("Do: %v", err)
	}
}
