package tritonhttp

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
)

// ReadBody reads a request body of at most limit bytes and decodes its
// Content-Encoding: "" or "identity" (as is), "gzip" or "deflate". As in
// Triton, either compressed encoding takes a gzip stream (RFC 1952) or a
// zlib stream (RFC 1950), told apart by their first bytes; "deflate" is
// zlib, and a raw deflate stream (RFC 1951) is refused as corrupt (Triton
// would silently decode it to nothing). Encoding names are matched exactly,
// as Triton matches them.
//
// limit bounds both the bytes read from r and the decoded body: a longer
// body fails with a *TooLargeError, without ever holding more than limit+1
// decoded bytes, so a small compressed body that expands without end (a
// zip bomb) stops at the limit. An unknown encoding fails with an
// *EncodingError, and compressed data that do not decode (corrupt,
// truncated, or followed by other bytes) with a *RequestError. An error
// reading r is returned as it is.
func ReadBody(r io.Reader, contentEncoding string, limit int64) (decoded []byte, err error) {
	limit = max(limit, 0)
	src := &sourceReader{r: r, limit: limit}
	switch contentEncoding {
	case "", "identity":
		decoded, err = readLimited(src, limit)
		if err != nil {
			if e := fromSource(err); e != nil {
				err = e
			}
			return nil, err
		}
		return decoded, nil
	case "gzip", "deflate":
	default:
		return nil, &EncodingError{Encoding: contentEncoding}
	}
	br := bufio.NewReader(src)
	format := "zlib"
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		format = "gzip"
	}
	var dec io.Reader
	if format == "gzip" {
		dec, err = gzip.NewReader(br)
	} else {
		dec, err = zlib.NewReader(br)
	}
	if err == nil {
		decoded, err = readLimited(dec, limit)
	}
	if err == nil && format == "zlib" {
		// A zlib stream ends by itself; nothing may follow it.
		if _, perr := br.Peek(1); perr == nil {
			err = errors.New("data after the end of the stream")
		} else if perr != io.EOF {
			err = perr
		}
	}
	if err == nil {
		return decoded, nil
	}
	if e := fromSource(err); e != nil {
		return nil, e
	}
	return nil, &RequestError{Msg: fmt.Sprintf("Content-Encoding %s: corrupt %s data: %v", contentEncoding, format, err)}
}

// fromSource returns the error of the body's reader, or of its size
// limit, that err carries, or nil if it carries none.
func fromSource(err error) error {
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		return tooLarge
	}
	var src *sourceError
	if errors.As(err, &src) {
		return src.err
	}
	return nil
}

// readLimited reads r to its end, failing with a *TooLargeError after more
// than limit bytes. Its buffer grows by doubling up to limit+1 bytes and no
// further.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(limit+1, 32<<10))
	for {
		if len(buf) == cap(buf) {
			next := 2 * int64(cap(buf))
			if next >= limit {
				next = limit + 1 // one byte more tells a body over the limit
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &TooLargeError{Limit: limit}
		}
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}

// sourceReader reads the body as received, failing after more than limit
// bytes, and marks its own errors so that they are not taken for corrupt
// compressed data.
type sourceReader struct {
	r     io.Reader
	limit int64
	n     int64
}

// sourceError is an error from the body's reader.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += int64(n)
	if s.n > s.limit {
		return n, &TooLargeError{Limit: s.limit}
	}
	if err != nil && err != io.EOF {
		err = &sourceError{err: err}
	}
	return n, err
}
