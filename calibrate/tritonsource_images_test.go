package calibrate

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/calibrate/tritonpairs"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// imageZoo is a backbone and two experts taking grey 3×4 images, [-1,1,3,4].
func imageZoo() *fakeServer {
	f := fakeZoo()
	for _, m := range f.models {
		m.inputs = []*tritonpb.ModelMetadataResponse_TensorMetadata{tensorMeta("image", triton.FP32, -1, 1, 3, 4)}
		m.outputs = m.outputs[:1]
	}
	return f
}

// writePNGs writes n grey 4×3 (width×height) PNG images named
// sub/NNN.png into dir/task and returns their pixels as the float32 values
// numpy's x.astype(float32) / 255 gives, in file order.
func writePNGs(t *testing.T, dir, task string, n int, sub func(i int) string) []float32 {
	t.Helper()
	var x []float32
	for i := range n {
		img := image.NewGray(image.Rect(0, 0, 4, 3))
		for j := range img.Pix {
			img.Pix[j] = uint8((i*37 + j*11 + len(task)*5) % 256)
			x = append(x, float32(img.Pix[j])/255)
		}
		path := filepath.Join(dir, task, sub(i), fmt.Sprintf("%03d.png", i))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return x
}

// writeNPYSamples writes x, samples of shape [1,3,4], to dir/task.npy.
func writeNPYSamples(t *testing.T, dir, task string, x []float32) {
	t.Helper()
	raw := make([]byte, 0, 4*len(x))
	for _, v := range x {
		raw = appendFloat32(raw, v)
	}
	rawNPY(t, filepath.Join(dir, task+tritonpairs.InputSuffix), fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 1, 3, 4), }", len(x)/12), raw)
}

