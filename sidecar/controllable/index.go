package controllable

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/mergectl/react-triton/sidecar/internal/restapi"
)

// maxIndexRequest is how much of a repository index request httpIndex
// reads to learn whether only ready models are asked for; the body goes on
// to Triton whole, whatever its length.
const maxIndexRequest = 64 << 10

// httpIndex answers POST /v2/repository/index: Triton's own answer, with
// the controllable models put in, in place of any model they shadow. The
// request goes to Triton as it came, so that Triton parses it and answers
// a malformed one itself (500 and its message); Triton's entries are kept
// byte for byte, in its order, and the controllable models' are written as
// Triton writes entries (name, version, state, then reason when there is
// one; empty fields left out). An answer other than a 200 JSON array
// reaches the client unchanged.
func (ms *Models) httpIndex(pass http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		head, _ := io.ReadAll(io.LimitReader(r.Body, maxIndexRequest))
		r.Body = restapi.ReadCloser{Reader: io.MultiReader(bytes.NewReader(head), r.Body), Closer: r.Body}
		// The answer is edited: ask for it uncompressed.
		r.Header.Del("Accept-Encoding")
		rec := restapi.NewResponseBuffer()
		pass.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code == http.StatusOK && rec.Header().Get("Content-Encoding") == "" {
			var req struct {
				Ready bool `json:"ready"`
			}
			_ = json.Unmarshal(head, &req) // Triton took it: a body it reads as not ready-only may not parse here
			if edited, err := ms.spliceIndex(body, req.Ready); err == nil {
				body = edited
				rec.Header().Set("Content-Length", strconv.Itoa(len(body)))
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

// spliceIndex puts the controllable models into Triton's index, a JSON
// array.
func (ms *Models) spliceIndex(body []byte, readyOnly bool) ([]byte, error) {
	var entries []json.RawMessage
	if err := json.Unmarshal(body, &entries); err != nil {
		return nil, err
	}
	st := ms.state.Load()
	out := []byte{'['}
	add := func(e []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	for _, e := range entries {
		var name struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		}
		if json.Unmarshal(e, &name) == nil && st.replaces(name.Name, name.Version) {
			continue
		}
		add(e)
	}
	for _, m := range ms.mergeIndex(nil, readyOnly) {
		e, err := restapi.IndexEntry(m.GetName(), m.GetVersion(), m.GetState(), m.GetReason())
		if err != nil {
			return nil, err
		}
		add(e)
	}
	return append(out, ']'), nil
}
