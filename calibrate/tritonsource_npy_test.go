package calibrate

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/calibrate/tritonpairs"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// npyBytes is a .npy file of the given header dictionary and data.
func npyBytes(dict string, data []byte) []byte {
	hdr := dict + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)), byte(len(hdr)>>8))
	return append(append(b, hdr...), data...)
}

// writeNPZ writes an .npz archive of the named .npy files, stored (as
// numpy.savez does) or deflated (savez_compressed).
func writeNPZ(t *testing.T, path string, deflate bool, arrays map[string][]byte, order ...string) {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	method := zip.Store
	if deflate {
		method = zip.Deflate
	}
	for _, name := range order {
		w, err := z.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(arrays[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFitTritonIntegerAndSeveralInputs fits a backbone and an expert of two
// integer inputs (INT64 token ids, a UINT8 mask) from an .npz archive per
// task, stored or compressed: the models receive the arrays as they are,
// each under its name, and the statistics equal those of the features
// computed here from the integers.
func TestFitTritonIntegerAndSeveralInputs(t *testing.T) {
	inputs := []*tritonpb.ModelMetadataResponse_TensorMetadata{
		tensorMeta("input_ids", triton.INT64, -1, 3), tensorMeta("mask", triton.UINT8, -1, 3)}
	merged := featureModel(1, triton.FP32)
	merged.inputs = inputs
	expert := featureModel(3, triton.FP32)
	expert.inputs = inputs
	f := &fakeServer{models: map[string]*fakeModel{"merged": merged, "expert": expert}}
	addr := startFakeServer(t, f)

	dir := t.TempDir()
	samples := map[string][][]float64{}
	for task, n := range map[string]int{"a": 11, "b": 7} {
		var ids, mask []byte
		var rows [][]float64
		for i := range n {
			var row []float64
			for j := range 3 {
				id := int64((i*7+j*3)%50) - 20 // negative ids test the sign
				ids = binary.LittleEndian.AppendUint64(ids, uint64(id))
				row = append(row, float64(id))
			}
			for j := range 3 {
				m := byte((i + j) % 2 * 200)
				mask = append(mask, m)
				row = append(row, float64(m))
			}
			rows = append(rows, row)
		}
		samples[task] = rows
		arrays := map[string][]byte{
			"input_ids": npyBytes(fmt.Sprintf("{'descr': '<i8', 'fortran_order': False, 'shape': (%d, 3), }", n), ids),
			"mask":      npyBytes(fmt.Sprintf("{'descr': '|u1', 'fortran_order': False, 'shape': (%d, 3), }", n), mask),
		}
		writeNPZ(t, filepath.Join(dir, task+tritonpairs.ArchiveSuffix), task == "b", arrays, "mask", "input_ids")
	}
	out := filepath.Join(t.TempDir(), "c.safetensors")
	mustRun(t, "fit", "--triton", addr, "--inputs", dir, "--backbone-model", "merged", "--chunk", "4",
		"--expert", "a=expert", "--expert", "b=expert", "--out", out)
	c, err := componentsfile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	features := func(m *fakeModel, rows [][]float64) *mat.Dense {
		z := mat.NewDense(len(rows), 4, nil)
		for i, x := range rows {
			for j := range 4 {
				var s float64
				for k, v := range x {
					s += v * weight(m.seed, j, k)
				}
				z.Set(i, j, float64(float32(s)))
			}
		}
		return z
	}
	for _, ts := range c.Tasks {
		mtl, ind := features(merged, samples[ts.Name]), features(expert, samples[ts.Name])
		var s, g mat.Dense
		s.Mul(ind.T(), mtl)
		g.Mul(mtl.T(), mtl)
		if !mat.EqualApprox(ts.S, &s, 1e-9*mat.Norm(&s, 1)) || !mat.EqualApprox(ts.G, &g, 1e-9*mat.Norm(&g, 1)) {
			t.Errorf("task %s: S or G differs from the features of its integer inputs", ts.Name)
		}
	}
}

// TestFitTritonInputMismatch: an archive whose arrays are not the model's
// inputs, an array of the wrong datatype, and a .npy for a model of two
// inputs, each refused naming what to do.
func TestFitTritonInputMismatch(t *testing.T) {
	inputs := []*tritonpb.ModelMetadataResponse_TensorMetadata{
		tensorMeta("input_ids", triton.INT64, -1, 3), tensorMeta("mask", triton.UINT8, -1, 3)}
	merged := featureModel(1, triton.FP32)
	merged.inputs = inputs
	f := &fakeServer{models: map[string]*fakeModel{"merged": merged, "expert": merged}}
	addr := startFakeServer(t, f)
	i64 := npyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 48))
	u8 := npyBytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 6))
	f32 := npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 24))
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		want  []string
	}{
		{"names", func(dir string) {
			writeNPZ(t, filepath.Join(dir, "a.npz"), false, map[string][]byte{"input_ids": i64, "attention": u8}, "input_ids", "attention")
		}, []string{`lacks arrays "mask" and has arrays "attention" that are no input of it`}},
		{"datatype", func(dir string) {
			writeNPZ(t, filepath.Join(dir, "a.npz"), false, map[string][]byte{"input_ids": i64, "mask": f32}, "input_ids", "mask")
		}, []string{`input "mask" has datatype UINT8, but `, `a.npz array "mask" holds FP32: save it as numpy.uint8`}},
		{"one array for two inputs", func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "a.npy"), i64, 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{`has 2 inputs ("input_ids" INT64 [-1 3], "mask" UINT8 [-1 3]): give each task's samples as <task>.npz`}},
		{"rows differ", func(dir string) {
			writeNPZ(t, filepath.Join(dir, "a.npz"), false, map[string][]byte{"input_ids": i64,
				"mask": npyBytes("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 3), }", make([]byte, 9))}, "input_ids", "mask")
		}, []string{`a.npz:mask: 3 samples, but `, `has 2: every input needs one row per sample`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			r := run(t, "fit", "--triton", addr, "--inputs", dir, "--backbone-model", "merged", "--expert", "a=expert",
				"--out", filepath.Join(t.TempDir(), "c.safetensors"))
			for _, w := range tc.want {
				if r.code == 0 || !strings.Contains(r.stderr, w) {
					t.Errorf("exit %d, stderr %q: want it to contain %q", r.code, r.stderr, w)
				}
			}
		})
	}
}

