package componentsfile

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/safetensors"
)

// The components file is a safetensors file. Per task it holds the F64 D×D
// tensors "<task>.S", "<task>.G" and "<task>.W_orth", in task order, and its
// "__metadata__" holds, as strings, the keys below.
const (
	// FormatName is the value of MetaFormat in every components file.
	FormatName = "react-components"
	// FormatVersion is the only value of MetaFormatVersion this build reads
	// and the one it writes.
	FormatVersion = 1

	MetaFormat          = "format"           // FormatName
	MetaFormatVersion   = "format_version"   // "1"
	MetaD               = "d"                // feature dimension, decimal
	MetaTasks           = "tasks"            // task names, comma-separated, in order
	MetaBeta            = "beta"             // default β, shortest decimal form
	MetaNormalization   = "normalization"    // default normalisation, "sum" or "mean"
	MetaBackboneModel   = "backbone.model"   // merged backbone: model name
	MetaBackboneVersion = "backbone.version" // merged backbone: model version
	MetaBackboneOutput  = "backbone.output"  // merged backbone: output tensor
	MetaSHA256          = "sha256"           // hex SHA-256 of the whole data section
	MetaCRC32C          = "crc32c"           // hex CRC-32C of the whole data section (since 2026-11; optional)
	MetaMetadataSHA256  = "metadata_sha256"  // hex SHA-256 of the other metadata: see MetadataSHA256
)

// MetaTaskKey returns the metadata key of a per-task field: "task.<name>.<field>",
// where field is "n" (N_t, decimal), "expert", "expert_version",
// "expert_output", or one of the optional MetaSumSquares and
// MetaReconError.
func MetaTaskKey(task, field string) string { return "task." + task + "." + field }

// Optional per-task fields (MetaTaskKey), in the shortest decimal form that
// reads back to the same float64; absent from files written before them,
// whose tasks then load with the value 0 (not recorded).
const (
	// MetaSumSquares is Σ ‖z_ind‖² over the task's samples
	// (react.TaskStats.SumSquares).
	MetaSumSquares = "sum_squares"
	// MetaReconError is the relative reconstruction error of the task's
	// own correction at the file's default β and normalisation
	// (react.TaskStats.ReconError).
	MetaReconError = "recon_error"
)

// Tensor name suffixes of a task's statistics.
const (
	TensorS     = "S"
	TensorG     = "G"
	TensorWOrth = "W_orth"
)

// ErrChecksum is wrapped by the errors of readers that find the data
// section's SHA-256 differing from the one recorded in the file.
var ErrChecksum = errors.New("checksum mismatch: file is corrupt")

// ErrMetadataChecksum is wrapped by the errors of readers that find the
// metadata's SHA-256 (see MetadataSHA256) differing from the one recorded in
// the file.
var ErrMetadataChecksum = errors.New("metadata checksum mismatch: the header was edited or is corrupt")

// orthTol is the largest relative change of a vector's norm accepted when a
// stored W_orth or its transpose multiplies it. W_orth = U Vᵀ is computed in
// float64, so an honest file is orthogonal to about 1e-14; the tolerance
// only has to catch edits and corruption.
const orthTol = 1e-6

// orthProbes is the number of fixed pseudo-random vectors the orthogonality
// check of W_orth uses.
const orthProbes = 3

// symmetryTol is the largest relative asymmetry |G_ij − G_ji| / max|G|
// accepted in a stored Gram matrix.
const symmetryTol = 1e-9

// Info is what a components file's header says: everything but the
// statistics themselves. It can be read without reading the tensor data.
type Info struct {
	FormatVersion int
	D             int
	Beta          float64
	Normalization react.Normalization
	Backbone      react.ModelRef
	Tasks         []TaskInfo
	SHA256        string // hex SHA-256 of the data section, as recorded
	// CRC32C is the hex CRC-32C (Castagnoli) of the data section, as
	// recorded; "" in files written before it was. When present it is
	// the checksum readers verify: it costs a few percent of a SHA-256 on
	// any x86-64 CPU (SSE4.2), where SHA-256 without the SHA extensions
	// costs seconds per gigabyte.
	CRC32C string

	// MetadataSHA256 is the hex SHA-256 of the other metadata, as recorded,
	// and MetadataOK whether the header's metadata matches it. ReadInfo
	// does not refuse a mismatch, so that a tool can describe the file;
	// Load does.
	MetadataSHA256 string
	MetadataOK     bool
}

