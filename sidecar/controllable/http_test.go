package controllable_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/restapi"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

func TestModelsHTTPInfer(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	tests := []struct {
		name      string
		binary    bool
		header    map[string]string
		params    map[string]string
		outputs   []string
		weights   []float64
		canonical string
	}{
		{name: "json default", weights: []float64{1, 0, 0}, canonical: "a=1"},
		{name: "binary default", binary: true, weights: []float64{1, 0, 0}, canonical: "a=1"},
		{name: "json header", header: map[string]string{"React-Preference": "a=1,b=1,c=1"},
			weights: []float64{0.333334, 0.333333, 0.333333}, canonical: "a=0.333334,b=0.333333,c=0.333333"},
		{name: "binary lower-case header preset", binary: true, header: map[string]string{"react-preset": "b_first"},
			weights: []float64{0.2, 0.8, 0}, canonical: "a=0.2,b=0.8"},
		{name: "parameter", params: map[string]string{"react-preference": "c=1"}, weights: []float64{0, 0, 1}, canonical: "c=1"},
		{name: "header beats parameter", header: map[string]string{"React-Preference": "b=1"}, params: map[string]string{"react-preference": "c=1"},
			weights: []float64{0, 1, 0}, canonical: "b=1"},
		{name: "none", binary: true, header: map[string]string{"React-Preference": "none"}, canonical: "none"},
		{name: "subset of outputs", binary: true, outputs: []string{"logits_c", "logits_a"}, weights: []float64{1, 0, 0}, canonical: "a=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := sidecartest.CtlRequest("multi", "h-"+tt.name, sidecartest.CtlBatch, tt.outputs...)
			req.Parameters = map[string]*tritonpb.InferParameter{}
			for k, v := range tt.params {
				req.Parameters[k] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: v}}
			}
			body, hdr := sidecartest.InferBody(t, req, tt.binary)
			for k, v := range tt.header {
				hdr[k] = v
			}
			before := h.Fake.HTTPCalls()
			resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", body, hdr)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, out)
			}
			if h.Fake.HTTPCalls() != before {
				t.Error("a controllable request reached Triton's HTTP endpoint")
			}
			if got := resp.Header.Get("React-Preference"); got != tt.canonical {
				t.Errorf("react-preference header %q, want %q", got, tt.canonical)
			}
			hl := resp.Header.Get(restapi.HeaderContentLength)
			if tt.binary != (hl != "") {
				t.Errorf("binary %v, but Inference-Header-Content-Length %q", tt.binary, hl)
			}
			if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(out)) {
				t.Errorf("Content-Length %q for %d bytes", cl, len(out))
			}
			dec, err := tritonhttp.DecodeResponse(out, hl)
			if err != nil {
				t.Fatalf("decoding %q: %v", out, err)
			}
			if dec.GetId() != "h-"+tt.name || dec.GetModelName() != "multi" || dec.GetModelVersion() != "1" {
				t.Errorf("id %q model %q version %q", dec.GetId(), dec.GetModelName(), dec.GetModelVersion())
			}
			if p := dec.GetParameters()["react-preference"].GetStringParam(); p != tt.canonical {
				t.Errorf("react-preference parameter %q", p)
			}
			want := tt.outputs
			if want == nil {
				want = []string{"logits_a", "logits_b", "logits_c"}
			}
			var names []string
			for _, o := range dec.GetOutputs() {
				names = append(names, o.GetName())
			}
			if !slices.Equal(names, want) {
				t.Fatalf("outputs %v, want %v", names, want)
			}
			for i, name := range want {
				if err := sidecartest.CheckLogits(h.Scenario, strings.TrimPrefix(name, "logits_"), tt.weights, sidecartest.CtlBatch, dec.GetRawOutputContents()[i]); err != nil {
					t.Error(err)
				}
			}
			if tt.outputs != nil && h.Fake.LastRequest("head_b").GetId() == "h-"+tt.name {
				t.Error("head_b was called for outputs it does not produce")
			}
		})
	}

	t.Run("pass-through", func(t *testing.T) {
		body, hdr := sidecartest.InferBody(t, sidecartest.HeadRequest("head_a", "p", []float64{1, 2, 3, 4}), true)
		before := h.Fake.HTTPCalls()
		resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/head_a/infer", body, hdr)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Fake-Triton") != "1" || h.Fake.HTTPCalls() != before+1 {
			t.Fatalf("status %d, %s; want Triton's answer", resp.StatusCode, out)
		}
		if resp.Header.Get("React-Preference") != "" {
			t.Error("a pass-through answer has a react-preference header")
		}
	})

	t.Run("pass-through chunked", func(t *testing.T) {
		body, hdr := sidecartest.InferBody(t, sidecartest.HeadRequest("head_a", "p", []float64{1, 2, 3, 4}), true)
		// A reader of unknown length: the client sends the body chunked.
		req, err := http.NewRequest(http.MethodPost, h.HTTPURL+"/v2/models/head_a/infer", io.MultiReader(bytes.NewReader(body)))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Fake-Triton") != "1" {
			t.Fatalf("chunked pass-through: %d %s", resp.StatusCode, out)
		}
		dec, err := tritonhttp.DecodeResponse(out, resp.Header.Get(restapi.HeaderContentLength))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := faketriton.Decode("FP32", dec.GetRawOutputContents()[0])
		if want := faketriton.Apply(h.Scenario.Head("a"), []float64{1, 2, 3, 4}); !closeTo(got, want, 1e-6) {
			t.Errorf("chunked pass-through: %v, want %v", got, want)
		}
	})

	t.Run("errors", func(t *testing.T) {
		body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "e", sidecartest.CtlBatch), false)
		tests := []struct {
			path   string
			header map[string]string
			code   int
			msg    string
		}{
			{"/v2/models/multi/infer", map[string]string{"React-Preference": "a=1,q=1"}, http.StatusBadRequest, "(known: a, b, c) (presets: b_first)"},
			{"/v2/models/multi/infer", map[string]string{"React-Preset": "nope"}, http.StatusBadRequest, "presets: b_first"},
			{"/v2/models/multi/infer", map[string]string{"React-Preference": ""}, http.StatusBadRequest, "react-preference header"},
			{"/v2/models/multi/versions/2/infer", nil, http.StatusNotFound, "no version 2"},
			{"/v2/models/multi/versions/1/infer", nil, http.StatusOK, ""},
		}
		for _, tt := range tests {
			hd := map[string]string{}
			for k, v := range hdr {
				hd[k] = v
			}
			for k, v := range tt.header {
				hd[k] = v
			}
			resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+tt.path, body, hd)
			if resp.StatusCode != tt.code {
				t.Errorf("%s %v: status %d (%s), want %d", tt.path, tt.header, resp.StatusCode, out, tt.code)
				continue
			}
			if tt.code != http.StatusOK {
				var e struct{ Error string }
				if err := json.Unmarshal(out, &e); err != nil || !strings.Contains(e.Error, tt.msg) {
					t.Errorf("%s: body %s, want {\"error\": ...%s...}", tt.path, out, tt.msg)
				}
			}
		}
	})
}

