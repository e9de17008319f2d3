package pipeline_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// The graph-form tests run an ensemble with conventions unlike the
// scenario's explicit models, on the same scenario (so that W_p is known):
//
//	image UINT8 ─► pre ─► pixels FP32 ─┐
//	mask INT64 ───────────────────────┴► backbone ─► emb FP16 (D=4, corrected) ─┬► head_a ─► scores_a ─► top1 ─► label BYTES, index INT32
//	                                                                             └► head_b ─► logits_b ─► softmax ─► probs FP32
//
// Outputs: label, index, probs and scores_a. "cls" batches (max_batch_size
// 8); "cls_nb" is the same graph of models that do not batch
// (max_batch_size 0), on one sample.

// graphNames names the fake models of one variant of the graph.
type graphNames struct {
	ensemble, pre, backbone, headA, headB, top1, softmax string
	batch                                                bool
}

var (
	batched   = graphNames{"cls", "pre", "backbone", "head_a", "head_b", "top1", "softmax", true}
	unbatched = graphNames{"cls_nb", "pre_nb", "backbone_nb", "head_a_nb", "head_b_nb", "top1_nb", "softmax_nb", false}
)

// shape returns dims with the batch dimension (-1) first when the graph
// batches.
func (n graphNames) shape(dims ...int64) []int64 {
	if n.batch {
		return append([]int64{-1}, dims...)
	}
	return dims
}

// maxBatch is the graph's max_batch_size.
func (n graphNames) maxBatch() int32 {
	if n.batch {
		return faketriton.MaxBatch
	}
	return 0
}

// labels are top1's class names.
var labels = []string{"cat", "dog"}

// graphSteps holds the computation of each step, in float64 as the fake
// does it, so that the test computes the graph on its own.
type graphSteps struct {
	sc *faketriton.Scenario
}

// pre scales an image to [0, 1] in float32.
func (graphSteps) pre(image []uint8) []float32 {
	out := make([]float32, len(image))
	for i, v := range image {
		out[i] = float32(v) / 255
	}
	return out
}

// backbone is the scenario's backbone on x·mask, rounded to FP16.
func (s graphSteps) backbone(x []float32, mask []int64) []float64 {
	v := make([]float64, len(x))
	for i := range x {
		v[i] = float64(x[i]) * float64(mask[i])
	}
	return s.sc.Feature("FP16", v)
}

// head is a task's head on z, rounded to float32.
func (s graphSteps) head(task string, z []float64) []float32 {
	y := faketriton.Apply(s.sc.Head(task), z)
	out := make([]float32, len(y))
	for i, v := range y {
		out[i] = float32(v)
	}
	return out
}

// top1 returns each row's argmax and its label.
func (graphSteps) top1(scores []float32) ([]string, []int32) {
	var names []string
	var idx []int32
	for r := 0; r+1 < len(scores); r += 2 {
		i := int32(0)
		if scores[r+1] > scores[r] {
			i = 1
		}
		names, idx = append(names, labels[i]), append(idx, i)
	}
	return names, idx
}

// softmax returns each row's softmax, in float32.
func (graphSteps) softmax(logits []float32) []float32 {
	out := make([]float32, len(logits))
	for r := 0; r+1 < len(logits); r += 2 {
		a, b := float64(logits[r]), float64(logits[r+1])
		m := math.Max(a, b)
		ea, eb := math.Exp(a-m), math.Exp(b-m)
		out[r], out[r+1] = float32(ea/(ea+eb)), float32(eb/(ea+eb))
	}
	return out
}

// graphOutputs is what the graph returns, decoded.
type graphOutputs struct {
	label          []string
	index          []int32
	probs, scoresA []float32
	emb            []float64 // the corrected tensor, as the heads receive it
}

// compute runs the graph on its own in float64, correcting emb with w
// (nil: no correction); the corrected emb is rounded to FP16, as it
// travels.
func (s graphSteps) compute(image []uint8, mask []int64, w [][]float64) graphOutputs {
	z := s.backbone(s.pre(image), mask)
	if w != nil {
		d := s.sc.D
		zhat := make([]float64, len(z))
		for r := 0; r < len(z)/d; r++ {
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					zhat[r*d+i] += w[i][j] * z[r*d+j]
				}
				zhat[r*d+i] = faketriton.Round("FP16", zhat[r*d+i])
			}
		}
		z = zhat
	}
	var out graphOutputs
	out.emb = z
	out.scoresA = s.head("a", z)
	out.label, out.index = s.top1(out.scoresA)
	out.probs = s.softmax(s.head("b", z))
	return out
}

