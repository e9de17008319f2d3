package modelinfo

import (
	"fmt"
	"slices"

	"github.com/mergectl/react-triton/triton"
)

// NumFeatureDatatypes is the number of datatypes a feature may have.
const NumFeatureDatatypes = 3

// featureDatatypes are the datatypes a feature may have.
var featureDatatypes = [NumFeatureDatatypes]string{triton.FP32, triton.FP16, triton.BF16}

// FeatureDatatypes returns the datatypes a feature may have, FP32, FP16
// and BF16, in the order FeatureIndex numbers them (for tables indexed by
// datatype, such as a feature's encodings).
func FeatureDatatypes() [NumFeatureDatatypes]string { return featureDatatypes }

// FeatureIndex returns the position of dt in FeatureDatatypes, or -1 when
// a feature may not have it.
func FeatureIndex(dt string) int { return slices.Index(featureDatatypes[:], dt) }

// IsFeatureDatatype reports whether a feature, the tensor ReACT calibrates
// on and corrects, may have datatype dt: FP32, FP16 or BF16.
//
// It is the one rule of calibrate fit, calibrate eval, the sidecar and the
// react backend. FP64 is not one: W_p is applied in float32 and the
// corrected feature is encoded back in the feature's own datatype, which
// the sidecar and the backend do for these three only, so components
// calibrated on an FP64 feature could not be served on that model.
func IsFeatureDatatype(dt string) bool { return FeatureIndex(dt) >= 0 }

// CheckFeature checks that a model's input or output (kind) that holds a
// feature has one of the feature datatypes. The error names the model and
// the tensor.
func (m *Info) CheckFeature(kind string, t *triton.TensorMetadata) error {
	return CheckFeatureDatatype(fmt.Sprintf("%s %s %q", m, kind, t.GetName()), t.GetDatatype())
}

// CheckFeatureDatatype checks that the tensor what names, which holds a
// feature, has one of the feature datatypes: "WHAT is INT32; a feature must
// be FP32, FP16 or BF16".
func CheckFeatureDatatype(what, dt string) error {
	if IsFeatureDatatype(dt) {
		return nil
	}
	return fmt.Errorf("%s is %s; a feature must be FP32, FP16 or BF16", what, dt)
}

// FeatureSize returns D, the number of elements of one sample's feature in
// a batched output of shape [-1, ...]: the dimensions after the batch
// dimension must all be fixed.
func (m *Info) FeatureSize(t *triton.TensorMetadata) (int, error) {
	shape := t.GetShape()
	if len(shape) < 2 || shape[0] != -1 {
		return 0, fmt.Errorf("%s output %q has shape %s: want a batch dimension first, then the feature", m, t.GetName(), triton.FormatShape(shape))
	}
	d := 1
	for _, n := range shape[1:] {
		if n <= 0 {
			return 0, fmt.Errorf("%s output %q has shape %s: the feature must have a fixed size", m, t.GetName(), triton.FormatShape(shape))
		}
		d *= int(n)
	}
	return d, nil
}