// TaskInfo is one task's entry in a components file's header.
type TaskInfo struct {
	Name   string
	N      int64
	Expert react.ModelRef
	// SumSquares and ReconError are the optional fields of the same names
	// of react.TaskStats; 0 when the file does not record them.
	SumSquares, ReconError float64
	// Provenance is the task's provenance entries
	// (react.TaskStats.Provenance), nil when there are none.
	Provenance map[string]string
}

// TaskNames returns the task names in order.
func (fi *Info) TaskNames() []string {
	names := make([]string, len(fi.Tasks))
	for i, t := range fi.Tasks {
		names[i] = t.Name
	}
	return names
}

// Save validates c and writes it to path as a components file, atomically:
// a reader sees the old file or the complete new one.
func Save(path string, c *react.Components) error {
	tensors, md, err := encodeComponents(c)
	if err != nil {
		return fmt.Errorf("saving components %s: %w", path, err)
	}
	if err := safetensors.WriteFile(path, tensors, md, 0o644); err != nil {
		return fmt.Errorf("saving components %s: %w", path, err)
	}
	return nil
}

// Write validates c and writes it to w as a components file.
func Write(w io.Writer, c *react.Components) error {
	tensors, md, err := encodeComponents(c)
	if err != nil {
		return fmt.Errorf("writing components: %w", err)
	}
	if err := safetensors.Write(w, tensors, md); err != nil {
		return fmt.Errorf("writing components: %w", err)
	}
	return nil
}

// Load reads and verifies the components file at path: its format and
// version, the checksums of its data and of its metadata, the presence and
// shape of every task's tensors, the symmetry of each G, the orthogonality
// of each W_orth, and then react.Components.Validate.
func Load(path string) (*react.Components, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading components %s: %w", path, err)
	}
	c, err := decodeComponents(f, true)
	if err != nil {
		return nil, fmt.Errorf("loading components %s: %w", path, err)
	}
	return c, nil
}

// Read reads and verifies a components file from r, like Load.
func Read(r io.Reader) (*react.Components, error) {
	f, err := safetensors.Read(r)
	if err != nil {
		return nil, fmt.Errorf("reading components: %w", err)
	}
	c, err := decodeComponents(f, true)
	if err != nil {
		return nil, fmt.Errorf("reading components: %w", err)
	}
	return c, nil
}

// Parse decodes and verifies a components file held in b, like Load.
// The result does not alias b.
func Parse(b []byte) (*react.Components, error) {
	f, err := safetensors.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("reading components: %w", err)
	}
	c, err := decodeComponents(f, false)
	if err != nil {
		return nil, fmt.Errorf("reading components: %w", err)
	}
	return c, nil
}

// ReadInfo reads only the header of the components file at path. It
// checks the header, the file's size and that every task's tensors are
// present with the right shape, but not the data checksum, and it reports
// rather than refuses a metadata checksum mismatch (Info.MetadataOK):
// use it to validate arguments against a file before loading all of it, or
// to describe a corrupt file.
func ReadInfo(path string) (*Info, error) {
	h, err := safetensors.ReadFileHeader(path)
	if err != nil {
		return nil, fmt.Errorf("loading components %s: %w", path, err)
	}
	fi, err := decodeInfo(h)
	if err != nil {
		return nil, fmt.Errorf("loading components %s: %w", path, err)
	}
	return fi, nil
}

func encodeComponents(c *react.Components) ([]safetensors.Tensor, map[string]string, error) {
	if c == nil {
		return nil, nil, errors.New("nil components")
	}
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	md := map[string]string{
		MetaFormat:          FormatName,
		MetaFormatVersion:   strconv.Itoa(FormatVersion),
		MetaD:               strconv.Itoa(c.D),
		MetaTasks:           strings.Join(c.TaskNames(), ","),
		MetaBeta:            strconv.FormatFloat(c.Beta, 'g', -1, 64),
		MetaNormalization:   string(c.Normalization),
		MetaBackboneModel:   c.Backbone.Name,
		MetaBackboneVersion: c.Backbone.Version,
		MetaBackboneOutput:  c.Backbone.Output,
	}
	shape := []int{c.D, c.D}
	var tensors []safetensors.Tensor
	sh, crc := sha256.New(), crc32.New(castagnoli)
	h := io.MultiWriter(sh, crc)
	for _, t := range c.Tasks {
		md[MetaTaskKey(t.Name, "n")] = strconv.FormatInt(t.N, 10)
		md[MetaTaskKey(t.Name, "expert")] = t.Expert.Name
		md[MetaTaskKey(t.Name, "expert_version")] = t.Expert.Version
		md[MetaTaskKey(t.Name, "expert_output")] = t.Expert.Output
		for _, f := range []struct {
			field string
			v     float64
		}{{MetaSumSquares, t.SumSquares}, {MetaReconError, t.ReconError}} {
			if f.v > 0 {
				md[MetaTaskKey(t.Name, f.field)] = strconv.FormatFloat(f.v, 'g', -1, 64)
			}
		}
		if err := encodeProvenance(md, t); err != nil {
			return nil, nil, err
		}
		for _, m := range []struct {
			suffix string
			m      mat.Matrix
		}{{TensorS, t.S}, {TensorG, t.G}, {TensorWOrth, t.WOrth}} {
			tt := safetensors.Float64Tensor(t.Name+"."+m.suffix, shape, rowMajor(m.m))
			h.Write(tt.Data)
			tensors = append(tensors, tt)
		}
	}
	// Both: readers that predate crc32c verify sha256.
	md[MetaSHA256] = hex.EncodeToString(sh.Sum(nil))
	md[MetaCRC32C] = hex.EncodeToString(crc.Sum(nil))
	md[MetaMetadataSHA256] = MetadataSHA256(md)
	return tensors, md, nil
}