// graphModels returns the fake models of one variant of the graph: the
// steps, and the ensemble, which answers as Triton's would (the graph
// without correction).
func graphModels(sc *faketriton.Scenario, n graphNames) []*faketriton.Model {
	s := graphSteps{sc}
	mb := n.maxBatch()
	rows := func(shape []int64) int64 {
		if n.batch {
			return shape[0]
		}
		return 1
	}
	// out returns a shape of the graph's batching with rows rows.
	out := func(rows int64, dims ...int64) []int64 {
		if n.batch {
			return append([]int64{rows}, dims...)
		}
		return dims
	}
	t := func(name, dt string, dims ...int64) faketriton.Tensor {
		return faketriton.Tensor{Name: name, Datatype: dt, Shape: n.shape(dims...)}
	}
	head := func(name, task string) *faketriton.Model {
		return faketriton.Func(name, mb, []faketriton.Tensor{t("feature", "FP16", 4)}, []faketriton.Tensor{t("logits", "FP32", 2)},
			func(in map[string]triton.Tensor) (map[string]triton.Tensor, error) {
				z, err := in["feature"].FP16()
				if err != nil {
					return nil, err
				}
				zz := make([]float64, len(z))
				for i, v := range z {
					zz[i] = float64(v)
				}
				return map[string]triton.Tensor{"logits": triton.NewFP32("logits", out(rows(in["feature"].Shape), 2), s.head(task, zz))}, nil
			})
	}
	pre := faketriton.Func(n.pre, mb, []faketriton.Tensor{t("image", "UINT8", 3)}, []faketriton.Tensor{t("pixels", "FP32", 3)},
		func(in map[string]triton.Tensor) (map[string]triton.Tensor, error) {
			v, err := in["image"].Uint8()
			if err != nil {
				return nil, err
			}
			return map[string]triton.Tensor{"pixels": triton.NewFP32("pixels", in["image"].Shape, s.pre(v))}, nil
		})
	// mask is optional: without it, no position is masked (zeros).
	optionalMask := t("mask", "INT64", 3)
	optionalMask.Optional = true
	maskOf := func(in map[string]triton.Tensor, n int) ([]int64, error) {
		m, ok := in["mask"]
		if !ok {
			return make([]int64, n), nil
		}
		return m.Int64()
	}
	backbone := faketriton.Func(n.backbone, mb, []faketriton.Tensor{t("x", "FP32", 3), optionalMask}, []faketriton.Tensor{t("feature", "FP16", 4)},
		func(in map[string]triton.Tensor) (map[string]triton.Tensor, error) {
			x, err := in["x"].FP32()
			if err != nil {
				return nil, err
			}
			mask, err := maskOf(in, len(x))
			if err != nil {
				return nil, err
			}
			if len(mask) != len(x) {
				return nil, fmt.Errorf("x has %d values, mask %d", len(x), len(mask))
			}
			z := s.backbone(x, mask)
			f := make([]float32, len(z))
			for i, v := range z {
				f[i] = float32(v)
			}
			return map[string]triton.Tensor{"feature": triton.NewFP16("feature", out(rows(in["x"].Shape), 4), f)}, nil
		})
	top1 := faketriton.Func(n.top1, mb, []faketriton.Tensor{t("scores", "FP32", 2)}, []faketriton.Tensor{t("label", "BYTES", 1), t("index", "INT32", 1)},
		func(in map[string]triton.Tensor) (map[string]triton.Tensor, error) {
			v, err := in["scores"].FP32()
			if err != nil {
				return nil, err
			}
			names, idx := s.top1(v)
			r := rows(in["scores"].Shape)
			return map[string]triton.Tensor{
				"label": triton.NewStrings("label", out(r, 1), names),
				"index": triton.NewInt32("index", out(r, 1), idx),
			}, nil
		})
	softmax := faketriton.Func(n.softmax, mb, []faketriton.Tensor{t("logits", "FP32", 2)}, []faketriton.Tensor{t("probs", "FP32", 2)},
		func(in map[string]triton.Tensor) (map[string]triton.Tensor, error) {
			v, err := in["logits"].FP32()
			if err != nil {
				return nil, err
			}
			return map[string]triton.Tensor{"probs": triton.NewFP32("probs", in["logits"].Shape, s.softmax(v))}, nil
		})
	ensembleOutputs := []faketriton.Tensor{t("label", "BYTES", 1), t("index", "INT32", 1), t("probs", "FP32", 2), t("scores_a", "FP32", 2)}
	ensemble := faketriton.Func(n.ensemble, mb, []faketriton.Tensor{t("image", "UINT8", 3), optionalMask}, ensembleOutputs,
		func(in map[string]triton.Tensor) (map[string]triton.Tensor, error) {
			image, err := in["image"].Uint8()
			if err != nil {
				return nil, err
			}
			mask, err := maskOf(in, len(image))
			if err != nil {
				return nil, err
			}
			g := s.compute(image, mask, nil)
			r := rows(in["image"].Shape)
			return map[string]triton.Tensor{
				"label":    triton.NewStrings("label", out(r, 1), g.label),
				"index":    triton.NewInt32("index", out(r, 1), g.index),
				"probs":    triton.NewFP32("probs", out(r, 2), g.probs),
				"scores_a": triton.NewFP32("scores_a", out(r, 2), g.scoresA),
			}, nil
		})
	ensemble.Steps = []*tritonpb.ModelEnsembling_Step{
		faketriton.Step(n.pre, map[string]string{"image": "image"}, map[string]string{"pixels": "pixels"}),
		faketriton.Step(n.backbone, map[string]string{"x": "pixels", "mask": "mask"}, map[string]string{"feature": "emb"}),
		faketriton.Step(n.headA, map[string]string{"feature": "emb"}, map[string]string{"logits": "scores_a"}),
		faketriton.Step(n.headB, map[string]string{"feature": "emb"}, map[string]string{"logits": "logits_b"}),
		faketriton.Step(n.top1, map[string]string{"scores": "scores_a"}, map[string]string{"label": "label", "index": "index"}),
		faketriton.Step(n.softmax, map[string]string{"logits": "logits_b"}, map[string]string{"probs": "probs"}),
	}
	return []*faketriton.Model{pre, backbone, head(n.headA, "a"), head(n.headB, "b"), top1, softmax, ensemble}
}

