package images

import (
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // registers JPEG with image.Decode
	_ "image/png"  // registers PNG
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Extensions are the file name extensions of the images a folder holds,
// compared without case; other files are ignored.
var Extensions = []string{".png", ".jpg", ".jpeg"}

// formats are the formats image.Decode may return for them.
var formats = map[string]bool{"png": true, "jpeg": true}

// Folder is the images of a folder, in a fixed order.
type Folder struct {
	// Dir is the folder.
	Dir string
	// Files are the images' paths relative to Dir, with slashes, in
	// lexical order, those skipped left out.
	Files []string
	// Skipped are the files left out because their header did not decode
	// (List with skip).
	Skipped []Problem

	sizes []size2 // each file's width and height, from its header
}

// size2 is an image's width and height.
type size2 struct{ w, h int32 }

// Problem is a file that could not be read as an image.
type Problem struct {
	File string // relative to the folder
	Err  error
}

func (p Problem) Error() string { return fmt.Sprintf("%s: %v", p.File, p.Err) }

// IsImage reports whether name has one of Extensions.
func IsImage(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range Extensions {
		if ext == e {
			return true
		}
	}
	return false
}

// List lists the images under dir, subfolders included, and decodes each
// one's header (format and size). A file whose header does not decode, or
// is not PNG or JPEG, is an error naming it, or with skip is left out and
// recorded in Skipped. A folder with no image left is an error.
func List(dir string, skip bool) (*Folder, error) {
	f := &Folder{Dir: dir}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !IsImage(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		cfg, err := decodeConfig(path)
		if err != nil {
			if !skip {
				return Problem{File: rel, Err: err}
			}
			f.Skipped = append(f.Skipped, Problem{File: rel, Err: err})
			return nil
		}
		f.Files = append(f.Files, rel)
		f.sizes = append(f.sizes, size2{int32(cfg.Width), int32(cfg.Height)})
		return nil
	})
	if err != nil {
		var p Problem
		if errors.As(err, &p) {
			return nil, fmt.Errorf("%s: %w", dir, p)
		}
		return nil, err
	}
	if len(f.Files) == 0 {
		what := "no " + strings.Join(Extensions, ", ") + " files"
		if len(f.Skipped) > 0 {
			what = fmt.Sprintf("no image left of %d, every one skipped", len(f.Skipped))
		}
		return nil, fmt.Errorf("%s: %s", dir, what)
	}
	return f, nil
}

// decodeConfig decodes the header of the image at path.
func decodeConfig(path string) (image.Config, error) {
	r, err := os.Open(path)
	if err != nil {
		return image.Config{}, err
	}
	defer r.Close()
	cfg, format, err := image.DecodeConfig(r)
	switch {
	case err != nil:
		return image.Config{}, fmt.Errorf("not a PNG or JPEG image: %w", err)
	case !formats[format]:
		return image.Config{}, fmt.Errorf("a %s image: want PNG or JPEG", format)
	case cfg.Width <= 0 || cfg.Height <= 0:
		return image.Config{}, fmt.Errorf("empty image (%d×%d)", cfg.Width, cfg.Height)
	}
	return cfg, nil
}

// Decode decodes the image at path.
func Decode(path string) (image.Image, error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	img, _, err := image.Decode(r)
	return img, err
}

// Check checks, from the headers, that every image suits p: with resize
// none, that it has p's size.
func (f *Folder) Check(p *Preprocess) error {
	if p.Resize != ResizeNone {
		return nil
	}
	for i, s := range f.sizes {
		if int(s.w) != p.Width || int(s.h) != p.Height {
			return fmt.Errorf("%s: image is %d×%d (width×height), want %d×%d (resize: none)",
				filepath.Join(f.Dir, f.Files[i]), s.w, s.h, p.Width, p.Height)
		}
	}
	return nil
}

// Read decodes the images at the given positions of Files and writes them,
// one sample after the other, into dst (len(idx)·p.Elements() values). The
// images are decoded on up to GOMAXPROCS goroutines. An image that does not
// decode is an error naming it.
func (f *Folder) Read(p *Preprocess, idx []int, dst []float32) error {
	n := p.Elements()
	if len(dst) != len(idx)*n {
		return fmt.Errorf("Read: destination of %d values, want %d", len(dst), len(idx)*n)
	}
	workers := min(runtime.GOMAXPROCS(0), len(idx))
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(idx); i += workers {
				path := filepath.Join(f.Dir, filepath.FromSlash(f.Files[idx[i]]))
				img, err := Decode(path)
				if err == nil {
					err = p.Tensor(img, dst[i*n:(i+1)*n])
				}
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", path, err)
				}
			}
		})
	}
	wg.Wait()
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			failed++
		}
	}
	if failed > 1 {
		return fmt.Errorf("%w (and %d more images of the same chunk)", first, failed-1)
	}
	return first
}
