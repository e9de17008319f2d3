package images

import (
	"image"
	"image/color"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape []int64
		opts  Options
		want  *Preprocess // nil: an error containing err
		err   string
	}{
		{"zoo", []int64{1, 28, 28}, Options{},
			&Preprocess{Layout: "chw", Channels: "grey", Height: 28, Width: 28, Resize: "bilinear", Mean: []float64{0}, Std: []float64{1}}, ""},
		{"rgb chw", []int64{3, 224, 224}, Options{Mean: []float64{0.5, 0.4, 0.3}, Std: []float64{0.2}},
			&Preprocess{Layout: "chw", Channels: "rgb", Height: 224, Width: 224, Resize: "bilinear", Mean: []float64{0.5, 0.4, 0.3}, Std: []float64{0.2, 0.2, 0.2}}, ""},
		{"hwc bgr", []int64{32, 48, 3}, Options{Channels: "bgr", Resize: "none"},
			&Preprocess{Layout: "hwc", Channels: "bgr", Height: 32, Width: 48, Resize: "none", Mean: []float64{0, 0, 0}, Std: []float64{1, 1, 1}}, ""},
		{"hw", []int64{28, 28}, Options{},
			&Preprocess{Layout: "hw", Channels: "grey", Height: 28, Width: 28, Resize: "bilinear", Mean: []float64{0}, Std: []float64{1}}, ""},
		{"variable size", []int64{3, -1, -1}, Options{Height: 64, Width: 32},
			&Preprocess{Layout: "chw", Channels: "rgb", Height: 64, Width: 32, Resize: "bilinear", Mean: []float64{0, 0, 0}, Std: []float64{1, 1, 1}}, ""},
		{"explicit layout", []int64{3, 3, 3}, Options{Layout: "hwc"},
			&Preprocess{Layout: "hwc", Channels: "rgb", Height: 3, Width: 3, Resize: "bilinear", Mean: []float64{0, 0, 0}, Std: []float64{1, 1, 1}}, ""},
		{"variable, no size", []int64{3, -1, 224}, Options{}, nil, "variable height: give the images' size"},
		{"size differs", []int64{1, 28, 28}, Options{Height: 32}, nil, "height 32: the model's samples have shape [1,28,28], with height 28"},
		{"not an image", []int64{4, 28, 28, 2}, Options{}, nil, "not an image of 1 or 3 channels"},
		{"two channels", []int64{2, 28, 28}, Options{Layout: "chw"}, nil, "2 channels (layout chw), want 1 or 3"},
		{"grey for rgb", []int64{3, 28, 28}, Options{Channels: "grey"}, nil, "channels grey: the model's samples have shape [3,28,28], with 3 channels"},
		{"rgb for grey", []int64{1, 28, 28}, Options{Channels: "rgb"}, nil, "channels rgb: the model's samples have shape [1,28,28], with 1 channel"},
		{"bad channels", []int64{1, 28, 28}, Options{Channels: "cmyk"}, nil, `channels "cmyk": want auto, grey, rgb or bgr`},
		{"bad layout", []int64{1, 28, 28}, Options{Layout: "nchw"}, nil, `layout "nchw": want auto, chw, hwc or hw`},
		{"layout rank", []int64{28, 28}, Options{Layout: "chw"}, nil, "layout chw: the model's samples have shape [28,28], want 3 dimensions"},
		{"bad resize", []int64{1, 28, 28}, Options{Resize: "bicubic"}, nil, `resize "bicubic": want bilinear or none`},
		{"mean count", []int64{3, 8, 8}, Options{Mean: []float64{1, 2}}, nil, "mean [1 2]: want one value, or one per channel (3)"},
		{"std zero", []int64{1, 8, 8}, Options{Std: []float64{0}}, nil, "std [0]: every value must be > 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.shape, tc.opts)
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Resolve(%v, %+v) = %+v, %v; want an error containing %q", tc.shape, tc.opts, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Resolve(%v, %+v) =\n%+v, want\n%+v", tc.shape, tc.opts, got, tc.want)
			}
			if !reflect.DeepEqual(got.Shape(), tc.shape) && tc.shape[1] > 0 {
				t.Errorf("Shape() = %v, want %v", got.Shape(), tc.shape)
			}
		})
	}
}

// TestTensorGreyExact checks that every 8-bit grey value v gives exactly
// float32(v)/255, numpy's x.astype(numpy.float32) / 255, from a grey image
// and from the same pixels as an RGBA image.
func TestTensorGreyExact(t *testing.T) {
	gray := image.NewGray(image.Rect(0, 0, 16, 16))
	rgba := image.NewRGBA(gray.Rect)
	for i := range 256 {
		gray.Pix[i] = uint8(i)
		rgba.Set(i%16, i/16, color.RGBA{uint8(i), uint8(i), uint8(i), 255})
	}
	p, err := Resolve([]int64{1, 16, 16}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range []image.Image{gray, rgba} {
		dst := make([]float32, 256)
		if err := p.Tensor(img, dst); err != nil {
			t.Fatal(err)
		}
		for i, v := range dst {
			if want := float32(i) / 255; v != want {
				t.Errorf("%T: value %d gives %v, want %v", img, i, v, want)
			}
		}
	}
}

// TestTensorColour checks the channels, the layouts and the normalisation
// on a 2×1 image against values worked out by hand.
func TestTensorColour(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	img.Set(0, 0, color.NRGBA{255, 0, 51, 255})  // (1, 0, 0.2)
	img.Set(1, 0, color.NRGBA{0, 102, 255, 255}) // (0, 0.4, 1)
	for _, tc := range []struct {
		name  string
		shape []int64
		opts  Options
		want  []float64
	}{
		{"rgb chw", []int64{3, 1, 2}, Options{}, []float64{1, 0, 0, 0.4, 0.2, 1}},
		{"rgb hwc", []int64{1, 2, 3}, Options{Layout: "hwc"}, []float64{1, 0, 0.2, 0, 0.4, 1}},
		{"bgr chw", []int64{3, 1, 2}, Options{Channels: "bgr"}, []float64{0.2, 1, 0, 0.4, 1, 0}},
		{"grey luma", []int64{1, 1, 2}, Options{}, []float64{0.299 + 0.114*0.2, 0.587*0.4 + 0.114}},
		{"normalised", []int64{3, 1, 2}, Options{Mean: []float64{0.5, 0.25, 0}, Std: []float64{0.5, 0.25, 2}},
			[]float64{1, -1, -1, 0.6, 0.1, 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Resolve(tc.shape, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]float32, p.Elements())
			if err := p.Tensor(img, dst); err != nil {
				t.Fatal(err)
			}
			for i, v := range dst {
				if math.Abs(float64(v)-tc.want[i]) > 1e-6 {
					t.Fatalf("got %v, want %v", dst, tc.want)
				}
			}
		})
	}
}

