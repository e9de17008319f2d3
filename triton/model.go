package triton

import (
	"fmt"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// TensorMetadata is one input or output of a model's metadata.
type TensorMetadata = tritonpb.ModelMetadataResponse_TensorMetadata

// DescribeModel names a model version in messages: `model "name"`, or
// `model "name" version 2`.
func DescribeModel(name, version string) string {
	if version == "" {
		return fmt.Sprintf("model %q", name)
	}
	return fmt.Sprintf("model %q version %s", name, version)
}

// FindTensor returns the tensor of ts called name, or nil.
func FindTensor(ts []*TensorMetadata, name string) *TensorMetadata {
	for _, t := range ts {
		if t.GetName() == name {
			return t
		}
	}
	return nil
}

// TensorList lists tensors' names for messages: "a, b", or "none".
func TensorList(ts []*TensorMetadata) string {
	if len(ts) == 0 {
		return "none"
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.GetName()
	}
	return strings.Join(names, ", ")
}