// TestFitTritonFloat64Inputs: float64 samples feed an FP32 backbone and an
// FP16 expert through float32, as the features computed here from them.
func TestFitTritonFloat64Inputs(t *testing.T) {
	f := &fakeServer{models: map[string]*fakeModel{"merged": featureModel(1, triton.FP32), "expert": featureModel(3, triton.FP32)}}
	f.models["expert"].inputs[0].Datatype = triton.FP16
	addr := startFakeServer(t, f)
	dir := t.TempDir()
	const n = 9
	x := make([]float32, n*6)
	var raw []byte
	for i := range x {
		v := math.Cos(float64(i)*0.9) * 3
		x[i] = float32(v)
		raw = binary.LittleEndian.AppendUint64(raw, math.Float64bits(v))
	}
	rawNPY(t, filepath.Join(dir, "a.npy"), fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, 2, 3), }", n), raw)
	out := filepath.Join(t.TempDir(), "c.safetensors")
	mustRun(t, "fit", "--triton", addr, "--inputs", dir, "--backbone-model", "merged", "--expert", "a=expert", "--out", out)
	c, err := componentsfile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	mtl, ind := expectedFeatures(t, f.models["merged"], x, 6), expectedFeatures(t, f.models["expert"], x, 6)
	var s, g mat.Dense
	s.Mul(ind.T(), mtl)
	g.Mul(mtl.T(), mtl)
	if !mat.EqualApprox(c.Tasks[0].S, &s, 1e-9) || !mat.EqualApprox(c.Tasks[0].G, &g, 1e-9) {
		t.Error("S or G differs from the features of the float64 samples")
	}
}
