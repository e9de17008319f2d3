package tritonpairs

import (
	"fmt"
	"io"
	"strings"

	"github.com/mergectl/react-triton/internal/samples"
)

// File name suffixes of a task's calibration inputs for a Triton-backed
// fit: DIR/<task>.npy for a model of one input, DIR/<task>.npz for a model
// of several, one array per input named as the input (package samples).
const (
	InputSuffix   = samples.NpySuffix
	ArchiveSuffix = samples.NpzSuffix
)

// sampleInput streams the samples of one task's calibration inputs as the
// raw contents of the models' input tensors: arrays of .npy form, one per
// model input (arraysInput), a folder of images decoded here (imageInput),
// or the files of a folder of images as they are, BYTES (encodedInput).
type sampleInput interface {
	// source names the file or folder, for messages.
	source() string
	// specs are the tensors of a sample, in the order of a chunk's raw.
	specs() []samples.Spec
	// describe says what the input holds and, for images, how they become
	// samples: part of a checkpoint's description of its run.
	describe() string
	// use restricts the samples read to idx, ascending indices of the
	// input's samples (nil: all of them), and starts reading at position
	// skip among them.
	use(idx []int, skip int)
	// count returns the number of samples used.
	count() int
	// read returns up to n further samples; io.EOF at the end.
	read(n int) (chunk, error)
	Close() error
}

// chunk is the samples of one request.
type chunk struct {
	raw [][]byte // each tensor's raw contents, in the order of specs
	n   int      // the number of samples
	// files are the samples' image files, relative to the folder, when
	// they are sent encoded (encodedInput): to name a file Triton refuses.
	files []string
}

// samplePositions returns the indices among a source's samples of up to n
// further samples from position next among those used (idx, or all count
// of them when idx is nil).
func samplePositions(idx []int, next, count, n int) []int {
	n = max(0, min(n, count-next))
	pos := make([]int, n)
	for i := range pos {
		pos[i] = next + i
		if idx != nil {
			pos[i] = idx[next+i]
		}
	}
	return pos
}

// arraysInput streams the samples of a task's calibration inputs held as
// arrays of .npy form (package samples): one .npy file for a model's only
// input, or an .npz archive of one array per model input.
type arraysInput struct {
	set  *samples.Set
	idx  []int // the samples used, ascending; nil: all of them
	next int   // position of the next sample to read among those used
}

// openInput opens a .npy or .npz file and checks its arrays' headers and
// sizes, reading no data.
func openInput(path string) (*arraysInput, error) {
	set, err := samples.Open(path)
	if err != nil {
		return nil, err
	}
	return &arraysInput{set: set}, nil
}

// formatShape formats the shape of n samples of the given shape,
// "N×1×28×28".
func formatShape(n int, shape []int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", n)
	for _, d := range shape {
		fmt.Fprintf(&b, "×%d", d)
	}
	return b.String()
}

func (in *arraysInput) source() string { return in.set.Path() }

func (in *arraysInput) specs() []samples.Spec { return in.set.Specs() }

func (in *arraysInput) describe() string { return in.set.Describe() }

func (in *arraysInput) use(idx []int, skip int) { in.idx, in.next = idx, skip }

func (in *arraysInput) count() int {
	if in.idx != nil {
		return len(in.idx)
	}
	return in.set.Rows()
}

// read returns up to n further samples of every array, in Triton's raw
// encoding; io.EOF at the end.
func (in *arraysInput) read(n int) (chunk, error) {
	pos := samplePositions(in.idx, in.next, in.count(), n)
	if len(pos) == 0 {
		return chunk{}, io.EOF
	}
	raw, err := in.set.Read(pos)
	if err != nil {
		return chunk{}, err
	}
	in.next += len(pos)
	return chunk{raw: raw, n: len(pos)}, nil
}

func (in *arraysInput) Close() error { return in.set.Close() }
