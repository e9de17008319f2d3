package calibrate

import (
	"bytes"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// decodeEncoded is the fake models' preprocessing of encoded images (BYTES
// elements): each a grey image, its pixels v/255 in float32, like the zoo's
// preprocess model; one that does not decode fails the request.
func decodeEncoded(_ []float32, _ string, raw []byte) ([]float32, error) {
	elems, err := triton.SplitBytes(raw)
	if err != nil {
		return nil, err
	}
	var x []float32
	for i, e := range elems {
		img, _, err := image.Decode(bytes.NewReader(e))
		if err != nil {
			return nil, fmt.Errorf("preprocess: image %d of %d: cannot decode: %v", i, len(elems), err)
		}
		g, ok := img.(*image.Gray)
		if !ok {
			return nil, fmt.Errorf("preprocess: image %d of %d: not grey", i, len(elems))
		}
		for _, v := range g.Pix {
			x = append(x, float32(v)/255)
		}
	}
	return x, nil
}

// encodedZoo is imageZoo behind preprocessing ensembles: the same models
// taking encoded images, BYTES [-1,1].
func encodedZoo() *fakeServer {
	f := imageZoo()
	for _, m := range f.models {
		m.inputs = []*tritonpb.ModelMetadataResponse_TensorMetadata{tensorMeta("encoded", triton.BYTES, -1, 1)}
	}
	return f
}

// truncate cuts the pixel data of dir/rel short, keeping its header.
func truncate(t *testing.T, dir, rel string) {
	t.Helper()
	path := filepath.Join(dir, rel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:50], 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFitTritonEncoded fits the same image folders decoded here
// (images.decode: go, float models) and on the fake Triton (triton, models
// taking encoded images): the statistics are the same bit for bit, and each
// request carries the files themselves.
func TestFitTritonEncoded(t *testing.T) {
	imgs := t.TempDir()
	writePNGs(t, imgs, "a", 11, func(int) string { return "" })
	writePNGs(t, imgs, "b", 6, func(i int) string { return fmt.Sprintf("class%d", i%2) })
	dir := t.TempDir()
	fit := func(f *fakeServer, out string, extra ...string) *react.Components {
		t.Helper()
		addr := startFakeServer(t, f)
		r := mustRun(t, append([]string{"fit", "--triton", addr, "--inputs", imgs, "--backbone-model", "merged", "--chunk", "4",
			"--in-flight", "2", "--expert", "a=expert_a", "--expert", "b=expert_b", "--out", filepath.Join(dir, out), "--quiet"}, extra...)...)
		if !strings.Contains(r.stdout, "task a: N=11") || !strings.Contains(r.stdout, "task b: N=6") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		c, err := componentsfile.Load(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	enc := encodedZoo()
	inGo, onTriton := fit(imageZoo(), "go.safetensors"), fit(enc, "triton.safetensors", "--image-decode", "triton")
	for i, ts := range onTriton.Tasks {
		want := inGo.Tasks[i]
		if ts.N != want.N || !mat.Equal(ts.S, want.S) || !mat.Equal(ts.G, want.G) || !mat.Equal(ts.WOrth, want.WOrth) {
			t.Errorf("task %s: the statistics from images decoded on Triton differ from those decoded here", ts.Name)
		}
	}
	// 3 chunks of a, 2 of b, to 2 models: no request sent twice.
	if enc.calls != 2*(3+2) || enc.maxRows != 4 {
		t.Errorf("%d requests of at most %d rows; want 10 of 4", enc.calls, enc.maxRows)
	}
}

// TestFitTritonEncodedBadFiles puts files that do not decode among the
// images sent encoded: one whose header does not decode, found before
// anything is sent, and one cut short, which only the models refuse.
func TestFitTritonEncodedBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bad     func(t *testing.T, dir string)
		onError string
		code    int
		want    []string
		n       string // the task's N when the fit succeeds
	}{
		{"header, fail", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "a", "003b.png"), []byte("not a png"), 0o644)
		}, "fail", ExitFailure, []string{"003b.png: not a PNG or JPEG image"}, ""},
		{"truncated, fail", func(t *testing.T, dir string) { truncate(t, dir, "a/005.png") }, "fail", ExitFailure, []string{
			"task a: $DIR/a/005.png (sample 5): does not decode on Triton: backbone model \"merged\": InvalidArgument: preprocess: image 0 of 1: cannot decode: ",
			"images.on_error: skip leaves such files out",
			"the 4 samples before are saved in ",
		}, ""},
		{"two truncated, fail", func(t *testing.T, dir string) {
			truncate(t, dir, "a/005.png")
			truncate(t, dir, "a/006.png")
		}, "fail", ExitFailure, []string{"$DIR/a/005.png (sample 5): does not decode on Triton", "(and 1 more files of samples 4 to 8)"}, ""},
		{"truncated, skip", func(t *testing.T, dir string) {
			truncate(t, dir, "a/005.png")
			truncate(t, dir, "a/008.png") // alone in the last chunk
		}, "skip", ExitOK, []string{
			"task a: skipped $DIR/a/005.png: does not decode on Triton: backbone model \"merged\": InvalidArgument: preprocess: image 0 of 1: cannot decode",
			"task a: skipped $DIR/a/008.png: does not decode on Triton",
			"task a: 2 image files skipped: Triton could not decode them (images.on_error: skip)",
		}, "task a: N=7"},
		{"header and truncated, skip", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "a", "003b.png"), []byte("not a png"), 0o644)
			truncate(t, dir, "a/000.png")
		}, "skip", ExitOK, []string{
			"task a: skipped $DIR/a/003b.png: not a PNG or JPEG image",
			"task a: skipped $DIR/a/000.png: does not decode on Triton",
		}, "task a: N=8"},
		{"all truncated, skip", func(t *testing.T, dir string) {
			for i := range 9 {
				truncate(t, dir, fmt.Sprintf("a/%03d.png", i))
			}
		}, "skip", ExitFailure, []string{"task a: no sample left: all 9 were skipped"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := encodedZoo()
			addr := startFakeServer(t, f)
			dir := t.TempDir()
			writePNGs(t, dir, "a", 9, func(int) string { return "" })
			tc.bad(t, dir)
			out := filepath.Join(t.TempDir(), "c.safetensors")
			r := run(t, "fit", "--triton", addr, "--inputs", dir, "--backbone-model", "merged", "--expert", "a=expert_a",
				"--chunk", "4", "--image-decode", "triton", "--image-on-error", tc.onError, "--out", out, "--quiet")
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "$DIR", dir); !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, r.stderr)
				}
			}
			if tc.n != "" && !strings.Contains(r.stdout, tc.n) {
				t.Errorf("stdout does not contain %q:\n%s", tc.n, r.stdout)
			}
		})
	}
}

