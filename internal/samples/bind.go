package samples

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mergectl/react-triton/triton"
)

// Spec is one tensor of a source's samples.
type Spec struct {
	// Name is the model input it goes to; "" for the only tensor of a
	// source, which goes to a model's only input.
	Name string
	// Datatype is its Triton datatype as read: the .npy's dtype's, FP32
	// for images decoded here, BYTES for encoded ones.
	Datatype string
	// Shape is one sample's shape, without the batch dimension.
	Shape []int64
	// Images says whether it holds images of a folder: "decoded" in this
	// process, or "encoded" files as they are; "" for an array.
	Images string
}

// Input is one input of a model, from its metadata.
type Input struct {
	Name, Datatype string
	// Shape is one sample's shape, without the batch dimension; -1 is a
	// variable dimension.
	Shape []int64
}

// Floats are the datatypes float32 samples are converted to for a model
// input of that datatype.
var Floats = map[string]bool{triton.FP32: true, triton.FP16: true, triton.BF16: true, triton.FP64: true}

// Binding says which tensor of a source's samples each input of a model
// takes, and whether float32 samples are converted to the input's
// datatype.
type Binding []Bound

// Bound is one input's part of a Binding.
type Bound struct {
	Input   Input
	Spec    int  // index in the source's specs
	Convert bool // float32 or float64 samples, encoded as the input's floating-point datatype
}

// Bind matches a source's tensors (specs, read from source, named in
// messages) with a model's inputs: a source of one unnamed tensor feeds a
// model of one input; else every input needs a tensor of its name and
// every tensor an input. Each tensor must hold the input's datatype
// (float32 and float64 samples may feed any floating-point input, through
// float32) and take its shape. Its errors say what to change, without naming the model.
func Bind(inputs []Input, specs []Spec, source string) (Binding, error) {
	b := make(Binding, len(inputs))
	if len(specs) == 1 && specs[0].Name == "" {
		if len(inputs) != 1 {
			return nil, fmt.Errorf("has %d inputs (%s): give each task's samples as <task>%s, one array per input, named as the input",
				len(inputs), InputNames(inputs), NpzSuffix)
		}
		b[0].Input, b[0].Spec = inputs[0], 0
	} else {
		byName := map[string]int{}
		for i, s := range specs {
			byName[s.Name] = i
		}
		var missing []string
		for i, in := range inputs {
			k, ok := byName[in.Name]
			if !ok {
				missing = append(missing, fmt.Sprintf("%q", in.Name))
				continue
			}
			b[i].Input, b[i].Spec = in, k
			delete(byName, in.Name)
		}
		if len(missing) > 0 || len(byName) > 0 {
			var extra []string
			for name := range byName {
				extra = append(extra, fmt.Sprintf("%q", name))
			}
			slices.Sort(extra)
			return nil, fmt.Errorf("inputs %s: %s lacks arrays %s and has arrays %s that are no input of it",
				InputNames(inputs), source, orNone(missing), orNone(extra))
		}
	}
	for i := range b {
		in, s := b[i].Input, specs[b[i].Spec]
		switch {
		case s.Datatype == in.Datatype:
		case (s.Datatype == triton.FP32 || s.Datatype == triton.FP64) && Floats[in.Datatype]:
			b[i].Convert = true
		case in.Datatype == triton.BYTES && s.Images == "decoded":
			return nil, fmt.Errorf("input %q has datatype BYTES: it takes encoded images: send it image files with images.decode: triton (--image-decode triton)", in.Name)
		case s.Images == "encoded":
			return nil, fmt.Errorf("input %q has datatype %s: with images.decode: triton the files are sent encoded, so want BYTES (a model that decodes images, such as an ensemble of a preprocessing model and this one)", in.Name, in.Datatype)
		default:
			return nil, fmt.Errorf("input %q has datatype %s, but %s holds %s: save it as %s", in.Name, in.Datatype, describeSpec(source, s), s.Datatype, NumpyNames[in.Datatype])
		}
		ok := len(s.Shape) == len(in.Shape)
		for j := 0; ok && j < len(s.Shape); j++ {
			ok = in.Shape[j] == -1 || in.Shape[j] == s.Shape[j]
		}
		if !ok {
			return nil, fmt.Errorf("input %q takes samples of shape %s, not %s (%s)", in.Name, triton.FormatShape(in.Shape), triton.FormatShape(s.Shape), describeSpec(source, s))
		}
	}
	return b, nil
}

// Tensors are the request's input tensors for n samples whose tensors'
// raw contents are raw, in the order of specs.
func (b Binding) Tensors(specs []Spec, raw [][]byte, n int) ([]triton.Tensor, error) {
	out := make([]triton.Tensor, len(b))
	for i, in := range b {
		data := raw[in.Spec]
		if in.Convert {
			v, err := triton.DecodeFloat32(nil, specs[in.Spec].Datatype, data)
			if err == nil {
				data, err = triton.EncodeFloat32(nil, in.Input.Datatype, v)
			}
			if err != nil {
				return nil, fmt.Errorf("input %q: %w", in.Input.Name, err)
			}
		}
		shape := append([]int64{int64(n)}, specs[in.Spec].Shape...)
		out[i] = triton.Tensor{Name: in.Input.Name, Datatype: in.Input.Datatype, Shape: shape, Raw: data}
	}
	return out, nil
}

// describeSpec names a source's tensor for messages.
func describeSpec(source string, s Spec) string {
	if s.Name == "" {
		return source
	}
	return fmt.Sprintf("%s array %q", source, s.Name)
}

// InputNames lists a model's inputs for messages: "ids" INT64 [-1 3], ...
func InputNames(ins []Input) string {
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = fmt.Sprintf("%q %s %s", in.Name, in.Datatype, triton.FormatShape(append([]int64{-1}, in.Shape...)))
	}
	return strings.Join(names, ", ")
}

func orNone(v []string) string {
	if len(v) == 0 {
		return "none"
	}
	return strings.Join(v, ", ")
}