// newGraphEnv starts a fake Triton with both variants of the graph (and
// the scenario's explicit models) and writes the components file, whose
// recorded backbone is "backbone", output "feature".
func newGraphEnv(t *testing.T) *env {
	t.Helper()
	sc := faketriton.NewScenario(7, 4, tasks...)
	models := append(scenarioModels(sc, "FP32", "FP32")[1:], graphModels(sc, batched)...)
	return newEnv(t, append(models, graphModels(sc, unbatched)...)...)
}

// graphConfig returns the standard configuration with the graph-form
// models "cls" and "cls_nb", correcting "emb"; the latter's backbone is a
// variant of the one the components were calibrated on.
func (e *env) graphConfig() *config.Config {
	cfg := e.config()
	cfg.Models = []config.Model{
		{Name: "cls", Components: "zoo", Correct: "emb"},
		{Name: "cls_nb", Components: "zoo", Correct: "emb", VariantOf: "backbone"},
	}
	return cfg
}

// graphRequest returns a request for the graph on images and masks (rows
// of 3), raw.
func graphRequest(model string, batch bool, image []uint8, mask []int64, outputs ...string) *tritonpb.ModelInferRequest {
	rows := int64(len(image) / 3)
	shape := []int64{3}
	if batch {
		shape = []int64{rows, 3}
	}
	img := triton.NewUint8("image", shape, image)
	m := triton.NewInt64("mask", shape, mask)
	req := &tritonpb.ModelInferRequest{
		ModelName: model,
		Id:        "g-1",
		Inputs: []*tritonpb.ModelInferRequest_InferInputTensor{
			{Name: "image", Datatype: "UINT8", Shape: shape},
			{Name: "mask", Datatype: "INT64", Shape: shape},
		},
		RawInputContents: [][]byte{img.Raw, m.Raw},
	}
	for _, o := range outputs {
		req.Outputs = append(req.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: o})
	}
	return req
}

// graphImages and graphMasks are the test batch of the graph: 4 rows.
var (
	graphImages = []uint8{255, 0, 0, 0, 255, 0, 0, 0, 255, 128, 64, 200}
	graphMasks  = []int64{1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0}
)
