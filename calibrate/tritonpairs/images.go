package tritonpairs

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/mergectl/react-triton/calibrate/images"
	"github.com/mergectl/react-triton/internal/samples"
	"github.com/mergectl/react-triton/triton"
)

// imageInput streams the samples of a task whose calibration inputs are a
// folder of encoded images: each image, decoded and preprocessed in this
// process (package images), is one sample.
type imageInput struct {
	folder *images.Folder
	pre    *images.Preprocess // set by resolve, before the first read
	idx    []int              // the samples used, ascending; nil: all of them
	next   int                // position of the next sample to read among those used
}

// openImages lists the images of dir, checking each one's header; with
// skip, those that fail are left out (imageInput.skipped).
func openImages(dir string, skip bool) (*imageInput, error) {
	f, err := images.List(dir, skip)
	if err != nil {
		return nil, err
	}
	return &imageInput{folder: f}, nil
}

// resolve sets how the images become samples of the given shape (a model
// input's, without the batch dimension), and checks every image's header
// against it.
func (in *imageInput) resolve(shape []int64, opts images.Options) error {
	p, err := images.Resolve(shape, opts)
	if err != nil {
		return err
	}
	if err := in.folder.Check(p); err != nil {
		return err
	}
	in.pre = p
	return nil
}

// skipped returns the files left out because they did not decode.
func (in *imageInput) skipped() []images.Problem { return in.folder.Skipped }

func (in *imageInput) source() string { return in.folder.Dir + string(filepath.Separator) }

func (in *imageInput) specs() []samples.Spec {
	var shape []int64
	if in.pre != nil {
		shape = in.pre.Shape()
	}
	return []samples.Spec{{Datatype: triton.FP32, Shape: shape, Images: "decoded"}}
}

func (in *imageInput) describe() string {
	return fmt.Sprintf("%s, %d images (%d skipped) as %s samples: %s", in.source(), len(in.folder.Files),
		len(in.folder.Skipped), formatShape(len(in.folder.Files), in.pre.Shape()), in.pre)
}

func (in *imageInput) use(idx []int, skip int) { in.idx, in.next = idx, skip }

func (in *imageInput) count() int {
	if in.idx != nil {
		return len(in.idx)
	}
	return len(in.folder.Files)
}

// positions returns the indices in folder.Files of up to n further images;
// none at the end.
func (in *imageInput) positions(n int) []int { return samplePositions(in.idx, in.next, in.count(), n) }

// read decodes and preprocesses up to n further images.
func (in *imageInput) read(n int) (chunk, error) {
	pos := in.positions(n)
	if len(pos) == 0 {
		return chunk{}, io.EOF
	}
	v := make([]float32, len(pos)*in.pre.Elements())
	if err := in.folder.Read(in.pre, pos, v); err != nil {
		return chunk{}, err
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	in.next += len(pos)
	return chunk{raw: [][]byte{b}, n: len(pos)}, nil
}

func (in *imageInput) Close() error { return nil }
