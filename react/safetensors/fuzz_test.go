package safetensors

import (
	"bytes"
	"testing"
)

// FuzzSafetensorsRead checks that no input makes the reader panic, and that
// whatever it accepts survives a write and a second read unchanged.
func FuzzSafetensorsRead(f *testing.F) {
	good, err := Marshal([]Tensor{
		Float64Tensor("t.S", []int{2, 2}, []float64{1, 2, 3, 4}),
		{Name: "b", DType: U8, Shape: []int{3}, Data: []byte{1, 2, 3}},
	}, map[string]string{"format": "react-components"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(rawFile(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(rawFile(`{"__metadata__":{"k":"v"}}`, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		file2, err2 := Read(bytes.NewReader(b))
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Parse error %v but Read error %v", err, err2)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(file.Data, file2.Data) {
			t.Fatal("Parse and Read disagree on the data")
		}
		var ts []Tensor
		for _, info := range file.Tensors {
			tt, ok := file.Tensor(info.Name)
			if !ok {
				t.Fatalf("tensor %q listed but not found", info.Name)
			}
			ts = append(ts, tt)
		}
		out, err := Marshal(ts, file.Metadata)
		if err != nil {
			t.Fatalf("re-encoding an accepted file: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("reading a re-encoded file: %v", err)
		}
		if !bytes.Equal(again.Data, file.Data) || len(again.Tensors) != len(file.Tensors) {
			t.Fatal("re-encoded file differs")
		}
	})
}