// TestFitTritonImages fits from folders of PNG images and from .npy files
// of the same pixels scaled to [0, 1]: the statistics are the same bit for
// bit, and match the fake models' features of those pixels.
func TestFitTritonImages(t *testing.T) {
	f := imageZoo()
	addr := startFakeServer(t, f)
	imgs, npys := t.TempDir(), t.TempDir()
	x := map[string][]float32{
		"a": writePNGs(t, imgs, "a", 11, func(int) string { return "" }),
		// In class folders, as an image-folder dataset lays them out.
		"b": writePNGs(t, imgs, "b", 6, func(i int) string { return fmt.Sprintf("class%d", i%2) }),
	}
	// The file order is the lexical order of the paths: b's class0 first.
	var b []float32
	for _, i := range []int{0, 2, 4, 1, 3, 5} {
		b = append(b, x["b"][12*i:12*(i+1)]...)
	}
	x["b"] = b
	for task, v := range x {
		writeNPYSamples(t, npys, task, v)
	}
	os.WriteFile(filepath.Join(imgs, "a", "labels.csv"), []byte("ignored"), 0o644)

	dir := t.TempDir()
	fit := func(inputs, out string) *react.Components {
		t.Helper()
		r := mustRun(t, "fit", "--triton", addr, "--inputs", inputs, "--backbone-model", "merged", "--chunk", "4", "--in-flight", "1",
			"--expert", "a=expert_a", "--expert", "b=expert_b", "--out", filepath.Join(dir, out), "--quiet")
		if !strings.Contains(r.stdout, "task a: N=11") || !strings.Contains(r.stdout, "task b: N=6") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		c, err := componentsfile.Load(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	fromImages, fromNPY := fit(imgs, "images.safetensors"), fit(npys, "npy.safetensors")
	for i, ts := range fromImages.Tasks {
		want := fromNPY.Tasks[i]
		if ts.N != want.N || !mat.Equal(ts.S, want.S) || !mat.Equal(ts.G, want.G) || !mat.Equal(ts.WOrth, want.WOrth) {
			t.Errorf("task %s: the statistics from images differ from those from .npy", ts.Name)
		}
		mtl := expectedFeatures(t, f.models["merged"], x[ts.Name], 12)
		var g mat.Dense
		g.Mul(mtl.T(), mtl)
		if !mat.EqualApprox(ts.G, &g, 1e-9) {
			t.Errorf("task %s: G differs from the fake backbone's features of the pixels", ts.Name)
		}
	}
}

func TestFitTritonImagesBadFiles(t *testing.T) {
	f := imageZoo()
	addr := startFakeServer(t, f)
	imgs := t.TempDir()
	writePNGs(t, imgs, "a", 5, func(int) string { return "" })
	os.WriteFile(filepath.Join(imgs, "a", "002b.png"), []byte("not a png"), 0o644)
	args := []string{"fit", "--triton", addr, "--inputs", imgs, "--backbone-model", "merged", "--expert", "a=expert_a",
		"--out", filepath.Join(t.TempDir(), "c.safetensors"), "--quiet"}

	r := run(t, args...)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "002b.png: not a PNG or JPEG image") || f.calls != 0 {
		t.Errorf("a corrupt image: status %d, %d requests, stderr:\n%s", r.code, f.calls, r.stderr)
	}
	r = mustRun(t, append(args, "--image-on-error", "skip")...)
	if !strings.Contains(r.stderr, "task a: skipped "+filepath.Join(imgs, "a", "002b.png")+": not a PNG or JPEG image") ||
		!strings.Contains(r.stderr, "task a: 1 image files skipped") || !strings.Contains(r.stdout, "task a: N=5") {
		t.Errorf("skipped: stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

func TestFitTritonImagesRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string, f *fakeServer)
		args  []string
		code  int
		want  string
	}{
		{"npy and folder", func(t *testing.T, dir string, _ *fakeServer) {
			writeNPYSamples(t, dir, "a", make([]float32, 12))
		}, nil, ExitFailure, "task a: more than one of a.npy, a.npz and the folder a/ in"},
		{"npy and folder, listed", func(t *testing.T, dir string, _ *fakeServer) {
			writeNPYSamples(t, dir, "a", make([]float32, 12))
		}, []string{"--tasks", "a"}, ExitFailure, "a.npy and the folder "},
		{"two channels", func(t *testing.T, _ string, f *fakeServer) {
			f.models["merged"].inputs[0].Shape = []int64{-1, 2, 3, 4}
		}, nil, ExitFailure, `task a: images of ` + "$DIR" + `/a/ for backbone model "merged", input "image": the model's samples have shape [2,3,4]: not an image of 1 or 3 channels`},
		{"size", nil, []string{"--image-size", "3,5"}, ExitFailure, "width 5: the model's samples have shape [1,3,4], with width 4"},
		{"resize none", func(t *testing.T, _ string, f *fakeServer) {
			for _, m := range f.models {
				m.inputs[0].Shape = []int64{-1, 1, 6, 8}
			}
		}, []string{"--image-resize", "none"}, ExitFailure, "a/000.png: image is 4×3 (width×height), want 8×6 (resize: none)"},
		{"bad option", nil, []string{"--image-channels", "cmyk"}, ExitUsage, `images.channels: "cmyk": want auto, grey, rgb or bgr (from --image-channels)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := imageZoo()
			dir := t.TempDir()
			writePNGs(t, dir, "a", 3, func(int) string { return "" })
			if tc.setup != nil {
				tc.setup(t, dir, f)
			}
			addr := startFakeServer(t, f)
			args := append([]string{"fit", "--triton", addr, "--inputs", dir, "--backbone-model", "merged", "--expert", "a=expert_a",
				"--out", filepath.Join(t.TempDir(), "c.safetensors"), "--quiet"}, tc.args...)
			r := run(t, args...)
			want := strings.ReplaceAll(tc.want, "$DIR", dir)
			if r.code != tc.code || !strings.Contains(r.stderr, want) {
				t.Errorf("status %d, stderr:\n%s\nwant status %d and %q", r.code, r.stderr, tc.code, want)
			}
			if f.calls != 0 {
				t.Errorf("%d requests sent before the problem was found", f.calls)
			}
		})
	}
}
