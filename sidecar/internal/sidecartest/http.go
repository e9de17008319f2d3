package sidecartest

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/mergectl/react-triton/sidecar/internal/restapi"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// HTTPDo sends a request to the sidecar's HTTP listener and returns the
// response with its body read.
func HTTPDo(t *testing.T, method, url string, body []byte, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// InferBody encodes a request as an HTTP body, with its headers.
func InferBody(t *testing.T, req *tritonpb.ModelInferRequest, binary bool) ([]byte, map[string]string) {
	t.Helper()
	body, hl, err := tritonhttp.EncodeRequest(req, binary)
	if err != nil {
		t.Fatal(err)
	}
	hdr := map[string]string{"Content-Type": "application/json"}
	if hl >= 0 {
		hdr[restapi.HeaderContentLength] = strconv.Itoa(hl)
		hdr["Content-Type"] = "application/octet-stream"
	}
	return body, hdr
}

// BinaryInferBody is a Triton HTTP inference request with the binary tensor
// extension: a JSON header of the given length, then raw little-endian FP32
// bytes, some of them not valid UTF-8.
func BinaryInferBody() (body []byte, headerLen int) {
	header := []byte(`{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}}]}`)
	tensor := []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0xff, 0xff, 0xff, 0x7f, 0x00, 0x00, 0x80, 0xff}
	return append(header, tensor...), len(header)
}
