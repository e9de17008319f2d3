package images

import (
	"fmt"
	"image"
	"image/color"
	"strings"
)

// Values of Options.Layout.
const (
	LayoutAuto = "auto" // from the model's sample shape (Resolve)
	LayoutCHW  = "chw"  // channels, height, width
	LayoutHWC  = "hwc"  // height, width, channels
	LayoutHW   = "hw"   // height, width: one grey channel, no channel axis
)

// Values of Options.Channels.
const (
	ChannelsAuto = "auto" // grey for one channel, rgb for three
	ChannelsGrey = "grey"
	ChannelsRGB  = "rgb"
	ChannelsBGR  = "bgr"
)

// Values of Options.Resize.
const (
	ResizeBilinear = "bilinear" // resize images of another size
	ResizeNone     = "none"     // refuse images of another size
)

// Options are the configurable parts of the preprocessing; the rest comes
// from the shape of one of the model's samples. The zero value of a string
// field means its auto or default value.
type Options struct {
	// Layout is auto, chw, hwc or hw.
	Layout string
	// Channels is auto, grey, rgb or bgr.
	Channels string
	// Height and Width are the size images are resized to; 0 takes the
	// model's (which must then be fixed).
	Height, Width int
	// Resize is bilinear (the default) or none.
	Resize string
	// Mean and Std normalise each channel, (x − mean) / std, after scaling
	// to [0, 1]: empty (0 and 1), one value for every channel, or one per
	// channel.
	Mean, Std []float64
}

// Preprocess turns a decoded image into one sample of a model's input. Build
// it with Resolve.
type Preprocess struct {
	Layout        string // chw, hwc or hw
	Channels      string // grey, rgb or bgr
	Height, Width int
	Resize        string    // bilinear or none
	Mean, Std     []float64 // one per channel
}

// Resolve builds the preprocessing of samples of the given shape (one
// sample, without the batch dimension; -1 is a variable dimension) from
// o, checking that they agree.
func Resolve(shape []int64, o Options) (*Preprocess, error) {
	p := &Preprocess{Layout: o.Layout, Channels: o.Channels, Resize: o.Resize}
	if p.Resize == "" {
		p.Resize = ResizeBilinear
	}
	if p.Resize != ResizeBilinear && p.Resize != ResizeNone {
		return nil, fmt.Errorf("resize %q: want %s or %s", p.Resize, ResizeBilinear, ResizeNone)
	}
	if p.Layout == "" || p.Layout == LayoutAuto {
		var err error
		if p.Layout, err = autoLayout(shape); err != nil {
			return nil, err
		}
	}
	var h, w, c int64
	switch p.Layout {
	case LayoutCHW:
		if len(shape) != 3 {
			return nil, fmt.Errorf("layout %s: the model's samples have shape %s, want 3 dimensions", p.Layout, formatShape(shape))
		}
		c, h, w = shape[0], shape[1], shape[2]
	case LayoutHWC:
		if len(shape) != 3 {
			return nil, fmt.Errorf("layout %s: the model's samples have shape %s, want 3 dimensions", p.Layout, formatShape(shape))
		}
		h, w, c = shape[0], shape[1], shape[2]
	case LayoutHW:
		if len(shape) != 2 {
			return nil, fmt.Errorf("layout %s: the model's samples have shape %s, want 2 dimensions", p.Layout, formatShape(shape))
		}
		h, w, c = shape[0], shape[1], 1
	default:
		return nil, fmt.Errorf("layout %q: want %s, %s, %s or %s", p.Layout, LayoutAuto, LayoutCHW, LayoutHWC, LayoutHW)
	}
	if c != 1 && c != 3 {
		return nil, fmt.Errorf("the model's samples have shape %s: %d channels (layout %s), want 1 or 3", formatShape(shape), c, p.Layout)
	}
	switch p.Channels {
	case "", ChannelsAuto:
		p.Channels = ChannelsGrey
		if c == 3 {
			p.Channels = ChannelsRGB
		}
	case ChannelsGrey:
		if c != 1 {
			return nil, fmt.Errorf("channels %s: the model's samples have shape %s, with 3 channels (layout %s)", p.Channels, formatShape(shape), p.Layout)
		}
	case ChannelsRGB, ChannelsBGR:
		if c != 3 {
			return nil, fmt.Errorf("channels %s: the model's samples have shape %s, with 1 channel (layout %s)", p.Channels, formatShape(shape), p.Layout)
		}
	default:
		return nil, fmt.Errorf("channels %q: want %s, %s, %s or %s", p.Channels, ChannelsAuto, ChannelsGrey, ChannelsRGB, ChannelsBGR)
	}
	var err error
	if p.Height, err = size("height", h, o.Height, shape); err != nil {
		return nil, err
	}
	if p.Width, err = size("width", w, o.Width, shape); err != nil {
		return nil, err
	}
	if p.Mean, err = perChannel("mean", o.Mean, int(c), 0); err != nil {
		return nil, err
	}
	if p.Std, err = perChannel("std", o.Std, int(c), 1); err != nil {
		return nil, err
	}
	for _, s := range p.Std {
		if !(s > 0) {
			return nil, fmt.Errorf("std %v: every value must be > 0", o.Std)
		}
	}
	return p, nil
}

// autoLayout picks the layout of a sample shape: chw when the first of
// three dimensions is 1 or 3, hwc when the last is, hw for two dimensions.
func autoLayout(shape []int64) (string, error) {
	switch {
	case len(shape) == 2:
		return LayoutHW, nil
	case len(shape) == 3 && (shape[0] == 1 || shape[0] == 3):
		return LayoutCHW, nil
	case len(shape) == 3 && (shape[2] == 1 || shape[2] == 3):
		return LayoutHWC, nil
	}
	return "", fmt.Errorf("the model's samples have shape %s: not an image of 1 or 3 channels (C×H×W, H×W×C or H×W); set the layout", formatShape(shape))
}