// TestFitTritonEncodedSkipEqualsWithout checks that skipping a file the
// models refuse gives the statistics of the folder without it.
func TestFitTritonEncodedSkipEqualsWithout(t *testing.T) {
	with, without := t.TempDir(), t.TempDir()
	writePNGs(t, with, "a", 10, func(int) string { return "" })
	truncate(t, with, "a/004.png")
	writePNGs(t, without, "a", 10, func(int) string { return "" })
	os.Remove(filepath.Join(without, "a", "004.png"))
	dir := t.TempDir()
	var got []*react.Components
	for i, inputs := range []string{with, without} {
		addr := startFakeServer(t, encodedZoo())
		out := filepath.Join(dir, fmt.Sprintf("%d.safetensors", i))
		mustRun(t, "fit", "--triton", addr, "--inputs", inputs, "--backbone-model", "merged", "--expert", "a=expert_a",
			"--chunk", "3", "--image-decode", "triton", "--image-on-error", "skip", "--out", out, "--quiet")
		c, err := componentsfile.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	a, b := got[0].Tasks[0], got[1].Tasks[0]
	if a.N != 9 || b.N != 9 || !mat.EqualApprox(a.S, b.S, 1e-12) || !mat.EqualApprox(a.G, b.G, 1e-12) {
		t.Errorf("N %d and %d, or the sums differ: skipping a file is not fitting without it", a.N, b.N)
	}
}

func TestFitTritonEncodedRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		zoo    func() *fakeServer
		setup  func(t *testing.T, dir string)
		decode string
		want   string
	}{
		{"float model", imageZoo, nil, "triton",
			`backbone model "merged": input "image" has datatype FP32: with images.decode: triton the files are sent encoded, so want BYTES`},
		{"bytes model", encodedZoo, nil, "go",
			`backbone model "merged": input "encoded" has datatype BYTES: it takes encoded images: send it image files with images.decode: triton (--image-decode triton)`},
		{"npy task", encodedZoo, func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "a"))
			writeNPYSamples(t, dir, "a", make([]float32, 12))
		}, "triton", "a.npy: images.decode: triton sends image files to models that decode them, not tensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.zoo()
			addr := startFakeServer(t, f)
			dir := t.TempDir()
			writePNGs(t, dir, "a", 3, func(int) string { return "" })
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			r := run(t, "fit", "--triton", addr, "--inputs", dir, "--backbone-model", "merged", "--expert", "a=expert_a",
				"--image-decode", tc.decode, "--out", filepath.Join(t.TempDir(), "c.safetensors"), "--quiet")
			if r.code != ExitFailure || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant %q", r.code, r.stderr, tc.want)
			}
			if f.calls != 0 {
				t.Errorf("%d requests sent before the problem was found", f.calls)
			}
		})
	}
}

