package passthrough

import (
	"compress/zlib"
	"io"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // registers "gzip"
)

// The proxy decodes each gRPC message before relaying it, so its server must
// know every message compression a Triton client may use. Triton accepts
// gzip and deflate (it answers with grpc-accept-encoding: identity, deflate,
// gzip, which the proxy relays), so the sidecar registers both. Upstream
// calls are sent uncompressed.
func init() { encoding.RegisterCompressor(deflateCompressor{}) }

// deflateCompressor is gRPC's "deflate" message encoding, which is the zlib
// format (RFC 1950).
type deflateCompressor struct{}

// Name is the grpc-encoding value.
func (deflateCompressor) Name() string { return "deflate" }

// Compress returns a writer that compresses into w.
func (deflateCompressor) Compress(w io.Writer) (io.WriteCloser, error) { return zlib.NewWriter(w), nil }

// Decompress returns a reader of r's decompressed bytes.
func (deflateCompressor) Decompress(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }
