package componentsfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/reacttest"
	"github.com/mergectl/react-triton/react/safetensors"
)

func assertSameComponents(t *testing.T, got, want *react.Components) {
	t.Helper()
	if got.D != want.D || got.Beta != want.Beta || got.Normalization != want.Normalization || got.Backbone != want.Backbone {
		t.Fatalf("header differs: got D=%d β=%v %s %+v, want D=%d β=%v %s %+v",
			got.D, got.Beta, got.Normalization, got.Backbone, want.D, want.Beta, want.Normalization, want.Backbone)
	}
	if !reflect.DeepEqual(got.TaskNames(), want.TaskNames()) {
		t.Fatalf("tasks = %v, want %v", got.TaskNames(), want.TaskNames())
	}
	for i, w := range want.Tasks {
		g := got.Tasks[i]
		if g.N != w.N || g.Expert != w.Expert {
			t.Errorf("task %q: N=%d expert=%+v, want N=%d expert=%+v", w.Name, g.N, g.Expert, w.N, w.Expert)
		}
		// Bit-identical: mat.Equal compares with ==.
		if !mat.Equal(g.S, w.S) || !mat.Equal(g.G, w.G) || !mat.Equal(g.WOrth, w.WOrth) {
			t.Errorf("task %q: matrices differ after a round trip", w.Name)
		}
	}
}

func TestComponentsRoundTrip(t *testing.T) {
	c := reacttest.Components(t, 5, 1, "cars", "dtd", "svhn")
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if err := Save(path, c); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	assertSameComponents(t, got, c)

	var buf bytes.Buffer
	if err := Write(&buf, c); err != nil {
		t.Fatal(err)
	}
	onDisk, _ := os.ReadFile(path)
	if !bytes.Equal(buf.Bytes(), onDisk) {
		t.Error("Write and Save wrote different bytes")
	}
	for name, read := range map[string]func() (*react.Components, error){
		"Read":  func() (*react.Components, error) { return Read(bytes.NewReader(onDisk)) },
		"Parse": func() (*react.Components, error) { return Parse(onDisk) },
	} {
		got, err := read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		assertSameComponents(t, got, c)
	}

	fi, err := ReadInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.D != 5 || fi.Beta != 0.1 || fi.Normalization != react.NormSum || fi.Backbone != c.Backbone ||
		!reflect.DeepEqual(fi.TaskNames(), c.TaskNames()) || fi.Tasks[1].N != c.Tasks[1].N || fi.Tasks[2].Expert != c.Tasks[2].Expert {
		t.Errorf("ReadInfo = %+v", fi)
	}
}

// TestComponentsMetadata pins the metadata keys, which are a contract.
func TestComponentsMetadata(t *testing.T) {
	c := reacttest.Components(t, 3, 2, "a", "b")
	var buf bytes.Buffer
	if err := Write(&buf, c); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	md := f.Metadata
	want := map[string]string{
		"format": "react-components", "format_version": "1", "d": "3", "tasks": "a,b",
		"beta": "0.1", "normalization": "sum",
		"backbone.model": "merged", "backbone.version": "3", "backbone.output": "features",
		"task.a.n": "6", "task.a.expert": "a-expert", "task.a.expert_version": "1", "task.a.expert_output": "emb",
		"task.b.n": "11", "task.b.expert": "b-expert", "task.b.expert_version": "1", "task.b.expert_output": "emb",
		// The data section's CRC-32C (Castagnoli), big-endian hex.
		"crc32c": fmt.Sprintf("%08x", crc32.Checksum(f.Data, crc32.MakeTable(crc32.Castagnoli))),
		// Σ ‖z_ind‖², shortest decimal form.
		"task.a.sum_squares": strconv.FormatFloat(c.Tasks[0].SumSquares, 'g', -1, 64),
		"task.b.sum_squares": strconv.FormatFloat(c.Tasks[1].SumSquares, 'g', -1, 64),
	}
	if c.Tasks[0].SumSquares <= 0 || c.Tasks[1].SumSquares <= 0 {
		t.Fatalf("test components have sums of squares %v, %v: want them recorded", c.Tasks[0].SumSquares, c.Tasks[1].SumSquares)
	}
	for k, v := range want {
		if md[k] != v {
			t.Errorf("metadata %q = %q, want %q", k, md[k], v)
		}
	}
	if len(md) != len(want)+2 || len(md["sha256"]) != 64 {
		t.Errorf("metadata has %d keys (want %d) and sha256 %q", len(md), len(want)+2, md["sha256"])
	}
	if got := md["metadata_sha256"]; got != MetadataSHA256(want) {
		t.Errorf("metadata_sha256 = %q, want %q, the hash of the other entries", got, MetadataSHA256(want))
	}
	var names []string
	for _, ti := range f.Tensors {
		names = append(names, ti.Name)
		if ti.DType != safetensors.F64 || !reflect.DeepEqual(ti.Shape, []int{3, 3}) {
			t.Errorf("tensor %q is %s %v, want F64 [3 3]", ti.Name, ti.DType, ti.Shape)
		}
	}
	if want := []string{"a.S", "a.G", "a.W_orth", "b.S", "b.G", "b.W_orth"}; !reflect.DeepEqual(names, want) {
		t.Errorf("tensors = %v, want %v", names, want)
	}
}