// TestModelsHTTPPassThroughStripsReactHeaders: ReACT's keys never reach
// Triton (control.KeyPrefix: "the sidecar strips all such keys before
// calling Triton"), on HTTP as on gRPC.
func TestModelsHTTPPassThroughStripsReactHeaders(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	body, hdr := sidecartest.InferBody(t, sidecartest.HeadRequest("head_a", "p", []float64{1, 2, 3, 4}), true)
	hdr["React-Preference"] = "a=1"
	hdr["X-Trace"] = "kept"
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/head_a/infer", body, hdr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	got := h.Fake.LastHTTPHeader()
	if got.Get("X-Trace") != "kept" {
		t.Fatalf("the fake did not record the request's headers: %v", got)
	}
	if v := got.Get("React-Preference"); v != "" {
		t.Errorf("React-Preference %q reached Triton through the HTTP pass-through", v)
	}
}

// TestModelsHTTPMalformed: every inference body, for any model, is checked
// before anything reaches Triton: a malformed one is answered 400, a too
// large one 413, an unknown encoding 501, and counted as rejected.
func TestModelsHTTPMalformed(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	header := `{"inputs":[{"name":"x","datatype":"FP32","shape":[4,3],"parameters":{"binary_data_size":48}}]}`
	data := faketriton.Encode("FP32", sidecartest.CtlBatch)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}` + strings.Repeat(" ", 200<<10)))
	zw.Close()
	tests := []struct {
		name   string
		body   []byte
		header map[string]string
		code   int
		reason string
	}{
		{"header length beyond the body", []byte(header), map[string]string{restapi.HeaderContentLength: strconv.Itoa(len(header) + 100)}, 400, "malformed"},
		// Triton reads "4x" as 4, and parses `{"in` (its answer: 500 and
		// rapidjson's reason and offset, as for the other JSON errors).
		{"header length with letters", append([]byte(header), data...), map[string]string{restapi.HeaderContentLength: "4x"}, 500, "malformed"},
		{"JSON garbage", []byte(`{"inputs":[{"name":"x",`), nil, 500, "malformed"},
		{"not JSON", []byte("hello"), nil, 500, "malformed"},
		{"too many inputs", []byte(`{"inputs":[` + strings.Repeat(`{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3]},`, 8) +
			`{"name":"y","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}`), nil, 413, "too_many_inputs"},
		{"too many outputs", []byte(`{"inputs":[],"outputs":[` + strings.Repeat(`{"name":"o"},`, 8) + `{"name":"p"}]}`), nil, 413, "too_many_outputs"},
		{"too many parameters", []byte(`{"inputs":[],"parameters":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1}}`), nil, 413, "too_many_parameters"},
		{"byte size disagreeing with shape", append([]byte(strings.Replace(header, "48", "44", 1)), data[:44]...),
			map[string]string{restapi.HeaderContentLength: strconv.Itoa(len(header))}, 400, "malformed"},
		{"binary data beyond the sizes", append(append([]byte(header), data...), 0, 0, 0, 0),
			map[string]string{restapi.HeaderContentLength: strconv.Itoa(len(header))}, 400, "malformed"},
		{"JSON data count", []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[2,3],"data":[1,2,3]}]}`), nil, 400, "malformed"},
		{"over the limit", []byte(`{"inputs":[]}` + strings.Repeat(" ", 65<<10)), nil, 413, "too_large"},
		{"over the limit once decompressed", gz.Bytes(), map[string]string{"Content-Encoding": "gzip"}, 413, "too_large"},
		{"unknown encoding", []byte(`{}`), map[string]string{"Content-Encoding": "br"}, 501, "encoding"},
	}
	for _, model := range []string{"multi", "head_a"} {
		for _, tt := range tests {
			t.Run(model+"/"+tt.name, func(t *testing.T) {
				beforeHTTP, beforeRPC := h.Fake.HTTPCalls(), h.Fake.TotalCalls()
				rejected, _ := sidecartest.MetricValue(sidecartest.Scrape(t, h.Metrics.Handler()), "react_rejected_requests_total", map[string]string{"protocol": "http", "reason": tt.reason})
				resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/"+model+"/infer", tt.body, tt.header)
				if resp.StatusCode != tt.code {
					t.Errorf("status %d (%s), want %d", resp.StatusCode, out, tt.code)
				}
				var e struct{ Error string }
				if err := json.Unmarshal(out, &e); err != nil || e.Error == "" {
					t.Errorf("body %q is not a JSON error", out)
				}
				if h.Fake.HTTPCalls() != beforeHTTP || h.Fake.TotalCalls() != beforeRPC {
					t.Error("a refused request reached Triton")
				}
				if tt.code == 501 && resp.Header.Get("Accept-Encoding") == "" {
					t.Error("501 without Accept-Encoding")
				}
				after, _ := sidecartest.MetricValue(sidecartest.Scrape(t, h.Metrics.Handler()), "react_rejected_requests_total", map[string]string{"protocol": "http", "reason": tt.reason})
				if after != rejected+1 {
					t.Errorf("react_rejected_requests_total{reason=%q} went from %v to %v", tt.reason, rejected, after)
				}
			})
		}
	}
	// A gzip body within the limit is served.
	var ok bytes.Buffer
	zw = gzip.NewWriter(&ok)
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "gz", sidecartest.CtlBatch), false)
	zw.Write(body)
	zw.Close()
	hdr["Content-Encoding"] = "gzip"
	if resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", ok.Bytes(), hdr); resp.StatusCode != http.StatusOK {
		t.Errorf("gzip body: %d %s", resp.StatusCode, out)
	}
}

// getJSON GETs (or POSTs body to) url and decodes the JSON answer with
// numbers kept as json.Number.
func getJSON(t *testing.T, method, url, body string) (int, any) {
	t.Helper()
	resp, out := sidecartest.HTTPDo(t, method, url, []byte(body), nil)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode == 200 && ct != "application/json" {
		t.Errorf("%s: Content-Type %q", url, ct)
	}
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %q is not JSON: %v", url, out, err)
	}
	return resp.StatusCode, v
}

// jget walks a decoded JSON value: keys for objects, ints for arrays.
func jget(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// jnum returns a JSON number as an int64, failing when it is anything else
// (a string, as protojson writes 64-bit integers, included).
func jnum(t *testing.T, what string, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Errorf("%s = %#v, want a JSON number", what, v)
		return -1
	}
	i, err := n.Int64()
	if err != nil {
		t.Errorf("%s = %v: %v", what, n, err)
	}
	return i
}

func TestModelsHTTPModelAPI(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	for i := 1; i <= 2; i++ {
		body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "s", sidecartest.CtlBatch[:3*i]), true)
		if resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", body, hdr); resp.StatusCode != 200 {
			t.Fatalf("infer: %d %s", resp.StatusCode, out)
		}
	}
	if _, err := h.Client.ModelInfer(context.Background(), sidecartest.CtlRequest("multi", "s", sidecartest.CtlBatch[:3*4])); err != nil {
		t.Fatal(err)
	}

	code, md := getJSON(t, http.MethodGet, h.HTTPURL+"/v2/models/multi", "")
	if code != 200 || jget(md, "name") != "multi" || jget(md, "platform") != "react" || jget(md, "versions", 0) != "1" ||
		jget(md, "outputs", 2, "name") != "logits_c" || jget(md, "inputs", 0, "datatype") != "FP32" {
		t.Errorf("metadata: %d %v", code, md)
	}
	if jnum(t, "inputs[0].shape[0]", jget(md, "inputs", 0, "shape", 0)) != -1 || jnum(t, "inputs[0].shape[1]", jget(md, "inputs", 0, "shape", 1)) != 3 {
		t.Errorf("metadata input shape %v", jget(md, "inputs", 0, "shape"))
	}
	code, md = getJSON(t, http.MethodGet, h.HTTPURL+"/v2/models/multi/versions/1", "")
	if code != 200 || jget(md, "name") != "multi" {
		t.Errorf("metadata of version 1: %d %v", code, md)
	}
	if code, _ := getJSON(t, http.MethodGet, h.HTTPURL+"/v2/models/multi/versions/2", ""); code != 404 {
		t.Errorf("metadata of version 2: %d", code)
	}

	code, cfg := getJSON(t, http.MethodGet, h.HTTPURL+"/v2/models/multi/config", "")
	if code != 200 || jget(cfg, "name") != "multi" || jget(cfg, "backend") != "react" || jget(cfg, "input", 0, "data_type") != "TYPE_FP32" ||
		jget(cfg, "output", 1, "name") != "logits_b" || jget(cfg, "parameters", "react.tasks", "string_value") != "a,b,c" {
		t.Errorf("config: %d %v", code, cfg)
	}
	if jnum(t, "max_batch_size", jget(cfg, "max_batch_size")) != 8 || jnum(t, "input[0].dims[0]", jget(cfg, "input", 0, "dims", 0)) != 3 {
		t.Errorf("config numbers: %v", cfg)
	}

	code, st := getJSON(t, http.MethodGet, h.HTTPURL+"/v2/models/multi/stats", "")
	s := jget(st, "model_stats", 0)
	if code != 200 || jget(s, "name") != "multi" || jget(s, "version") != "1" {
		t.Errorf("stats: %d %v", code, st)
	}
	if n := jnum(t, "inference_count", jget(s, "inference_count")); n != 1+2+4 {
		t.Errorf("inference_count %d, want 7", n)
	}
	if n := jnum(t, "execution_count", jget(s, "execution_count")); n != 3 {
		t.Errorf("execution_count %d, want 3", n)
	}
	if n := jnum(t, "success.count", jget(s, "inference_stats", "success", "count")); n != 3 {
		t.Errorf("success.count %d", n)
	}
	if n := jnum(t, "queue.count", jget(s, "inference_stats", "queue", "count")); n != 3 {
		t.Errorf("queue.count %d", n)
	}
	if jnum(t, "success.ns", jget(s, "inference_stats", "success", "ns")) <= 0 || jnum(t, "last_inference", jget(s, "last_inference")) <= 0 {
		t.Errorf("stats times: %v", s)
	}
	jnum(t, "fail.count", jget(s, "inference_stats", "fail", "count"))

	code, all := getJSON(t, http.MethodGet, h.HTTPURL+"/v2/models/stats", "")
	names := map[string]int{}
	if arr, ok := jget(all, "model_stats").([]any); code == 200 && ok {
		for _, e := range arr {
			names[fmt.Sprint(jget(e, "name"))]++
			if jget(e, "name") == "multi" && jnum(t, "multi inference_count", jget(e, "inference_count")) != 7 {
				t.Errorf("all stats: multi is not the sidecar's: %v", e)
			}
		}
	}
	for _, n := range []string{"backbone", "head_a", "multi", "single"} {
		if names[n] != 1 {
			t.Errorf("all stats: %d entries for %s (%d %v)", names[n], n, code, all)
		}
	}

	code, idx := getJSON(t, http.MethodPost, h.HTTPURL+"/v2/repository/index", "")
	arr, ok := idx.([]any)
	if code != 200 || !ok {
		t.Fatalf("index: %d %v; want a bare JSON array", code, idx)
	}
	names = map[string]int{}
	for _, e := range arr {
		names[fmt.Sprint(jget(e, "name"))]++
		if jget(e, "name") == "single" && (jget(e, "state") != "READY" || jget(e, "version") != "1") {
			t.Errorf("index entry %v", e)
		}
	}
	if names["multi"] != 1 || names["single"] != 1 || names["head_a"] != 1 {
		t.Errorf("index: %v", arr)
	}
	if code, _ := getJSON(t, http.MethodPost, h.HTTPURL+"/v2/repository/index", `{"ready": tru`); code != 500 {
		t.Errorf("index with a bad body: %d, want Triton's 500", code)
	}
	if code, v := getJSON(t, http.MethodPost, h.HTTPURL+"/v2/repository/index", `{"ready": true}`); code != 200 || len(v.([]any)) != len(arr) {
		t.Errorf("ready index: %d %v", code, v)
	}

	ready := func(model string) int {
		resp, _ := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/models/"+model+"/ready", nil, nil)
		return resp.StatusCode
	}
	if ready("multi") != 200 {
		t.Error("multi not ready")
	}
	h.Fake.SetReady("head_b", false)
	if ready("multi") != 400 || ready("single") != 200 {
		t.Errorf("with head_b not ready: multi %d, single %d; want 400, 200", ready("multi"), ready("single"))
	}
	h.Fake.SetReady("head_b", true)

	if resp, _ := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/models/multi/nope", nil, nil); resp.StatusCode != 404 {
		t.Errorf("unknown action: %d", resp.StatusCode)
	}
	if resp, _ := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/health/ready", nil, nil); resp.StatusCode == http.StatusServiceUnavailable {
		t.Errorf("health/ready: %d once the models are built", resp.StatusCode)
	}
}

// TestModelsHTTPWhileLoading: until the controllable models are built,
// /v2/health/ready and the controllable models answer 503 (docs/contracts.md:
// "controllable models not built yet (start-up) | UNAVAILABLE | 503").
func TestModelsHTTPWhileLoading(t *testing.T) {
	h := sidecartest.NewHarness(t, nil)
	resp, out := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/health/ready", nil, nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("health/ready while loading: %d %s", resp.StatusCode, out)
	}
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "l", sidecartest.CtlBatch), false)
	codes := map[string]int{}
	resp, out = sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", body, hdr)
	codes["infer"] = resp.StatusCode
	if !strings.Contains(string(out), "not loaded yet") {
		t.Errorf("infer while loading: %s", out)
	}
	for _, path := range []string{"", "/config", "/stats"} {
		resp, _ := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/models/multi"+path, nil, nil)
		codes["GET"+path] = resp.StatusCode
	}
	for what, code := range codes {
		if code != http.StatusServiceUnavailable {
			t.Errorf("%s while loading: %d, want 503", what, code)
		}
	}
}

// TestModelsTritonGone: once Triton goes away, controllable requests fail
// with UNAVAILABLE / 502 saying that Triton is unavailable, never where it
// is (the log says), and the sidecar keeps running.
func TestModelsTritonGone(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	h.Fake.Stop()
	addr, _, _ := net.SplitHostPort(h.Fake.Addr)
	hidden := func(msg string) bool { return strings.Contains(msg, "upstream Triton") && !strings.Contains(msg, addr) }
	_, err := h.Client.ModelInfer(context.Background(), sidecartest.CtlRequest("multi", "g", sidecartest.CtlBatch))
	if st := status.Convert(err); st.Code() != grpccodes.Unavailable || !hidden(st.Message()) {
		t.Errorf("gRPC with Triton gone: %v", err)
	}
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "g", sidecartest.CtlBatch), false)
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", body, hdr)
	if resp.StatusCode != http.StatusBadGateway || !hidden(string(out)) {
		t.Errorf("HTTP with Triton gone: %d %s", resp.StatusCode, out)
	}
	if r, err := h.Client.ModelReady(context.Background(), &tritonpb.ModelReadyRequest{Name: "multi"}); err == nil && r.GetReady() {
		t.Error("multi ready with Triton gone")
	} else if err != nil && !hidden(err.Error()) {
		t.Errorf("ModelReady with Triton gone: %v, want it to say upstream Triton without %s", err, addr)
	}
	// The calls the sidecar makes for the model API say so as the
	// pass-through does.
	_, err = h.Client.ModelStatistics(context.Background(), &tritonpb.ModelStatisticsRequest{})
	if st := status.Convert(err); st.Code() != grpccodes.Unavailable || !hidden(st.Message()) {
		t.Errorf("ModelStatistics (all) with Triton gone: %v", err)
	}
	_, err = h.Client.RepositoryIndex(context.Background(), &tritonpb.RepositoryIndexRequest{})
	if st := status.Convert(err); st.Code() != grpccodes.Unavailable || !hidden(st.Message()) {
		t.Errorf("RepositoryIndex with Triton gone: %v", err)
	}
	// A stream opens its upstream stream at once.
	stream, err := h.Client.ModelStreamInfer(context.Background())
	if err == nil {
		_, err = stream.Recv()
	}
	if st := status.Convert(err); st.Code() != grpccodes.Unavailable || !hidden(st.Message()) {
		t.Errorf("ModelStreamInfer with Triton gone: %v", err)
	}
	// The readiness the sidecar asks Triton for over HTTP, which no proxy
	// scrubs, says so too.
	for _, path := range []string{"/v2/models/stats", "/v2/models/multi/ready"} {
		resp, out := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+path, nil, nil)
		if resp.StatusCode != http.StatusBadGateway || !hidden(string(out)) {
			t.Errorf("GET %s with Triton gone: %d %s", path, resp.StatusCode, out)
		}
	}
	// The HTTP index is Triton's HTTP answer, edited: the fake's HTTP
	// endpoint, still up, answers it.
	resp, out = sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/repository/index", []byte("{}"), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `{"name":"single","version":"1","state":"READY"}`) {
		t.Errorf("POST /v2/repository/index with Triton's gRPC gone: %d %s", resp.StatusCode, out)
	}
	// The operator's log has the address.
	if !strings.Contains(h.Log.String(), h.Fake.Addr) {
		t.Errorf("the log does not name Triton's address %s:\n%s", h.Fake.Addr, h.Log.String())
	}
}

// TestModelsHTTPTritonErrors: Triton's own error on a backbone or head
// call keeps its meaning over HTTP, with the model called named.
func TestModelsHTTPTritonErrors(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	tests := []struct {
		model string
		err   error
		code  int
	}{
		{"backbone", status.Error(grpccodes.InvalidArgument, "bad input"), 400},
		{"head_b", status.Error(grpccodes.Internal, "head crashed"), 500},
		{"head_c", status.Error(grpccodes.NotFound, "unloaded"), 404},
	}
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "t", sidecartest.CtlBatch), true)
	for _, tt := range tests {
		h.Fake.Fail(tt.model, tt.err)
		resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", body, hdr)
		h.Fake.Fail(tt.model, nil)
		var e struct{ Error string }
		json.Unmarshal(out, &e)
		if resp.StatusCode != tt.code || !strings.Contains(e.Error, `"`+tt.model+`"`) || !strings.Contains(e.Error, status.Convert(tt.err).Message()) {
			t.Errorf("%s failing with %v: %d %s", tt.model, tt.err, resp.StatusCode, out)
		}
	}
}

// TestModelsHTTPHeadersReachTriton: an HTTP request to a controllable
// model, and GET /v2/models/stats (which the sidecar answers from Triton's
// ModelStatistics), pass the headers of triton.forward_headers to the
// Triton calls as gRPC metadata (by default an authorization header for
// Triton's restricted endpoints, tracing), but no other (a 12 KB cookie
// would make Triton refuse some calls at random), nor ReACT's own, nor the
// body's, nor the sampling opt-out header even when forward_headers
// lists it (it stays between the client and the sidecar).
func TestModelsHTTPHeadersReachTriton(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) {
		c.ForwardHeaders = append(slices.Clone(config.DefaultForwardHeaders), "X-No-Sample")
		c.Sections = fmt.Sprintf(`sampling:
  enabled: true
  fraction: 1
  replica: r-0
  opt_out_header: X-No-Sample
  checkpoint: {dir: %s, interval: 1h, window: 24h}
  backbone: {model: backbone, output: feature}
  models: [{name: single, task: a}]
  tasks: [{name: a, expert: {model: expert_a}}]
`, t.TempDir())
	})
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "m", sidecartest.CtlBatch), true)
	hdr["Authorization"] = "Bearer secret"
	hdr["X-No-Sample"] = "1"
	hdr["Traceparent"] = "00-abc-def-01"
	hdr["React-Preference"] = "a=1"
	hdr["Cookie"] = strings.Repeat("c", 3000)
	hdr["X-Other"] = "o"
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", body, hdr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	calls := map[string]metadata.MD{"backbone": h.Fake.LastMetadata("backbone"), "head_a": h.Fake.LastMetadata("head_a")}
	statsHdr := map[string]string{}
	for k, v := range hdr {
		if k != "Content-Type" && k != "Inference-Header-Content-Length" {
			statsHdr[k] = v
		}
	}
	if resp, out := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/models/stats", nil, statsHdr); resp.StatusCode != http.StatusOK {
		t.Fatalf("stats: %d %s", resp.StatusCode, out)
	}
	calls["statistics"] = h.Fake.StatisticsMetadata()
	for call, md := range calls {
		if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer secret" {
			t.Errorf("%s: authorization = %q", call, got)
		}
		if got := md.Get("traceparent"); len(got) != 1 {
			t.Errorf("%s: traceparent = %q", call, got)
		}
		for _, k := range []string{"react-preference", "inference-header-content-length", "content-length", "cookie", "x-other", "x-no-sample"} {
			if got := md.Get(k); len(got) != 0 {
				t.Errorf("%s: %s reached Triton: %q", call, k, got)
			}
		}
	}
}

// TestModelsHTTPForwardHeadersConfigured: triton.forward_headers replaces
// the default list; [] forwards none.
func TestModelsHTTPForwardHeadersConfigured(t *testing.T) {
	for _, tt := range []struct {
		list string
		want map[string]bool
	}{
		{"[X-Other]", map[string]bool{"x-other": true}},
		{"[]", map[string]bool{}},
	} {
		// As a reload of a file with the list applies it.
		h := sidecartest.StartHarness(t, nil)
		sidecartest.WriteFile(t, h.ConfigPath, strings.Replace(h.Config.YAML(), "triton:\n", "triton:\n  forward_headers: "+tt.list+"\n", 1))
		cfg, err := config.Load(h.ConfigPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Models.Reload(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("single", "m", sidecartest.CtlBatch), true)
		hdr["Authorization"] = "Bearer secret"
		hdr["X-Other"] = "o"
		if resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", body, hdr); resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		md := h.Fake.LastMetadata("backbone")
		for _, k := range []string{"authorization", "x-other"} {
			if got := len(md.Get(k)) > 0; got != tt.want[k] {
				t.Errorf("forward_headers %s: %s at Triton = %v", tt.list, k, got)
			}
		}
	}
}

// TestModelsHTTPCompressedPassThrough: a gzip-compressed infer request for
// a model the sidecar does not serve is checked (decompressed) and then
// relayed as it came: compressed, with its Content-Encoding, and answered.
func TestModelsHTTPCompressedPassThrough(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	req := sidecartest.CtlRequest("head_a", "z", nil)
	req.Inputs = []*tritonpb.ModelInferRequest_InferInputTensor{{Name: "feature", Datatype: "FP32", Shape: []int64{1, int64(h.Scenario.D)}}}
	req.RawInputContents = [][]byte{make([]byte, 4*h.Scenario.D)}
	req.Outputs = nil
	body, hdr := sidecartest.InferBody(t, req, true)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(body)
	zw.Close()
	hdr["Content-Encoding"] = "gzip"
	before := h.Fake.HTTPCalls()
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/head_a/infer", gz.Bytes(), hdr)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Fake-Triton") != "1" || h.Fake.HTTPCalls() != before+1 {
		t.Fatalf("compressed pass-through: %d %s (fake answered %q, %d calls)", resp.StatusCode, out, resp.Header.Get("X-Fake-Triton"), h.Fake.HTTPCalls()-before)
	}
	if got := h.Fake.LastHTTPHeader().Get("Content-Encoding"); got != "gzip" {
		t.Errorf("Content-Encoding at Triton = %q, want gzip (the body as it came)", got)
	}
}
