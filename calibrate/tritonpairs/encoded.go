package tritonpairs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/calibrate/images"
	"github.com/mergectl/react-triton/internal/samples"
	"github.com/mergectl/react-triton/triton"
)

// encodedInput streams the samples of a task whose calibration inputs are a
// folder of encoded images to models that decode them (images.decode:
// triton): each file's bytes, as they are, are one element of a BYTES
// tensor of shape [n,1].
type encodedInput struct {
	imageInput // the folder and the samples used; pre stays nil
}

// encodedShape is the shape of one sample of an encodedInput: one element.
var encodedShape = []int64{1}

// openEncoded lists the images of dir, checking each one's header as
// openImages does.
func openEncoded(dir string, skip bool) (*encodedInput, error) {
	in, err := openImages(dir, skip)
	if err != nil {
		return nil, err
	}
	return &encodedInput{imageInput: *in}, nil
}

func (in *encodedInput) specs() []samples.Spec {
	return []samples.Spec{{Datatype: triton.BYTES, Shape: encodedShape, Images: "encoded"}}
}

func (in *encodedInput) describe() string {
	return fmt.Sprintf("%s, %d images (%d skipped), sent encoded, BYTES [n,1], to be decoded on Triton (images.decode: triton)",
		in.source(), len(in.folder.Files), len(in.folder.Skipped))
}

// read reads up to n further files.
func (in *encodedInput) read(n int) (chunk, error) {
	pos := in.positions(n)
	if len(pos) == 0 {
		return chunk{}, io.EOF
	}
	c := chunk{raw: make([][]byte, 1), n: len(pos), files: make([]string, len(pos))}
	for i, p := range pos {
		rel := in.folder.Files[p]
		b, err := os.ReadFile(filepath.Join(in.folder.Dir, filepath.FromSlash(rel)))
		if err != nil {
			return chunk{}, err
		}
		c.raw[0] = triton.AppendBytesElement(c.raw[0], b)
		c.files[i] = rel
	}
	in.next += len(pos)
	return c, nil
}

// refused reports whether a request failed because of what it sent: the
// INVALID_ARGUMENT a preprocessing model answers for an image it cannot
// decode (the zoo's, and Triton's own for a malformed input).
func refused(err error) bool {
	return err != nil && status.Code(err) == codes.InvalidArgument
}

// statusMessage is the code and the server's message of a failed call to
// Triton, without the client's prefixes; the whole error if it is not one.
func statusMessage(err error) string {
	var te *triton.Error
	if !errors.As(err, &te) {
		return err.Error()
	}
	msg := te.Err.Error()
	if st, ok := status.FromError(te.Err); ok {
		msg = st.Message()
	}
	return te.Code.String() + ": " + msg
}

// isolate handles an encoded chunk that a model refused (cause): it sends
// each file alone to each model that refused the chunk, to find the files
// refused alone. None: the chunk's failure stands (cause). Else, with
// skipBad the others are sent again as one chunk and the refused files
// reported in the result's skipped; without, the first refused file is the
// error.
func (p *Pair) isolate(ctx context.Context, c chunk, first int, cause error, refusedBy []*tritonModel) chunkResult {
	elems, err := triton.SplitBytes(c.raw[0])
	if err != nil || len(elems) != c.n || len(c.files) != c.n {
		return chunkResult{err: cause}
	}
	var bad []images.Problem
	keep := chunk{raw: make([][]byte, 1)}
	for i, e := range elems {
		one := chunk{raw: [][]byte{triton.AppendBytesElement(nil, e)}, n: 1, files: c.files[i : i+1]}
		var why error
		for _, m := range refusedBy {
			which := 0
			if m == p.expert {
				which = 1
			}
			_, _, err := p.run(ctx, which, one, first+i)
			if err != nil && !refused(err) {
				return chunkResult{err: err}
			}
			if err != nil {
				why = fmt.Errorf("%s %s: %s", m.role, describe(m.ref), statusMessage(err))
				break
			}
		}
		if why != nil {
			bad = append(bad, images.Problem{File: c.files[i], Err: fmt.Errorf("does not decode on Triton: %w", why)})
			continue
		}
		keep.raw[0] = triton.AppendBytesElement(keep.raw[0], e)
		keep.files = append(keep.files, c.files[i])
		keep.n++
	}
	if len(bad) == 0 {
		return chunkResult{err: cause}
	}
	if !p.skipBad {
		pos := first + indexOf(c.files, bad[0].File)
		err := fmt.Errorf("%s (sample %d): %w; images.on_error: skip leaves such files out", p.path(bad[0].File), pos, bad[0].Err)
		if len(bad) > 1 {
			err = fmt.Errorf("%w (and %d more files of samples %d to %d)", err, len(bad)-1, first, first+c.n)
		}
		return chunkResult{err: err}
	}
	if keep.n == 0 {
		return chunkResult{first: first, skipped: bad}
	}
	r, _ := p.inferBoth(ctx, keep, first)
	r.skipped = bad
	return r
}

// path is a file of the task's folder, for messages.
func (p *Pair) path(rel string) string {
	return strings.TrimSuffix(p.in.source(), string(filepath.Separator)) + string(filepath.Separator) + filepath.FromSlash(rel)
}

func indexOf(files []string, f string) int {
	for i, g := range files {
		if g == f {
			return i
		}
	}
	return 0
}

// TakeSkipped returns the image files left out, since the last call,
// because Triton refused them (images.decode: triton, Config.SkipBadImages),
// in sample order, and forgets them. Each counts as one sample done: call
// it after each Next, before checking its error.
func (p *Pair) TakeSkipped() []images.Problem {
	s := p.pending
	p.pending = nil
	return s
}