// MetadataSHA256 returns the hex SHA-256 that a components file records
// under "metadata_sha256": the hash of every metadata entry except
// "sha256" and "metadata_sha256" themselves, each encoded as
//
//	<len(key)>:<key>,<len(value)>:<value>,
//
// in byte-wise sorted order of the keys, with the lengths in decimal bytes
// of the UTF-8 strings. The length prefixes make the encoding unambiguous
// whatever the keys and values contain.
func MetadataSHA256(md map[string]string) string {
	keys := make([]string, 0, len(md))
	for k := range md {
		if k != MetaSHA256 && k != MetaMetadataSHA256 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // byte-wise
	h := sha256.New()
	for _, k := range keys {
		v := md[k]
		fmt.Fprintf(h, "%d:%s,%d:%s,", len(k), k, len(v), v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// rowMajor returns the entries of m in row-major order.
func rowMajor(m mat.Matrix) []float64 {
	r, c := m.Dims()
	v := make([]float64, 0, r*c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			v = append(v, m.At(i, j))
		}
	}
	return v
}

// decodeInfo checks the metadata and the tensor list of a header.
func decodeInfo(h *safetensors.Header) (*Info, error) {
	md := h.Metadata
	if md == nil {
		return nil, errors.New("not a components file: no __metadata__")
	}
	if f := md[MetaFormat]; f != FormatName {
		return nil, fmt.Errorf("not a components file: metadata %q is %q, want %q", MetaFormat, f, FormatName)
	}
	get := func(key string) (string, error) {
		v, ok := md[key]
		if !ok {
			return "", fmt.Errorf("metadata %q is missing", key)
		}
		return v, nil
	}
	v, err := get(MetaFormatVersion)
	if err != nil {
		return nil, err
	}
	if v != strconv.Itoa(FormatVersion) {
		return nil, fmt.Errorf("format version %s is not supported (this build reads %d)", v, FormatVersion)
	}
	fi := &Info{FormatVersion: FormatVersion}

	if v, err = get(MetaD); err != nil {
		return nil, err
	}
	d, err := strconv.Atoi(v)
	if err != nil || d <= 0 || d > 1<<20 {
		return nil, fmt.Errorf("metadata %q is %q, want a positive integer", MetaD, v)
	}
	fi.D = d

	if v, err = get(MetaBeta); err != nil {
		return nil, err
	}
	if fi.Beta, err = strconv.ParseFloat(v, 64); err != nil || react.ValidateBeta(fi.Beta) != nil {
		return nil, fmt.Errorf("metadata %q is %q, want a finite number ≥ 0", MetaBeta, v)
	}
	if v, err = get(MetaNormalization); err != nil {
		return nil, err
	}
	if fi.Normalization, err = react.ParseNormalization(v); err != nil {
		return nil, fmt.Errorf("metadata %q: %w", MetaNormalization, err)
	}
	fi.Backbone = react.ModelRef{Name: md[MetaBackboneModel], Version: md[MetaBackboneVersion], Output: md[MetaBackboneOutput]}

	if v, err = get(MetaSHA256); err != nil {
		return nil, err
	}
	if b, err := hex.DecodeString(v); err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("metadata %q is %q, want 64 hexadecimal digits", MetaSHA256, v)
	}
	fi.SHA256 = strings.ToLower(v)
	if v, ok := md[MetaCRC32C]; ok {
		if b, err := hex.DecodeString(v); err != nil || len(b) != crc32.Size {
			return nil, fmt.Errorf("metadata %q is %q, want 8 hexadecimal digits", MetaCRC32C, v)
		}
		fi.CRC32C = strings.ToLower(v)
	}

	if v, err = get(MetaMetadataSHA256); err != nil {
		return nil, err
	}
	if b, err := hex.DecodeString(v); err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("metadata %q is %q, want 64 hexadecimal digits", MetaMetadataSHA256, v)
	}
	fi.MetadataSHA256 = strings.ToLower(v)
	fi.MetadataOK = MetadataSHA256(md) == fi.MetadataSHA256

	if v, err = get(MetaTasks); err != nil {
		return nil, err
	}
	if v == "" {
		return nil, errors.New("no tasks")
	}
	want := make(map[string]bool)
	for _, name := range strings.Split(v, ",") {
		if err := react.ValidateTaskName(name); err != nil {
			return nil, fmt.Errorf("metadata %q: %w", MetaTasks, err)
		}
		for _, suffix := range []string{TensorS, TensorG, TensorWOrth} {
			tn := name + "." + suffix
			if want[tn] {
				return nil, fmt.Errorf("metadata %q: duplicate task %q", MetaTasks, name)
			}
			want[tn] = true
			t, ok := h.Tensor(tn)
			if !ok {
				return nil, fmt.Errorf("task %q: tensor %q is missing", name, tn)
			}
			if t.DType != safetensors.F64 || len(t.Shape) != 2 || t.Shape[0] != d || t.Shape[1] != d {
				return nil, fmt.Errorf("task %q: tensor %q is %s %v, want F64 [%d %d]", name, tn, t.DType, t.Shape, d, d)
			}
		}
		key := MetaTaskKey(name, "n")
		nv, err := get(key)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(nv, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("metadata %q is %q, want a positive integer", key, nv)
		}
		ti := TaskInfo{
			Name: name,
			N:    n,
			Expert: react.ModelRef{
				Name:    md[MetaTaskKey(name, "expert")],
				Version: md[MetaTaskKey(name, "expert_version")],
				Output:  md[MetaTaskKey(name, "expert_output")],
			},
			Provenance: decodeProvenance(md, name),
		}
		for _, f := range []struct {
			field string
			v     *float64
		}{{MetaSumSquares, &ti.SumSquares}, {MetaReconError, &ti.ReconError}} {
			key := MetaTaskKey(name, f.field)
			v, ok := md[key]
			if !ok {
				continue
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || !(x >= 0) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("metadata %q is %q, want a finite number ≥ 0", key, v)
			}
			*f.v = x
		}
		fi.Tasks = append(fi.Tasks, ti)
	}
	for _, t := range h.Tensors {
		if !want[t.Name] {
			return nil, fmt.Errorf("tensor %q does not belong to any task listed in metadata %q", t.Name, MetaTasks)
		}
	}
	return fi, nil
}

// castagnoli is the CRC-32C table (hardware-accelerated where the CPU can).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// dataOK verifies the data section against its recorded checksum: the
// CRC-32C when the file records one, else the SHA-256. Both refuse a
// truncated, corrupt or edited data section (neither is a signature: an
// editor can recompute either).
func (fi *Info) dataOK(data []byte) bool {
	if fi.CRC32C != "" {
		var b [crc32.Size]byte
		binary.BigEndian.PutUint32(b[:], crc32.Checksum(data, castagnoli))
		return hex.EncodeToString(b[:]) == fi.CRC32C
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) == fi.SHA256
}

// decodeComponents decodes and verifies a file: the data checksum first, so
// that a metadata mismatch means the data is intact, then the metadata's,
// then the tensors. When own is true, f's data belong to the caller alone
// (read from a file or a reader) and the matrices may alias them instead of
// copying: the tensors are stored little-endian, 8-byte aligned, row-major,
// which is what gonum's matrices hold on a little-endian machine.
func decodeComponents(f *safetensors.File, own bool) (*react.Components, error) {
	fi, err := decodeInfo(&f.Header)
	if err != nil {
		return nil, err
	}
	if !fi.dataOK(f.Data) {
		return nil, ErrChecksum
	}
	if !fi.MetadataOK {
		return nil, ErrMetadataChecksum
	}
	c := &react.Components{
		D:             fi.D,
		Beta:          fi.Beta,
		Normalization: fi.Normalization,
		Backbone:      fi.Backbone,
	}
	for _, ti := range fi.Tasks {
		t := &react.TaskStats{Name: ti.Name, N: ti.N, Expert: ti.Expert, SumSquares: ti.SumSquares, ReconError: ti.ReconError,
			Provenance: decodeProvenance(f.Header.Metadata, ti.Name)}
		if t.S, err = denseTensor(f, ti.Name+"."+TensorS, own); err != nil {
			return nil, err
		}
		if t.WOrth, err = denseTensor(f, ti.Name+"."+TensorWOrth, own); err != nil {
			return nil, err
		}
		if err := checkOrthogonal(t.WOrth); err != nil {
			return nil, fmt.Errorf("task %q: %w", ti.Name, err)
		}
		g, err := denseTensor(f, ti.Name+"."+TensorG, own)
		if err != nil {
			return nil, err
		}
		if t.G, err = symmetric(g); err != nil {
			return nil, fmt.Errorf("task %q: %w", ti.Name, err)
		}
		c.Tasks = append(c.Tasks, t)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// denseTensor returns a tensor of f as a matrix, aliasing f's data when
// view is true and the layout allows, copying it otherwise.
func denseTensor(f *safetensors.File, name string, view bool) (*mat.Dense, error) {
	t, _ := f.Tensor(name) // presence and shape checked by decodeInfo
	if view {
		if v, ok := t.Float64View(); ok {
			return mat.NewDense(t.Shape[0], t.Shape[1], v), nil
		}
	}
	v, err := t.Float64s()
	if err != nil {
		return nil, err
	}
	return mat.NewDense(t.Shape[0], t.Shape[1], v), nil
}

// symmetric returns g as a SymDense after checking that it is symmetric
// within symmetryTol relative to its largest entry.
func symmetric(g *mat.Dense) (*mat.SymDense, error) {
	n, _ := g.Dims()
	scale := mat.Norm(g, math.Inf(1)) // ≥ max |g_ij|; NaN is caught by Validate
	// Row-major, raw: each entry of the upper triangle compared with its
	// mirror (a strided read down a column). The result shares g's storage,
	// whose upper triangle is the SymDense's.
	src := g.RawMatrix()
	for i := 0; i < n; i++ {
		row := src.Data[i*src.Stride : i*src.Stride+n]
		for j := i; j < n; j++ {
			a, b := row[j], src.Data[j*src.Stride+i]
			if math.Abs(a-b) > symmetryTol*scale {
				return nil, fmt.Errorf("G is not symmetric: G[%d][%d] = %g but G[%d][%d] = %g", i, j, a, j, i, b)
			}
		}
	}
	if src.Stride == n {
		return mat.NewSymDense(n, src.Data[:n*n]), nil
	}
	s := mat.NewSymDense(n, nil)
	dst := s.RawSymmetric()
	for i := 0; i < n; i++ {
		copy(dst.Data[i*dst.Stride+i:i*dst.Stride+n], src.Data[i*src.Stride+i:i*src.Stride+n])
	}
	return s, nil
}

// checkOrthogonal checks, in O(D²), that w is orthogonal: that w and wᵀ
// preserve the norms of orthProbes fixed pseudo-random vectors within orthTol
// relative. A matrix that does so for random vectors is orthogonal to about
// that precision with overwhelming probability; a scaled, edited or
// corrupted W_orth is not. NaN entries are left to Validate.
func checkOrthogonal(w *mat.Dense) error {
	n, _ := w.Dims()
	x := make([]float64, n)
	y := mat.NewVecDense(n, nil)
	state := uint64(0x9e3779b97f4a7c15) // fixed, so that the check is deterministic
	for k := 0; k < orthProbes; k++ {
		for i := range x {
			// splitmix64, mapped to [-1, 1).
			state += 0x9e3779b97f4a7c15
			z := state
			z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
			z = (z ^ z>>27) * 0x94d049bb133111eb
			z ^= z >> 31
			x[i] = float64(z>>11)/(1<<52) - 1
		}
		xv := mat.NewVecDense(n, x)
		nx := mat.Norm(xv, 2)
		for _, m := range []struct {
			name string
			m    mat.Matrix
		}{{"W_orth", w}, {"W_orthᵀ", w.T()}} {
			y.MulVec(m.m, xv)
			ny := mat.Norm(y, 2)
			if math.IsNaN(ny) || math.IsInf(ny, 0) {
				return nil
			}
			if math.Abs(ny-nx) > orthTol*nx {
				return fmt.Errorf("W_orth is not orthogonal: ‖%s x‖/‖x‖ = %.9g for a test vector x, want 1 within %g", m.name, ny/nx, orthTol)
			}
		}
	}
	return nil
}
