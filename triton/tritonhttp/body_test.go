package tritonhttp

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func zlibbed(b []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func rawDeflated(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.DefaultCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestReadBody(t *testing.T) {
	body := []byte(strings.Repeat(`{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}`, 50))
	two := append(gzipped(body[:100]), gzipped(body[100:])...)
	for _, c := range []struct {
		name, encoding string
		in             []byte
	}{
		{"none", "", body},
		{"identity", "identity", body},
		// Seen from Triton: both encodings take gzip and zlib streams.
		{"gzip", "gzip", gzipped(body)},
		{"zlib as gzip", "gzip", zlibbed(body)},
		{"deflate (zlib)", "deflate", zlibbed(body)},
		{"gzip as deflate", "deflate", gzipped(body)},
		{"two gzip members", "gzip", two},
		{"empty", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A reader that returns one byte at a time tests the buffering.
			got, err := ReadBody(iotest.OneByteReader(bytes.NewReader(c.in)), c.encoding, int64(len(body)))
			want := body
			if c.in == nil {
				want = nil
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("ReadBody = %d bytes, %v; want %d bytes", len(got), err, len(want))
			}
		})
	}
}

func TestReadBodyErrors(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 100)
	gz := gzipped(body)
	corrupt := bytes.Clone(gz)
	corrupt[len(corrupt)-5] ^= 0xff // the stored length
	for _, c := range []struct {
		name, encoding string
		in             []byte
		limit          int64
		want           string
	}{
		{"raw deflate", "deflate", rawDeflated(body), 2000, "Content-Encoding deflate: corrupt zlib data: zlib: invalid header"},
		{"corrupt gzip", "gzip", corrupt, 2000, "Content-Encoding gzip: corrupt gzip data: gzip: invalid checksum"},
		{"truncated gzip", "gzip", gz[:len(gz)/2], 2000, "Content-Encoding gzip: corrupt gzip data: unexpected EOF"},
		{"data after zlib", "deflate", append(zlibbed(body), 'x'), 2000, "Content-Encoding deflate: corrupt zlib data: data after the end of the stream"},
		{"empty gzip", "gzip", nil, 2000, "Content-Encoding gzip: corrupt zlib data: unexpected EOF"},
	} {
		_, err := ReadBody(bytes.NewReader(c.in), c.encoding, c.limit)
		var re *RequestError
		if !errors.As(err, &re) || err.Error() != c.want {
			t.Errorf("%s: error %v, want *RequestError %q", c.name, err, c.want)
		}
	}

	for _, enc := range []string{"GZIP", "br", "gzip, identity", "compress"} {
		_, err := ReadBody(bytes.NewReader(body), enc, 2000)
		var ee *EncodingError
		if !errors.As(err, &ee) || ee.Encoding != enc {
			t.Errorf("encoding %q: error %v, want an *EncodingError", enc, err)
		}
	}

	for _, c := range []struct {
		name, encoding string
		in             []byte
		limit          int64
	}{
		{"identity", "", body, 999},
		{"gzip decoded", "gzip", gz, 999},
		{"deflate decoded", "deflate", zlibbed(body), 500},
		{"compressed input", "gzip", gz, int64(len(gz)) - 1},
		{"zero limit", "", []byte("x"), 0},
	} {
		_, err := ReadBody(bytes.NewReader(c.in), c.encoding, c.limit)
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.Limit != c.limit {
			t.Errorf("%s: error %v, want a *TooLargeError", c.name, err)
		}
	}
	if err := (&TooLargeError{Limit: 1000}); err.Error() != "request body larger than 1000 bytes" {
		t.Errorf("TooLargeError says %q", err)
	}
	if got, err := ReadBody(bytes.NewReader(body), "", 1000); err != nil || len(got) != 1000 {
		t.Errorf("body of exactly the limit: %d bytes, %v", len(got), err)
	}

	// Errors of the body's reader come back as they are.
	boom := errors.New("connection reset")
	for _, enc := range []string{"", "gzip"} {
		r := io.MultiReader(bytes.NewReader(gz[:10]), iotest.ErrReader(boom))
		if _, err := ReadBody(r, enc, 2000); err != boom {
			t.Errorf("encoding %q: reader error came back as %v", enc, err)
		}
	}
}

// TestReadBodyZipBomb checks that a small body that decompresses to far
// more than the limit stops there, without allocating much beyond it.
func TestReadBodyZipBomb(t *testing.T) {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 64 { // 64 MiB of zeros, about 65 KB compressed
		w.Write(zeros)
	}
	w.Close()
	bomb := buf.Bytes()
	const limit = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadBody(bytes.NewReader(bomb), "gzip", limit)
	runtime.ReadMemStats(&after)
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("error %v, want a *TooLargeError", err)
	}
	// The buffer doubles up to limit+1 bytes: at most about 2·limit in all,
	// plus the decompressor's state (its 32 KiB window and tables).
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*limit+256<<10 {
		t.Errorf("allocated %d bytes for a limit of %d", got, limit)
	}
}
