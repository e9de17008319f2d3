// Package partialfile reads and writes partial-statistics files: the float64
// sums of one or more tasks' ReACT statistics (S_t, G_t, N_t, Σ ‖z_ind‖²)
// before any solve. calibrate fit writes one per task as its checkpoints,
// from which --resume continues, and one per shard with --shard i/n; the
// sidecar's live sampling (package livestats) writes one per replica and
// window of traffic. calibrate merge adds them into a components file.
//
// The file is safetensors: per task the F64 D×D tensors "<task>.S" and
// "<task>.G" (the accumulator's raw storage, the upper triangle holding G),
// optionally "<task>.held.S" and "<task>.held.G" (the sums of the rows held
// out for choosing β, a subset of the task's rows), and metadata strings
// (see the Meta* constants). It is written atomically (a temporary file,
// fsync, rename) and its data checksummed. Readers that predate the held
// sums, the sum of squares or the replica ignore them: the task's sums are
// every row's either way.
package partialfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/safetensors"
)

// FormatName is the "format" metadata of every partial-statistics file.
const FormatName = "react-partial"

// Metadata keys of a partial-statistics file; per task, "task.<name>.n",
// ".done", ".total", ".expert", ".expert_version", ".expert_output",
// ".sum_squares" (Σ ‖z_ind‖², shortest decimal form; absent from files
// written before it was recorded, whose sums then restore without it:
// react.Accumulator.SumSquares), ".held.n" and ".held.sum_squares" with
// the held-out sums, and the task's provenance under "provenance.<key>".
const (
	MetaFormat          = "format"
	MetaFormatVersion   = "format_version"
	MetaD               = "d"
	MetaTasks           = "tasks"
	MetaBeta            = "beta"
	MetaNormalization   = "normalization"
	MetaBackboneModel   = "backbone.model"
	MetaBackboneVersion = "backbone.version"
	MetaBackboneOutput  = "backbone.output"
	MetaRun             = "run"
	MetaShard           = "shard"
	// MetaReplica and MetaWindow are a live file's replica name and the
	// start of its window of traffic (RFC 3339, UTC); absent otherwise.
	MetaReplica = "replica"
	MetaWindow  = "window_start"
	MetaSHA256  = "sha256"
)

// File is the content of a partial-statistics file.
type File struct {
	D             int
	Beta          float64             // the fit's default β
	Normalization react.Normalization // the fit's default normalisation
	Backbone      react.ModelRef
	// Run describes what produced the sums (sources, models, chunks,
	// subset), so that a resume or a merge can refuse sums of another run.
	Run string
	// Shard is "i/n" for a shard's file, "" otherwise.
	Shard string
	// Replica names the sidecar replica whose sampled traffic a live file
	// holds, and Window the start of the window of traffic its sums
	// cover; "" and the zero time for the files of a fit.
	Replica string
	Window  time.Time
	Tasks   []*Task
}

// Task is one task's partial sums.
type Task struct {
	Name   string
	Expert react.ModelRef
	Acc    *react.Accumulator
	// Held holds the sums of the rows of Acc held out for choosing β
	// without labels (a subset of Acc's rows, counted in Acc too); nil
	// when none were.
	Held *react.Accumulator
	// Done is how many of the task's Total samples (after any subset and
	// shard) are done, the first Done in the fit's order: in Acc, or left
	// out as image files Triton could not decode (images.on_error: skip),
	// so Acc.N() may be less.
	Done, Total int64
	// Provenance is recorded in the components file (TaskStats.Provenance).
	Provenance map[string]string
}

// Complete reports whether every sample of the task is in its sums.
func (t *Task) Complete() bool { return t.Done == t.Total }

