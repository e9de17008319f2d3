package restapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// IndexEntry writes one entry of the index as Triton does.
func IndexEntry(name, version, state, reason string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	e := struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
		State   string `json:"state,omitempty"`
		Reason  string `json:"reason,omitempty"`
	}{name, version, state, reason}
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ReadCloser reads from one reader and closes another.
type ReadCloser struct {
	io.Reader
	io.Closer
}

// ResponseBuffer holds an answer of the proxy for the sidecar to edit: an
// http.ResponseWriter that keeps its status (Code), headers and body
// (Body).
type ResponseBuffer struct {
	Code int
	Body bytes.Buffer

	header http.Header
	wrote  bool
}

// NewResponseBuffer returns an empty buffer, its status 200 until written.
func NewResponseBuffer() *ResponseBuffer {
	return &ResponseBuffer{Code: http.StatusOK, header: make(http.Header)}
}

// Header returns the headers of the answer.
func (b *ResponseBuffer) Header() http.Header { return b.header }

// WriteHeader records the status of the answer, the first one written.
func (b *ResponseBuffer) WriteHeader(code int) {
	if !b.wrote {
		b.Code, b.wrote = code, true
	}
}

// Write appends to the body of the answer.
func (b *ResponseBuffer) Write(p []byte) (int, error) {
	b.wrote = true
	return b.Body.Write(p)
}
