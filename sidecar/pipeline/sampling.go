package pipeline

import (
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// FeatureSource returns the backbone a model of the explicit form calls
// and the output it corrects (version "" for Triton's choice), so that
// live sampling knows whether the feature a request computed
// (Result.Feature) is the sampled backbone's. A model of the graph form
// has none.
func (m *Model) FeatureSource() (react.ModelRef, bool) {
	if m.graph != nil {
		return react.ModelRef{}, false
	}
	return react.ModelRef{Name: m.backbone.model, Version: m.backbone.version, Output: m.feature}, true
}

// BackboneInputs returns a request's inputs under the names the backbone
// takes, as the backbone was called: the inputs live sampling sends to a
// task's expert.
func (m *Model) BackboneInputs(in *tritonpb.ModelInferRequest) []*tritonpb.ModelInferRequest_InferInputTensor {
	return m.backboneInputs(in.GetInputs())
}