// Task returns the named task's sums.
func (f *File) Task(name string) (*Task, bool) {
	for _, t := range f.Tasks {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

func taskKey(task, field string) string { return "task." + task + "." + field }

// Save writes f to path atomically.
func Save(path string, f *File) error {
	if err := save(path, f); err != nil {
		return fmt.Errorf("saving partial statistics %s: %w", path, err)
	}
	return nil
}

func save(path string, f *File) error {
	md := map[string]string{
		MetaFormat:          FormatName,
		MetaFormatVersion:   "1",
		MetaD:               strconv.Itoa(f.D),
		MetaBeta:            strconv.FormatFloat(f.Beta, 'g', -1, 64),
		MetaNormalization:   string(f.Normalization),
		MetaBackboneModel:   f.Backbone.Name,
		MetaBackboneVersion: f.Backbone.Version,
		MetaBackboneOutput:  f.Backbone.Output,
		MetaRun:             f.Run,
		MetaShard:           f.Shard,
	}
	if f.Replica != "" {
		md[MetaReplica] = f.Replica
		md[MetaWindow] = f.Window.UTC().Format(time.RFC3339Nano)
	}
	var names []string
	var tensors []safetensors.Tensor
	h := sha256.New()
	for _, t := range f.Tasks {
		if t.Acc.D() != f.D {
			return fmt.Errorf("task %s: D=%d, want %d", t.Name, t.Acc.D(), f.D)
		}
		names = append(names, t.Name)
		n, s, g := t.Acc.State()
		for field, v := range map[string]string{
			"n": strconv.FormatInt(n, 10), "done": strconv.FormatInt(t.Done, 10), "total": strconv.FormatInt(t.Total, 10),
			"expert": t.Expert.Name, "expert_version": t.Expert.Version, "expert_output": t.Expert.Output,
		} {
			md[taskKey(t.Name, field)] = v
		}
		if yy, ok := t.Acc.SumSquares(); ok {
			md[taskKey(t.Name, "sum_squares")] = strconv.FormatFloat(yy, 'g', -1, 64)
		}
		for k, v := range t.Provenance {
			md[taskKey(t.Name, "provenance."+k)] = v
		}
		type sum struct {
			suffix string
			v      []float64
		}
		sums := []sum{{"S", s}, {"G", g}}
		if t.Held != nil {
			if t.Held.D() != f.D {
				return fmt.Errorf("task %s: held-out sums D=%d, want %d", t.Name, t.Held.D(), f.D)
			}
			hn, hs, hg := t.Held.State()
			if hn > n {
				return fmt.Errorf("task %s: %d held-out rows of %d", t.Name, hn, n)
			}
			md[taskKey(t.Name, "held.n")] = strconv.FormatInt(hn, 10)
			if yy, ok := t.Held.SumSquares(); ok {
				md[taskKey(t.Name, "held.sum_squares")] = strconv.FormatFloat(yy, 'g', -1, 64)
			}
			sums = append(sums, sum{"held.S", hs}, sum{"held.G", hg})
		}
		for _, m := range sums {
			tt := safetensors.Float64Tensor(t.Name+"."+m.suffix, []int{f.D, f.D}, m.v)
			h.Write(tt.Data)
			tensors = append(tensors, tt)
		}
	}
	md[MetaTasks] = strings.Join(names, ",")
	md[MetaSHA256] = hex.EncodeToString(h.Sum(nil))
	return safetensors.WriteFile(path, tensors, md, 0o644)
}

// Load reads and checks the partial-statistics file at path.
func Load(path string) (*File, error) {
	f, err := load(path)
	if err != nil {
		return nil, fmt.Errorf("loading partial statistics %s: %w", path, err)
	}
	return f, nil
}

func load(path string) (*File, error) {
	st, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	md := st.Header.Metadata
	if md[MetaFormat] != FormatName {
		return nil, fmt.Errorf("not a partial-statistics file: metadata %q is %q, want %q", MetaFormat, md[MetaFormat], FormatName)
	}
	if v := md[MetaFormatVersion]; v != "1" {
		return nil, fmt.Errorf("format version %q is not supported (this build reads 1)", v)
	}
	sum := sha256.Sum256(st.Data)
	if hex.EncodeToString(sum[:]) != md[MetaSHA256] {
		return nil, componentsfile.ErrChecksum
	}
	f := &File{
		Normalization: react.Normalization(md[MetaNormalization]),
		Backbone:      react.ModelRef{Name: md[MetaBackboneModel], Version: md[MetaBackboneVersion], Output: md[MetaBackboneOutput]},
		Run:           md[MetaRun],
		Shard:         md[MetaShard],
		Replica:       md[MetaReplica],
	}
	if f.Replica != "" {
		if f.Window, err = time.Parse(time.RFC3339Nano, md[MetaWindow]); err != nil {
			return nil, fmt.Errorf("metadata %q is %q, want a time in RFC 3339", MetaWindow, md[MetaWindow])
		}
	}
	if f.D, err = strconv.Atoi(md[MetaD]); err != nil || f.D <= 0 {
		return nil, fmt.Errorf("metadata %q is %q, want a positive integer", MetaD, md[MetaD])
	}
	if f.Beta, err = strconv.ParseFloat(md[MetaBeta], 64); err != nil || react.ValidateBeta(f.Beta) != nil {
		return nil, fmt.Errorf("metadata %q is %q, want a finite number ≥ 0", MetaBeta, md[MetaBeta])
	}
	if _, err := react.ParseNormalization(string(f.Normalization)); err != nil {
		return nil, fmt.Errorf("metadata %q: %w", MetaNormalization, err)
	}
	if md[MetaTasks] == "" {
		return nil, errors.New("no tasks")
	}
	for _, name := range strings.Split(md[MetaTasks], ",") {
		t, err := loadTask(st, md, name, f.D)
		if err != nil {
			return nil, fmt.Errorf("task %q: %w", name, err)
		}
		f.Tasks = append(f.Tasks, t)
	}
	return f, nil
}

func loadTask(st *safetensors.File, md map[string]string, name string, d int) (*Task, error) {
	if err := react.ValidateTaskName(name); err != nil {
		return nil, err
	}
	ints := map[string]int64{}
	for _, field := range []string{"n", "done", "total"} {
		v, err := strconv.ParseInt(md[taskKey(name, field)], 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("metadata %q is %q, want an integer ≥ 0", taskKey(name, field), md[taskKey(name, field)])
		}
		ints[field] = v
	}
	if ints["done"] > ints["total"] {
		return nil, fmt.Errorf("done %d of %d samples", ints["done"], ints["total"])
	}
	acc, err := loadSums(st, md, name, "", ints["n"], d)
	if err != nil {
		return nil, err
	}
	t := &Task{
		Name:   name,
		Expert: react.ModelRef{Name: md[taskKey(name, "expert")], Version: md[taskKey(name, "expert_version")], Output: md[taskKey(name, "expert_output")]},
		Acc:    acc, Done: ints["done"], Total: ints["total"],
	}
	if v, ok := md[taskKey(name, "held.n")]; ok {
		hn, err := strconv.ParseInt(v, 10, 64)
		if err != nil || hn < 0 || hn > acc.N() {
			return nil, fmt.Errorf("metadata %q is %q, want an integer from 0 to %d", taskKey(name, "held.n"), v, acc.N())
		}
		if t.Held, err = loadSums(st, md, name, "held.", hn, d); err != nil {
			return nil, err
		}
	}
	prefix := taskKey(name, "provenance.")
	for k, v := range md {
		if field, ok := strings.CutPrefix(k, prefix); ok {
			if t.Provenance == nil {
				t.Provenance = map[string]string{}
			}
			t.Provenance[field] = v
		}
	}
	return t, nil
}

// loadSums restores the sums of a task's tensors "<name>.<part>S" and
// "<name>.<part>G", with n rows and the sum of squares when the metadata
// records it.
func loadSums(st *safetensors.File, md map[string]string, name, part string, n int64, d int) (*react.Accumulator, error) {
	var raw [2][]float64
	for i, suffix := range []string{"S", "G"} {
		tn := name + "." + part + suffix
		tt, ok := st.Tensor(tn)
		if !ok {
			return nil, fmt.Errorf("tensor %q is missing", tn)
		}
		if tt.DType != safetensors.F64 || len(tt.Shape) != 2 || tt.Shape[0] != d || tt.Shape[1] != d {
			return nil, fmt.Errorf("tensor %q is %s %v, want F64 [%d %d]", tt.Name, tt.DType, tt.Shape, d, d)
		}
		v, err := tt.Float64s()
		if err != nil {
			return nil, err
		}
		raw[i] = v
	}
	key := taskKey(name, part+"sum_squares")
	v, ok := md[key]
	if !ok {
		return react.RestoreAccumulator(d, n, raw[0], raw[1])
	}
	yy, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return nil, fmt.Errorf("metadata %q is %q, want a finite number ≥ 0", key, v)
	}
	return react.RestoreAccumulatorSquares(d, n, raw[0], raw[1], yy)
}

// ReadReplica reads only the header of the partial-statistics file at
// path and returns its replica: the name of the sidecar replica whose
// live traffic it holds, "" for a fit's checkpoint or shard.
func ReadReplica(path string) (string, error) {
	h, err := safetensors.ReadFileHeader(path)
	if err != nil {
		return "", fmt.Errorf("loading partial statistics %s: %w", path, err)
	}
	if h.Metadata[MetaFormat] != FormatName {
		return "", fmt.Errorf("loading partial statistics %s: not a partial-statistics file: metadata %q is %q, want %q", path, MetaFormat, h.Metadata[MetaFormat], FormatName)
	}
	return h.Metadata[MetaReplica], nil
}

// LiveSuffix ends the name of every live file: <replica>.<window
// start>.live.safetensors (LiveName).
const LiveSuffix = ".live.safetensors"

// LiveName returns the name of the live file of replica's window that
// started at window: the start in UTC to the millisecond, so that a
// replica's files sort as its windows do.
func LiveName(replica string, window time.Time) string {
	return replica + "." + window.UTC().Format("20060102T150405.000Z") + LiveSuffix
}
