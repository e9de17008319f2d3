package samples

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// maxInflated bounds an .npz entry that is compressed, which is inflated
// into memory (numpy.savez_compressed); numpy.savez's entries are read in
// place.
const maxInflated = 1 << 30

// OpenArchive opens an .npz archive of samples, one array per model input
// named as the input, all with the same number of samples, and checks
// every array's header and size, reading no data of the arrays stored in
// place.
func OpenArchive(file string) (in *Set, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	z, err := zip.NewReader(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: not an .npz archive: %w", file, err)
	}
	in = &Set{path: file, closer: f}
	entries := slices.Clone(z.File)
	slices.SortFunc(entries, func(a, b *zip.File) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range entries {
		name, ok := strings.CutSuffix(path.Base(e.Name), NpySuffix)
		if !ok || name == "" || e.FileInfo().IsDir() {
			return nil, fmt.Errorf("%s: entry %q is not an array <input>%s (save the archive with numpy.savez)", file, e.Name, NpySuffix)
		}
		where := file + ":" + name
		if slices.Contains(in.names, name) {
			return nil, fmt.Errorf("%s: the archive holds two arrays %q", file, name)
		}
		var r io.ReaderAt
		size := int64(e.UncompressedSize64)
		switch e.Method {
		case zip.Store:
			off, err := e.DataOffset()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			r = io.NewSectionReader(f, off, size)
		default:
			if size > maxInflated {
				return nil, fmt.Errorf("%s: a compressed array of %d bytes: save the archive uncompressed (numpy.savez, not savez_compressed)", where, size)
			}
			rc, err := e.Open()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			r, size = bytes.NewReader(b), int64(len(b))
		}
		a, err := NewArray(r, size, where)
		if err != nil {
			return nil, err
		}
		if len(in.arrays) > 0 && a.rows != in.arrays[0].rows {
			return nil, fmt.Errorf("%s: %d samples, but %s has %d: every input needs one row per sample",
				where, a.rows, in.arrays[0].Path(), in.arrays[0].rows)
		}
		in.arrays = append(in.arrays, a)
		in.names = append(in.names, name)
	}
	if len(in.arrays) == 0 {
		return nil, fmt.Errorf("%s: an empty archive: want one array per model input", file)
	}
	return in, nil
}
