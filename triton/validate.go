package triton

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// ValidateInputs checks a request's inputs and requested outputs against the
// model's metadata, before anything is sent: every input is known to the
// model and given once, every input the model needs is given, datatypes
// match, shapes match (a -1 in the metadata matches any size), and the raw
// data holds exactly the elements the shape says. optional reports whether
// the model may go without an input; nil means every input is required.
//
// The error is an INVALID_ARGUMENT status that names the model and tensor,
// e.g. `model "affine_fp32" input "INPUT0": shape [2 5] does not match [-1 4]`.
func ValidateInputs(meta *tritonpb.ModelMetadataResponse, model string, inputs []Tensor, outputs []string, optional func(input string) bool) error {
	want := make(map[string]*tritonpb.ModelMetadataResponse_TensorMetadata, len(meta.GetInputs()))
	for _, m := range meta.GetInputs() {
		want[m.GetName()] = m
	}
	seen := make(map[string]bool, len(inputs))
	for _, in := range inputs {
		m, ok := want[in.Name]
		if !ok {
			return invalidf("model %q input %q: the model has no such input (inputs: %s)", model, in.Name, tensorNames(meta.GetInputs()))
		}
		if seen[in.Name] {
			return invalidf("model %q input %q: given more than once", model, in.Name)
		}
		seen[in.Name] = true
		if err := checkTensor(m, in); err != nil {
			return invalidf("model %q input %q: %v", model, in.Name, err)
		}
	}
	for _, m := range meta.GetInputs() {
		if !seen[m.GetName()] && (optional == nil || !optional(m.GetName())) {
			return invalidf("model %q input %q: missing (the model needs %s %s)", model, m.GetName(), m.GetDatatype(), FormatShape(m.GetShape()))
		}
	}
	outs := make(map[string]bool, len(meta.GetOutputs()))
	for _, m := range meta.GetOutputs() {
		outs[m.GetName()] = true
	}
	for _, name := range outputs {
		if !outs[name] {
			return invalidf("model %q output %q: the model has no such output (outputs: %s)", model, name, tensorNames(meta.GetOutputs()))
		}
	}
	return nil
}

// checkTensor checks one input against its metadata.
func checkTensor(m *tritonpb.ModelMetadataResponse_TensorMetadata, t Tensor) error {
	if !KnownDatatype(t.Datatype) {
		return fmt.Errorf("unknown datatype %q", t.Datatype)
	}
	if t.Datatype != m.GetDatatype() {
		return fmt.Errorf("datatype %s does not match %s", t.Datatype, m.GetDatatype())
	}
	if !shapeMatches(t.Shape, m.GetShape()) {
		return fmt.Errorf("shape %s does not match %s", FormatShape(t.Shape), FormatShape(m.GetShape()))
	}
	n, err := NumElements(t.Shape)
	if err != nil {
		return err
	}
	return checkData(t, n)
}

// checkData checks that t's raw data holds exactly n elements.
func checkData(t Tensor, n int64) error { return CheckData(t.Datatype, t.Shape, n, t.Raw) }

// CheckData checks that raw holds exactly the n elements of datatype dt
// that shape describes (n is NumElements(shape)). For a fixed-size type it
// divides the data's length by the element size instead of multiplying n
// by it, so that no shape can make the comparison overflow; BYTES elements
// are counted without being split. The error says what was found and what
// the shape needs.
func CheckData(dt string, shape []int64, n int64, raw []byte) error {
	if size, ok := ElementSize(dt); ok {
		if len(raw)%size != 0 || int64(len(raw)/size) != n {
			return fmt.Errorf("%d bytes of data, but shape %s of %s needs %s", len(raw), FormatShape(shape), dt, byteCount(n, size))
		}
		return nil
	}
	if dt != BYTES {
		return fmt.Errorf("unknown datatype %q", dt)
	}
	got, err := CountBytes(raw)
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("%d BYTES elements, but shape %s needs %d", got, FormatShape(shape), n)
	}
	return nil
}

// byteCount formats n elements of size bytes, n·size, without overflowing.
func byteCount(n int64, size int) string {
	if n > math.MaxInt64/int64(size) {
		return fmt.Sprintf("%d×%d bytes", n, size)
	}
	return strconv.FormatInt(n*int64(size), 10)
}

// shapeMatches reports whether shape fits pattern, where -1 in pattern
// matches any size. Negative sizes in shape never match.
func shapeMatches(shape, pattern []int64) bool {
	if len(shape) != len(pattern) {
		return false
	}
	for i, d := range shape {
		if d < 0 || (pattern[i] >= 0 && d != pattern[i]) {
			return false
		}
	}
	return true
}

func tensorNames(ts []*tritonpb.ModelMetadataResponse_TensorMetadata) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.GetName()
	}
	return "[" + strings.Join(names, " ") + "]"
}
