package tritonhttp

import (
	"fmt"
	"strings"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// tensorSpec is one input of a request's JSON header, or one output of a
// response's, as read.
type tensorSpec struct {
	kind           string // "input" or "output", for messages
	name, datatype string
	shape          []int64
	params         map[string]*tritonpb.InferParameter
	n              int64 // elements of shape, once checked
	binSize        uint64
	raw            []byte
	dataAt         int // offset of "data" still to read, or -1
	seen           fieldSet
}

// fieldSet records which members of a JSON object were seen, to refuse
// duplicates: Triton's parser would read the first of two, ours the last,
// and a front must never check one thing and forward another.
type fieldSet uint16

const (
	fName fieldSet = 1 << iota
	fDatatype
	fShape
	fParameters
	fData
	fBinarySize
	fSharedMemory
	fID
	fInputs
	fOutputs
)

// see records f and fails if it was seen before.
func (fs *fieldSet) see(f fieldSet, key []byte) error {
	if *fs&f != 0 {
		return fmt.Errorf("duplicate key %q", key)
	}
	*fs |= f
	return nil
}

// readTensor reads tensor i, an input of a request or an output of a
// response (kind). needData tells whether it must have data, which an
// output in shared memory has not.
func (s *scanner) readTensor(kind string, i int, needData bool) (tensorSpec, error) {
	t := tensorSpec{kind: kind, dataAt: -1}
	fail := func(err error) (tensorSpec, error) {
		if t.seen&fName != 0 {
			return t, fmt.Errorf("%s %q: %w", kind, t.name, err)
		}
		return t, fmt.Errorf("%s %d: %w", kind, i, err)
	}
	if err := s.BeginObject(); err != nil {
		return fail(err)
	}
	for n := 0; ; {
		key, ok, err := s.Member(&n)
		if err != nil {
			return fail(err)
		}
		if !ok {
			break
		}
		switch string(key) {
		case "name":
			if err = t.seen.see(fName, key); err == nil {
				var v []byte
				if v, err = s.Str(); err == nil {
					t.name = string(v)
				} else {
					t.seen &^= fName
					err = fmt.Errorf("name: %w", err)
				}
			}
		case "datatype":
			if err = t.seen.see(fDatatype, key); err == nil {
				var v []byte
				if v, err = s.Str(); err == nil {
					t.datatype = internDatatype(v)
				} else {
					err = fmt.Errorf("datatype: %w", err)
				}
			}
		case "shape":
			if err = t.seen.see(fShape, key); err == nil {
				t.shape, err = s.shape()
			}
		case "parameters":
			if err = t.seen.see(fParameters, key); err == nil {
				t.params, err = s.params(t.param(s))
			}
		case "data":
			if err = t.seen.see(fData, key); err != nil {
				break
			}
			if t.seen&(fDatatype|fShape) == fDatatype|fShape {
				// The usual order: read the data in this pass.
				if err = t.checkTensor(); err == nil {
					if err = t.jsonData(); err == nil {
						t.raw, err = s.ReadData(t.datatype, t.n, t.shape)
					}
				}
				break
			}
			t.dataAt = s.Pos()
			err = s.SkipValue()
		default:
			err = s.SkipValue()
		}
		if err != nil {
			return fail(err)
		}
	}
	if err := t.check(needData); err != nil {
		return fail(err)
	}
	if t.dataAt >= 0 {
		d := &scanner{Scanner: s.Fork(t.dataAt), lim: s.lim}
		if err := t.jsonData(); err != nil {
			return fail(err)
		}
		var err error
		if t.raw, err = d.ReadData(t.datatype, t.n, t.shape); err != nil {
			return fail(err)
		}
	}
	return t, nil
}

// jsonData refuses JSON data of an input in FP16 or BF16, which have no
// JSON form, with Triton's own answer (400) and message.
func (t *tensorSpec) jsonData() error {
	if t.kind == "input" && (t.datatype == triton.FP16 || t.datatype == triton.BF16) {
		return &TritonError{Status: 400, Msg: fmt.Sprintf("receiving %s data via JSON is not supported. Please use the binary data format for input %s", t.datatype, t.name)}
	}
	return nil
}

// param returns the handler of the parameters of meaning to Triton: the
// binary and shared-memory ones.
func (t *tensorSpec) param(s *scanner) func(string) (*tritonpb.InferParameter, bool, error) {
	return func(key string) (*tritonpb.InferParameter, bool, error) {
		switch key {
		case "binary_data_size":
			v, err := s.Uint()
			t.binSize = v
			t.seen |= fBinarySize
			return nil, true, err
		case "shared_memory_region":
			t.seen |= fSharedMemory
			return stringParam(s)
		case "shared_memory_offset", "shared_memory_byte_size":
			p, err := s.uintParam()
			return p, true, err
		}
		return nil, false, nil
	}
}

// stringParam reads a parameter that must be a string.
func stringParam(s *scanner) (*tritonpb.InferParameter, bool, error) {
	if c, err := s.Peek(); err != nil || c != '"' {
		if err == nil {
			err = s.Errorf("want a string, got %s", jsontext.KindName(c))
		}
		return nil, true, err
	}
	p, err := s.param()
	return p, true, err
}

// check checks the tensor's name, datatype and shape, and that it has
// exactly one source of data, or none when needData is false.
func (t *tensorSpec) check(needData bool) error {
	if t.seen&fName == 0 {
		return fmt.Errorf(`no "name"`)
	}
	if err := t.checkTensor(); err != nil {
		return err
	}
	var set []string
	for _, f := range []struct {
		f    fieldSet
		name string
	}{{fData, `"data"`}, {fBinarySize, "parameter binary_data_size"}, {fSharedMemory, "parameter shared_memory_region"}} {
		if t.seen&f.f != 0 {
			set = append(set, f.name)
		}
	}
	switch len(set) {
	case 0:
		if !needData {
			return nil
		}
		return fmt.Errorf(`no data: give one of "data", parameter binary_data_size or parameter shared_memory_region`)
	case 1:
		return nil
	}
	return fmt.Errorf("%s: give only one", strings.Join(set, " and "))
}

// checkTensor checks the tensor's datatype and shape, and sets n.
func (t *tensorSpec) checkTensor() error {
	switch {
	case t.seen&fDatatype == 0:
		return fmt.Errorf(`no "datatype"`)
	case t.seen&fShape == 0:
		return fmt.Errorf(`no "shape"`)
	case !triton.KnownDatatype(t.datatype):
		return fmt.Errorf("unknown datatype %q", t.datatype)
	}
	n, err := triton.NumElements(t.shape)
	if err != nil {
		return err
	}
	t.n = n
	return nil
}

// shape reads a shape: an array of non-negative integers.
func (s *scanner) shape() ([]int64, error) {
	if err := s.BeginArray(); err != nil {
		return nil, fmt.Errorf("shape: %w", err)
	}
	shape := []int64{}
	for n := 0; ; {
		more, err := s.Element(&n)
		if err != nil {
			return nil, fmt.Errorf("shape: %w", err)
		}
		if !more {
			return shape, nil
		}
		d, err := s.Uint()
		if err != nil {
			return nil, fmt.Errorf("shape: %w", err)
		}
		if d > maxInt64 {
			return nil, fmt.Errorf("shape: dimension %d is too large", d)
		}
		shape = append(shape, int64(d))
	}
}

// internDatatype returns the datatype name, without allocating for the
// known ones.
func internDatatype(v []byte) string {
	switch string(v) {
	case triton.BOOL:
		return triton.BOOL
	case triton.UINT8:
		return triton.UINT8
	case triton.UINT16:
		return triton.UINT16
	case triton.UINT32:
		return triton.UINT32
	case triton.UINT64:
		return triton.UINT64
	case triton.INT8:
		return triton.INT8
	case triton.INT16:
		return triton.INT16
	case triton.INT32:
		return triton.INT32
	case triton.INT64:
		return triton.INT64
	case triton.FP16:
		return triton.FP16
	case triton.FP32:
		return triton.FP32
	case triton.FP64:
		return triton.FP64
	case triton.BF16:
		return triton.BF16
	case triton.BYTES:
		return triton.BYTES
	}
	return string(v)
}