// rewriteFile re-encodes a valid components file after edit changes its tensors
// or metadata; when fixSum is true the data checksum is recomputed, and so is
// the metadata checksum unless edit removed it.
func rewriteFile(t *testing.T, b []byte, fixSum bool, edit func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor) []byte {
	t.Helper()
	f, err := safetensors.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, ti := range f.Tensors {
		tt, _ := f.Tensor(ti.Name)
		tt.Data = append([]byte(nil), tt.Data...)
		ts = append(ts, tt)
	}
	md := f.Metadata
	ts = edit(ts, md)
	if fixSum {
		var all []byte
		for _, tt := range ts {
			all = append(all, tt.Data...)
		}
		md["sha256"] = dataSHA256(all)
		if _, ok := md["crc32c"]; ok {
			md["crc32c"] = fmt.Sprintf("%08x", crc32.Checksum(all, crc32.MakeTable(crc32.Castagnoli)))
		}
		if _, ok := md[MetaMetadataSHA256]; ok {
			md[MetaMetadataSHA256] = MetadataSHA256(md)
		}
	}
	out, err := safetensors.Marshal(ts, md)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLoadComponentsRefuses(t *testing.T) {
	c := reacttest.Components(t, 3, 3, "a", "b")
	var buf bytes.Buffer
	if err := Write(&buf, c); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	setMeta := func(key, value string) func([]safetensors.Tensor, map[string]string) []safetensors.Tensor {
		return func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
			if value == "" {
				delete(md, key)
			} else {
				md[key] = value
			}
			return ts
		}
	}
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"truncated", good[:len(good)-5], "truncated"},
		{"trailing bytes", append(append([]byte(nil), good...), 1, 2), "trailing bytes"},
		{"flipped data bit", func() []byte {
			b := append([]byte(nil), good...)
			b[len(b)-9] ^= 0x10
			return b
		}(), "checksum mismatch: file is corrupt"},
		{"version 2", rewriteFile(t, good, true, setMeta("format_version", "2")), "format version 2 is not supported (this build reads 1)"},
		{"not components", rewriteFile(t, good, true, setMeta("format", "other")), `not a components file`},
		{"no metadata", func() []byte {
			b, _ := safetensors.Marshal([]safetensors.Tensor{safetensors.Float64Tensor("x", []int{1}, []float64{1})}, nil)
			return b
		}(), "no __metadata__"},
		{"missing d", rewriteFile(t, good, true, setMeta("d", "")), `metadata "d" is missing`},
		{"bad d", rewriteFile(t, good, true, setMeta("d", "-3")), `metadata "d" is "-3"`},
		{"wrong d", rewriteFile(t, good, true, setMeta("d", "4")), `tensor "a.S" is F64 [3 3], want F64 [4 4]`},
		{"bad beta", rewriteFile(t, good, true, setMeta("beta", "NaN")), `metadata "beta"`},
		{"bad normalization", rewriteFile(t, good, true, setMeta("normalization", "max")), `unknown normalization "max"`},
		{"bad n", rewriteFile(t, good, true, setMeta("task.b.n", "0")), `metadata "task.b.n" is "0"`},
		{"missing n", rewriteFile(t, good, true, setMeta("task.a.n", "")), `metadata "task.a.n" is missing`},
		{"bad checksum text", rewriteFile(t, good, false, setMeta("sha256", "xyz")), `want 64 hexadecimal digits`},
		{"missing metadata checksum", rewriteFile(t, good, true, setMeta("metadata_sha256", "")), `metadata "metadata_sha256" is missing`},
		{"bad metadata checksum text", rewriteFile(t, good, false, setMeta("metadata_sha256", "00")), `metadata "metadata_sha256" is "00", want 64 hexadecimal digits`},
		// Edits of the header that the data checksum does not cover.
		{"edited n", rewriteFile(t, good, false, setMeta("task.b.n", "4")), "metadata checksum mismatch: the header was edited or is corrupt"},
		{"edited beta", rewriteFile(t, good, false, setMeta("beta", "1")), "metadata checksum mismatch"},
		{"edited expert", rewriteFile(t, good, false, setMeta("task.a.expert", "other")), "metadata checksum mismatch"},
		{"added key", rewriteFile(t, good, false, setMeta("note", "x")), "metadata checksum mismatch"},
		{"removed optional key", rewriteFile(t, good, false, setMeta("backbone.version", "")), "metadata checksum mismatch"},
		{"unknown task listed", rewriteFile(t, good, true, setMeta("tasks", "a,b,c")), `task "c": tensor "c.S" is missing`},
		{"duplicate task", rewriteFile(t, good, true, setMeta("tasks", "a,a,b")), `duplicate task "a"`},
		{"invalid task name", rewriteFile(t, good, true, setMeta("tasks", "a,b.x")), `invalid task name "b.x"`},
		{"extra tensor", rewriteFile(t, good, true, setMeta("tasks", "a")), `tensor "b.S" does not belong to any task`},
		{"wrong dtype", rewriteFile(t, good, true, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
			ts[0] = safetensors.Tensor{Name: "a.S", DType: safetensors.F32, Shape: []int{3, 3}, Data: make([]byte, 36)}
			return ts
		}), `tensor "a.S" is F32 [3 3], want F64 [3 3]`},
		{"asymmetric G", rewriteFile(t, good, true, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
			v := []float64{1, 2, 0, 0, 1, 0, 0, 0, 1}
			ts[4] = safetensors.Float64Tensor("b.G", []int{3, 3}, v)
			return ts
		}), `task "b": G is not symmetric: G[0][1] = 2 but G[1][0] = 0`},
		{"scaled W_orth", rewriteFile(t, good, true, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
			return scaleTensor(t, ts, 5, 1.01)
		}), `task "b": W_orth is not orthogonal: ‖W_orth x‖/‖x‖ = 1.01`},
		{"nearly orthogonal W_orth", rewriteFile(t, good, true, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
			return scaleTensor(t, ts, 2, 1+1e-5)
		}), `task "a": W_orth is not orthogonal`},
		{"NaN", rewriteFile(t, good, true, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
			v := make([]float64, 9)
			v[4] = math.NaN()
			ts[2] = safetensors.Float64Tensor("a.W_orth", []int{3, 3}, v)
			return ts
		}), `task "a": W_orth has a NaN or infinite entry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.safetensors")
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: error %v, want one containing %q", err, tc.want)
			}
			if prefix := "loading components " + path + ": "; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			if _, err := Parse(tc.file); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// A corrupt checksum is recognisable, and the header is still readable.
	b := append([]byte(nil), good...)
	b[len(b)-1] ^= 1
	path := filepath.Join(t.TempDir(), "corrupt.safetensors")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrChecksum) {
		t.Errorf("Load of a corrupt file: %v, want ErrChecksum", err)
	}
	if fi, err := ReadInfo(path); err != nil || len(fi.Tasks) != 2 || !fi.MetadataOK {
		t.Errorf("ReadInfo of a corrupt file = %+v, %v", fi, err)
	}
	// A file written before crc32c (its SHA-256 alone) loads, and its
	// corruption is caught by the SHA-256.
	old := rewriteFile(t, good, true, setMeta("crc32c", ""))
	if fi, err := Parse(old); err != nil || len(fi.Tasks) != 2 {
		t.Errorf("a file without crc32c: %v", err)
	}
	old[len(old)-1] ^= 1
	if _, err := Parse(old); !errors.Is(err, ErrChecksum) {
		t.Errorf("a corrupt file without crc32c: %v, want ErrChecksum", err)
	}
	// With crc32c, it is what is verified: a stale SHA-256 alone passes,
	// a stale CRC-32C fails.
	staleSHA := rewriteFile(t, good, false, setMeta("sha256", strings.Repeat("0", 64)))
	staleSHA = rewriteFile(t, staleSHA, false, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
		md[MetaMetadataSHA256] = MetadataSHA256(md)
		return ts
	})
	if _, err := Parse(staleSHA); err != nil {
		t.Errorf("a file whose crc32c holds and sha256 not: %v (the CRC-32C is verified)", err)
	}
	staleCRC := rewriteFile(t, good, false, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
		md["crc32c"] = "00000000"
		md[MetaMetadataSHA256] = MetadataSHA256(md)
		return ts
	})
	if _, err := Parse(staleCRC); !errors.Is(err, ErrChecksum) {
		t.Errorf("a file whose crc32c is wrong: %v, want ErrChecksum", err)
	}
	// So is an edited header, and ReadInfo reports it without refusing.
	edited := rewriteFile(t, good, false, setMeta("task.a.n", "1"))
	if _, err := Parse(edited); !errors.Is(err, ErrMetadataChecksum) {
		t.Errorf("Parse of an edited header: %v, want ErrMetadataChecksum", err)
	}
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := ReadInfo(path); err != nil || fi.MetadataOK || fi.Tasks[0].N != 1 {
		t.Errorf("ReadInfo of an edited header = %+v, %v; want MetadataOK false", fi, err)
	}
	// A file whose W_orth is orthogonal to rounding error is accepted.
	if _, err := Parse(rewriteFile(t, good, true, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
		return scaleTensor(t, ts, 5, 1+1e-9)
	})); err != nil {
		t.Errorf("W_orth scaled by 1+1e-9: %v", err)
	}
}

// scaleTensor returns ts with the F64 tensor ts[i] multiplied by k.
func scaleTensor(t *testing.T, ts []safetensors.Tensor, i int, k float64) []safetensors.Tensor {
	t.Helper()
	v, err := ts[i].Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for j := range v {
		v[j] *= k
	}
	ts[i] = safetensors.Float64Tensor(ts[i].Name, ts[i].Shape, v)
	return ts
}

// TestMetadataSHA256 checks the canonical encoding against hand-written
// bytes: sorted keys, byte lengths, the two checksum keys left out.
func TestMetadataSHA256(t *testing.T) {
	for _, tc := range []struct {
		md      map[string]string
		encoded string
	}{
		{map[string]string{}, ""},
		{map[string]string{"sha256": "x", "metadata_sha256": "y"}, ""},
		{map[string]string{"b": "2", "a": "xy", "sha256": "z"}, "1:a,2:xy,1:b,1:2,"},
		// Byte-wise order ("B" < "a" < "é"), lengths in bytes, and separators
		// inside values that the length prefix keeps unambiguous.
		{map[string]string{"é": "β", "a": "", "B": "1:x,"}, "1:B,4:1:x,,1:a,0:,2:é,2:β,"},
		{map[string]string{"a,1:b": ""}, "5:a,1:b,0:,"},
		{map[string]string{"a": ",1:b,0:"}, "1:a,7:,1:b,0:,"},
	} {
		sum := sha256.Sum256([]byte(tc.encoded))
		if got, want := MetadataSHA256(tc.md), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("MetadataSHA256(%q) = %s, want sha256(%q) = %s", tc.md, got, tc.encoded, want)
		}
	}
}

func TestSaveComponentsRefusesInvalid(t *testing.T) {
	c := reacttest.Components(t, 3, 4, "a")
	c.Tasks[0].N = 0
	path := filepath.Join(t.TempDir(), "c.safetensors")
	err := Save(path, c)
	if err == nil || !strings.Contains(err.Error(), "no calibration samples") {
		t.Errorf("Save: error %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("an invalid save left a file behind")
	}
}

// fileTensorBytes returns each tensor's raw bytes in the file at path.
func fileTensorBytes(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte)
	for _, ti := range f.Tensors {
		tt, _ := f.Tensor(ti.Name)
		out[ti.Name] = tt.Data
	}
	return out
}

func TestEditKeepsOtherTasksBitIdentical(t *testing.T) {
	dir := t.TempDir()
	base := reacttest.Components(t, 4, 5, "a", "b", "c")
	extra := reacttest.Components(t, 4, 6, "d", "e")
	basePath := filepath.Join(dir, "base.safetensors")
	extraPath := filepath.Join(dir, "extra.safetensors")
	for p, c := range map[string]*react.Components{basePath: base, extraPath: extra} {
		if err := Save(p, c); err != nil {
			t.Fatal(err)
		}
	}
	before := fileTensorBytes(t, basePath)
	beforeExtra := fileTensorBytes(t, extraPath)

	// Add from a loaded file, remove, save, and compare bytes.
	dst, err := Load(basePath)
	if err != nil {
		t.Fatal(err)
	}
	src, err := Load(extraPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := react.AddTasks(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := react.RemoveTasks(dst, "b"); err != nil {
		t.Fatal(err)
	}
	outPath := filepath.Join(dir, "out.safetensors")
	if err := Save(outPath, dst); err != nil {
		t.Fatal(err)
	}
	after := fileTensorBytes(t, outPath)
	if got, want := len(after), 3*4; got != want {
		t.Errorf("edited file holds %d tensors, want %d", got, want)
	}
	for name, b := range after {
		orig, ok := before[name]
		if !ok {
			orig = beforeExtra[name]
		}
		if !bytes.Equal(b, orig) {
			t.Errorf("tensor %q changed bytes in the edit", name)
		}
	}
	if _, ok := after["b.S"]; ok {
		t.Error("removed task b is still in the file")
	}
	got, err := Load(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "c", "d", "e"}; !reflect.DeepEqual(got.TaskNames(), want) {
		t.Errorf("tasks = %v, want %v", got.TaskNames(), want)
	}
	// The source is not aliased by the destination.
	src.Tasks[0].S.Set(0, 0, 42)
	if d, _ := dst.Task("d"); d.S.At(0, 0) == 42 {
		t.Error("AddTasks aliases the source's matrices")
	}
}

// BenchmarkChecksum is the cost of verifying a components file's data
// section of 64 MiB (a D = 768 file of 14 tasks): its SHA-256, which files
// written before crc32c carry alone, against its CRC-32C.
func BenchmarkChecksum(b *testing.B) {
	data := make([]byte, 64<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			sha256.Sum256(data)
		}
	})
	b.Run("crc32c", func(b *testing.B) {
		fi := &Info{CRC32C: "00000000"}
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			fi.dataOK(data)
		}
	})
}

// TestValidateNilFields checks that missing statistics are errors, not
// panics, in the writers, which validate first (react's
// TestValidateNilFields checks Validate itself).
func TestValidateNilFields(t *testing.T) {
	for _, tc := range reacttest.NilFields {
		t.Run(tc.Name, func(t *testing.T) {
			c := reacttest.Components(t, 3, 1, "a", "b")
			tc.Edit(c)
			reacttest.Refuses(t, "Save", func() error { return Save(filepath.Join(t.TempDir(), "c.safetensors"), c) }, tc.Want)
			reacttest.Refuses(t, "Write", func() error { return Write(&bytes.Buffer{}, c) }, tc.Want)
		})
	}
}