// TestFitTritonEncodedResume checks that a checkpoint records where the
// images are decoded: a fit stopped half-way resumes with the same mode,
// to the same file bit for bit, but not with the other.
func TestFitTritonEncodedResume(t *testing.T) {
	imgs := t.TempDir()
	writePNGs(t, imgs, "a", 13, func(int) string { return "" })
	truncate(t, imgs, "a/009.png")
	dir := t.TempDir()
	f := encodedZoo()
	addr := startFakeServer(t, f)
	args := func(out string, extra ...string) []string {
		return append([]string{"fit", "--triton", addr, "--inputs", imgs, "--backbone-model", "merged", "--expert", "a=expert_a",
			"--chunk", "2", "--in-flight", "1", "--image-decode", "triton", "--image-on-error", "skip", "--checkpoint-every", "1",
			"--out", filepath.Join(dir, out), "--quiet"}, extra...)
	}
	mustRun(t, args("want.safetensors")...)
	f.hook = func(calls int) error {
		if calls >= 2*6+1 { // past the skipped file, whose chunk is chunk 5
			return status.Error(codes.Internal, "the model crashed")
		}
		return nil
	}
	f.mu.Lock()
	f.calls = 0
	f.mu.Unlock()
	if r := run(t, args("got.safetensors")...); r.code != ExitFailure || !strings.Contains(r.stderr, "saved in") {
		t.Fatalf("the failing fit: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	f.hook = nil
	// The same models, now taking the tensor: only the checkpoint differs.
	for name, m := range imageZoo().models {
		f.models[name].inputs, m.inputs = m.inputs, f.models[name].inputs
	}
	r := run(t, args("got.safetensors", "--resume", "--image-decode", "go")...)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "is of another run") || !strings.Contains(r.stderr, "sent encoded") {
		t.Errorf("resuming with images.decode: go: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	f.models = encodedZoo().models
	f.answered = map[string]int{}
	mustRun(t, args("got.safetensors", "--resume")...)
	if !bytes.Equal(readFile(t, filepath.Join(dir, "got.safetensors")), readFile(t, filepath.Join(dir, "want.safetensors"))) {
		t.Error("the resumed fit's file differs from the uninterrupted fit's")
	}
}
