package images

import (
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeImage encodes img to path, as PNG or (by extension) JPEG.
func writeImage(t *testing.T, path string, img image.Image) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if strings.HasSuffix(strings.ToLower(path), ".png") {
		err = png.Encode(f, img)
	} else {
		err = jpeg.Encode(f, img, &jpeg.Options{Quality: 100})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// greyImage is a w×h grey image whose pixel i is (i·k) mod 256.
func greyImage(w, h, k int) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * k % 256)
	}
	return img
}

func TestListAndRead(t *testing.T) {
	dir := t.TempDir()
	writeImage(t, filepath.Join(dir, "b.png"), greyImage(4, 3, 7))
	writeImage(t, filepath.Join(dir, "a", "z.PNG"), greyImage(4, 3, 11))
	smooth := image.NewGray(image.Rect(0, 0, 4, 3)) // JPEG keeps a flat image
	for i := range smooth.Pix {
		smooth.Pix[i] = 200
	}
	writeImage(t, filepath.Join(dir, "c.jpeg"), smooth)
	os.WriteFile(filepath.Join(dir, "labels.csv"), []byte("not an image"), 0o644)

	f, err := List(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/z.PNG", "b.png", "c.jpeg"}; !reflect.DeepEqual(f.Files, want) {
		t.Fatalf("Files = %v, want %v", f.Files, want)
	}
	p, err := Resolve([]int64{1, 3, 4}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 3*12)
	if err := f.Read(p, []int{1, 0, 2}, dst); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if want := float32(i*7%256) / 255; dst[i] != want {
			t.Fatalf("b.png value %d: %v, want %v", i, dst[i], want)
		}
		if want := float32(i*11%256) / 255; dst[12+i] != want {
			t.Fatalf("a/z.PNG value %d: %v, want %v", i, dst[12+i], want)
		}
		if math.Abs(float64(dst[24+i])-200.0/255) > 1.5/255 {
			t.Fatalf("c.jpeg value %d: %v, want about %v", i, dst[24+i], 200.0/255)
		}
	}
	if err := f.Check(p); err != nil {
		t.Error(err)
	}
	p.Resize, p.Width = ResizeNone, 5
	if err := f.Check(p); err == nil || !strings.Contains(err.Error(), "a/z.PNG: image is 4×3 (width×height), want 5×3 (resize: none)") {
		t.Errorf("Check with resize none: %v", err)
	}
}

func TestListBadFiles(t *testing.T) {
	dir := t.TempDir()
	writeImage(t, filepath.Join(dir, "good.png"), greyImage(2, 2, 1))
	os.WriteFile(filepath.Join(dir, "bad.png"), []byte("\x89PNG\r\n\x1a\nnot really"), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.jpg"), nil, 0o644)

	_, err := List(dir, false)
	if err == nil || !strings.Contains(err.Error(), "bad.png: not a PNG or JPEG image") {
		t.Fatalf("List without skip: %v, want an error naming bad.png", err)
	}
	f, err := List(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Files, []string{"good.png"}) || len(f.Skipped) != 2 ||
		f.Skipped[0].File != "bad.png" || f.Skipped[1].File != "empty.jpg" {
		t.Errorf("Files %v, Skipped %v", f.Files, f.Skipped)
	}

	os.Remove(filepath.Join(dir, "good.png"))
	if _, err := List(dir, true); err == nil || !strings.Contains(err.Error(), "no image left of 2, every one skipped") {
		t.Errorf("every file skipped: %v", err)
	}
	if _, err := List(t.TempDir(), false); err == nil || !strings.Contains(err.Error(), "no .png, .jpg, .jpeg files") {
		t.Errorf("empty folder: %v", err)
	}
	if _, err := List(filepath.Join(dir, "missing"), false); err == nil {
		t.Error("a missing folder listed")
	}
}

// TestReadCorrupt checks that an image whose header decodes but whose data
// does not is an error naming it.
func TestReadCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.png")
	writeImage(t, path, greyImage(8, 8, 3))
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)-20], 0o644) // cut into the data
	f, err := List(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Resolve([]int64{1, 8, 8}, Options{})
	err = f.Read(p, []int{0}, make([]float32, 64))
	if err == nil || !strings.Contains(err.Error(), "x.png") {
		t.Errorf("Read of a truncated PNG: %v", err)
	}
}

// TestReadColour decodes an RGB PNG into a three-channel sample.
func TestReadColour(t *testing.T) {
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	for i := range 4 {
		img.Set(i%2, i/2, color.RGBA{uint8(10 * i), uint8(20 * i), uint8(30 * i), 255})
	}
	writeImage(t, filepath.Join(dir, "x.png"), img)
	f, err := List(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Resolve([]int64{2, 2, 3}, Options{})
	dst := make([]float32, 12)
	if err := f.Read(p, []int{0}, dst); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		for c, k := range []int{10, 20, 30} {
			if want := float32(k*i) / 255; dst[3*i+c] != want {
				t.Errorf("pixel %d channel %d: %v, want %v", i, c, dst[3*i+c], want)
			}
		}
	}
}