// size resolves one of the image's dimensions from the model's (-1:
// variable) and the configured one (0: none).
func size(what string, model int64, configured int, shape []int64) (int, error) {
	switch {
	case configured < 0:
		return 0, fmt.Errorf("%s %d: must be positive", what, configured)
	case model > 0 && configured > 0 && int64(configured) != model:
		return 0, fmt.Errorf("%s %d: the model's samples have shape %s, with %s %d", what, configured, formatShape(shape), what, model)
	case model > 0:
		return int(model), nil
	case configured > 0:
		return configured, nil
	}
	return 0, fmt.Errorf("the model's samples have shape %s, with a variable %s: give the images' size", formatShape(shape), what)
}

// perChannel expands v to one value per channel.
func perChannel(what string, v []float64, channels int, def float64) ([]float64, error) {
	out := make([]float64, channels)
	switch len(v) {
	case 0:
		for i := range out {
			out[i] = def
		}
	case 1:
		for i := range out {
			out[i] = v[0]
		}
	case channels:
		copy(out, v)
	default:
		return nil, fmt.Errorf("%s %v: want one value, or one per channel (%d)", what, v, channels)
	}
	return out, nil
}

// channels is the number of channels of a sample.
func (p *Preprocess) channels() int {
	if p.Channels == ChannelsGrey {
		return 1
	}
	return 3
}

// Shape returns the shape of one sample.
func (p *Preprocess) Shape() []int64 {
	h, w, c := int64(p.Height), int64(p.Width), int64(p.channels())
	switch p.Layout {
	case LayoutHWC:
		return []int64{h, w, c}
	case LayoutHW:
		return []int64{h, w}
	}
	return []int64{c, h, w}
}

// Elements returns the number of values of one sample.
func (p *Preprocess) Elements() int { return p.Height * p.Width * p.channels() }

// String describes the preprocessing, every setting, on one line.
func (p *Preprocess) String() string {
	return fmt.Sprintf("%s %s %d×%d, resize %s, mean %v, std %v", p.Channels, p.Layout, p.Height, p.Width, p.Resize, p.Mean, p.Std)
}

// Tensor writes img as one sample into dst, which has Elements() values.
func (p *Preprocess) Tensor(img image.Image, dst []float32) error {
	if len(dst) != p.Elements() {
		return fmt.Errorf("Tensor: destination of %d values, want %d", len(dst), p.Elements())
	}
	b := img.Bounds()
	if b.Dx() != p.Width || b.Dy() != p.Height {
		if p.Resize == ResizeNone {
			return fmt.Errorf("image is %d×%d (width×height), want %d×%d (resize: none)", b.Dx(), b.Dy(), p.Width, p.Height)
		}
		if b.Dx() == 0 || b.Dy() == 0 {
			return fmt.Errorf("image is %d×%d: empty", b.Dx(), b.Dy())
		}
	}
	planes := p.planes(img)
	hw := p.Height * p.Width
	for c, plane := range planes {
		if b.Dx() != p.Width || b.Dy() != p.Height {
			plane = resize(plane, b.Dx(), b.Dy(), p.Width, p.Height)
		}
		m, s := p.Mean[c], p.Std[c]
		for i, v := range plane {
			v = (v - m) / s
			if p.Layout == LayoutHWC {
				dst[i*len(planes)+c] = float32(v)
			} else {
				dst[c*hw+i] = float32(v)
			}
		}
	}
	return nil
}

// planes returns the image's channels in the sample's order, each a
// row-major plane of values in [0, 1] at the image's own size.
func (p *Preprocess) planes(img image.Image) [][]float64 {
	b := img.Bounds()
	n := b.Dx() * b.Dy()
	if p.Channels == ChannelsGrey {
		g := make([]float64, n)
		switch im := img.(type) {
		case *image.Gray:
			for y := range b.Dy() {
				o := im.PixOffset(b.Min.X, b.Min.Y+y)
				row := im.Pix[o : o+b.Dx()]
				for x, v := range row {
					g[y*b.Dx()+x] = float64(v) / 255
				}
			}
		case *image.Gray16:
			for y := range b.Dy() {
				for x := range b.Dx() {
					g[y*b.Dx()+x] = float64(im.Gray16At(b.Min.X+x, b.Min.Y+y).Y) / 65535
				}
			}
		default:
			for y := range b.Dy() {
				for x := range b.Dx() {
					r, gg, bb, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
					g[y*b.Dx()+x] = (0.299*float64(r) + 0.587*float64(gg) + 0.114*float64(bb)) / 65535
				}
			}
		}
		return [][]float64{g}
	}
	r, g, bl := make([]float64, n), make([]float64, n), make([]float64, n)
	for y := range b.Dy() {
		for x := range b.Dx() {
			i := y*b.Dx() + x
			if im, ok := img.(*image.Gray); ok {
				v := float64(im.GrayAt(b.Min.X+x, b.Min.Y+y).Y) / 255
				r[i], g[i], bl[i] = v, v, v
				continue
			}
			c := color.RGBA64Model.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.RGBA64)
			r[i], g[i], bl[i] = float64(c.R)/65535, float64(c.G)/65535, float64(c.B)/65535
		}
	}
	if p.Channels == ChannelsBGR {
		return [][]float64{bl, g, r}
	}
	return [][]float64{r, g, bl}
}

// formatShape formats a shape as [d1,d2,...].
func formatShape(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