func TestTensorTransparent(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{255, 255, 255, 0})
	p, _ := Resolve([]int64{3, 1, 1}, Options{})
	dst := make([]float32, 3)
	if err := p.Tensor(img, dst); err != nil {
		t.Fatal(err)
	}
	if dst[0] != 0 || dst[1] != 0 || dst[2] != 0 {
		t.Errorf("a transparent white pixel gives %v, want black", dst)
	}
}

func TestTensorResize(t *testing.T) {
	// 4×2 grey, resized to 2×1. Horizontally (scale 2) the triangle of
	// half-width 2 around centre 1 weighs pixels 0, 1, 2 by 3/4, 3/4, 1/4
	// and around centre 3 pixels 1, 2, 3 by 1/4, 3/4, 3/4; vertically the
	// two rows weigh the same.
	img := image.NewGray(image.Rect(0, 0, 4, 2))
	px := []float64{0, 51, 102, 153, 204, 255, 0, 51}
	for i, v := range px {
		img.Pix[i] = uint8(v)
	}
	p, _ := Resolve([]int64{1, 1, 2}, Options{})
	dst := make([]float32, 2)
	if err := p.Tensor(img, dst); err != nil {
		t.Fatal(err)
	}
	row := func(r, a, b, c int, wa, wb, wc float64) float64 {
		return (wa*px[4*r+a] + wb*px[4*r+b] + wc*px[4*r+c]) / (wa + wb + wc) / 255
	}
	want := []float64{
		(row(0, 0, 1, 2, 0.75, 0.75, 0.25) + row(1, 0, 1, 2, 0.75, 0.75, 0.25)) / 2,
		(row(0, 1, 2, 3, 0.25, 0.75, 0.75) + row(1, 1, 2, 3, 0.25, 0.75, 0.75)) / 2,
	}
	for i := range dst {
		if math.Abs(float64(dst[i])-want[i]) > 1e-6 {
			t.Errorf("resized to %v, want %v", dst, want)
		}
	}
	p.Resize = ResizeNone
	if err := p.Tensor(img, dst); err == nil || !strings.Contains(err.Error(), "image is 4×2 (width×height), want 2×1 (resize: none)") {
		t.Errorf("resize none: %v", err)
	}
}

func TestResize(t *testing.T) {
	t.Run("identity", func(t *testing.T) {
		in := []float64{1, 2, 3, 4, 5, 6}
		if got := resize(in, 3, 2, 3, 2); !reflect.DeepEqual(got, in) {
			t.Errorf("got %v", got)
		}
	})
	t.Run("constant", func(t *testing.T) {
		in := make([]float64, 7*5)
		for i := range in {
			in[i] = 0.3
		}
		for _, size := range [][2]int{{3, 2}, {11, 13}, {7, 1}} {
			for _, v := range resize(in, 7, 5, size[0], size[1]) {
				if math.Abs(v-0.3) > 1e-12 {
					t.Fatalf("%v: %v", size, v)
				}
			}
		}
	})
	t.Run("ramp upscaled", func(t *testing.T) {
		// Upscaling interpolates linearly between pixel centres: a ramp
		// stays a ramp away from the edges.
		in := []float64{0, 1, 2, 3}
		got := resize(in, 4, 1, 8, 1)
		for i := 1; i < 7; i++ {
			want := (float64(i)+0.5)/2 - 0.5
			if math.Abs(got[i]-want) > 1e-12 {
				t.Errorf("pixel %d: %v, want %v (all: %v)", i, got[i], want, got)
			}
		}
		if got[0] != 0 || got[7] != 3 {
			t.Errorf("edges %v and %v, want 0 and 3 (clamped)", got[0], got[7])
		}
	})
	t.Run("downscaled by 3", func(t *testing.T) {
		// The triangle of half-width 3 around centre 1.5 weighs pixels 0..3
		// by 2/3, 1, 2/3, 1/3.
		in := []float64{1, 2, 3, 4, 5, 6}
		got := resize(in, 6, 1, 2, 1)
		want := (2.0/3*1 + 1*2 + 2.0/3*3 + 1.0/3*4) / (2.0/3 + 1 + 2.0/3 + 1.0/3)
		if math.Abs(got[0]-want) > 1e-12 {
			t.Errorf("got %v, want %v", got[0], want)
		}
	})
}
