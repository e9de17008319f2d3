package controllable_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/sidecar/controllable"
	"github.com/mergectl/react-triton/sidecar/internal/restapi"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/limits"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// fuzzTargets are the inference routes FuzzHTTPInfer sends to, by the
// fuzzed selector: controllable models, a version that does not exist, and
// a model that passes through to Triton.
var fuzzTargets = []struct {
	path         string
	controllable bool
}{
	{"/v2/models/multi/infer", true},
	{"/v2/models/single/versions/1/infer", true},
	{"/v2/models/multi/versions/2/infer", true},
	{"/v2/models/head_a/infer", false},
	{"/v2/models/nosuchmodel/infer", false},
}

// FuzzHTTPInfer sends arbitrary bodies, Inference-Header-Content-Length
// values and react-preference / react-preset headers through the
// sidecar's HTTP handler (in-process) in front of the fake Triton. It must
// never panic, always answer one of the statuses the sidecar and Triton
// use, answer errors as JSON, and let nothing whose framing is malformed
// reach Triton.
func FuzzHTTPInfer(f *testing.F) {
	valid, _, _ := tritonhttp.EncodeRequest(sidecartest.CtlRequest("", "f", sidecartest.CtlBatch), false)
	binary, hl, _ := tritonhttp.EncodeRequest(sidecartest.CtlRequest("", "f", sidecartest.CtlBatch[:6], "logits_a"), true)
	head, headHL, _ := tritonhttp.EncodeRequest(sidecartest.HeadRequest("", "f", []float64{1, 2, 3, 4}), true)
	f.Add(valid, "", "", "", uint8(0))
	f.Add(valid, "", "a=1,b=1,c=1", "", uint8(0))
	f.Add(valid, "", "", "b_first", uint8(1))
	f.Add(valid, "", "none", "nope", uint8(2))
	f.Add(binary, strconv.Itoa(hl), "c=1", "", uint8(0))
	f.Add(binary, strconv.Itoa(hl+1000), "", "", uint8(0))
	f.Add(binary, "-1", "", "", uint8(3))
	f.Add(head, strconv.Itoa(headHL), "", "", uint8(3))
	f.Add(head, strconv.Itoa(headHL), "a=1", "", uint8(4))
	f.Add([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[9,3],"data":[]}]}`), "", "", "", uint8(0))
	f.Add([]byte(`{"inputs":`), "", "", "", uint8(3))

	h := sidecartest.StartHarness(f, nil)
	f.Fuzz(func(t *testing.T, body []byte, headerLength, preference, preset string, target uint8) {
		tg := fuzzTargets[int(target)%len(fuzzTargets)]
		req := httptest.NewRequest(http.MethodPost, tg.path, strings.NewReader(string(body)))
		if headerLength != "" {
			req.Header.Set(restapi.HeaderContentLength, headerLength)
		}
		if preference != "" {
			req.Header.Set("React-Preference", preference)
		}
		if preset != "" {
			req.Header.Set("React-Preset", preset)
		}
		beforeHTTP, beforeRPC := h.Fake.HTTPCalls(), h.Fake.TotalCalls()
		rec := httptest.NewRecorder()
		h.HTTP.ServeHTTP(rec, req)

		code := rec.Code
		if !slices.Contains([]int{200, 400, 404, 413, 429, 500, 501, 502, 503}, code) {
			t.Fatalf("status %d: %s", code, rec.Body.Bytes())
		}
		if code != 200 {
			var e struct{ Error string }
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("status %d with a body that is not a JSON error: %q", code, rec.Body.Bytes())
			}
		}
		// The harness's limits: 8 inputs, outputs and parameters.
		opt := tritonhttp.Options{HeaderLength: headerLength, HasHeaderLength: headerLength != "",
			Limits: tritonhttp.Limits{MaxInputs: 8, MaxOutputs: 8, MaxParameters: 8}}
		if _, err := tritonhttp.ParseRequestWith(context.Background(), body, opt); err != nil || len(body) > 64<<10 {
			var te *tritonhttp.TritonError
			switch {
			case len(body) > 64<<10:
				if code != 413 {
					t.Fatalf("a body over the limit answered %d", code)
				}
			case errors.As(err, &te):
				if code != te.Status {
					t.Fatalf("%v answered %d, not Triton's %d", err, code, te.Status)
				}
			case code != 400 && code != 413:
				t.Fatalf("malformed body (%v) answered %d", err, code)
			}
			if h.Fake.HTTPCalls() != beforeHTTP || h.Fake.TotalCalls() != beforeRPC {
				t.Fatalf("a malformed body (%v) reached Triton", err)
			}
			return
		}
		if tg.controllable && h.Fake.HTTPCalls() != beforeHTTP {
			t.Fatal("a request for a controllable model reached Triton's HTTP endpoint")
		}
		if tg.controllable && code == 200 {
			p := rec.Header().Get("React-Preference")
			if p == "" {
				t.Fatal("a controllable answer without react-preference")
			}
			resp, err := tritonhttp.DecodeResponse(rec.Body.Bytes(), rec.Header().Get(restapi.HeaderContentLength))
			if err != nil {
				t.Fatalf("undecodable answer: %v", err)
			}
			if got := resp.GetParameters()["react-preference"].GetStringParam(); got != p {
				t.Fatalf("react-preference parameter %q, header %q", got, p)
			}
		}
	})
}

// FuzzModelName: stringField reads, without decoding the message, the same
// model name (field 1) and request id (field 3) as proto decoding of a real
// message, whenever that decoding succeeds; limits.CheckCounts never lets through
// a request whose decoded counts pass the limits; neither panics.
func FuzzModelName(f *testing.F) {
	add := func(m proto.Message) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	add(sidecartest.CtlRequest("multi", "id-1", sidecartest.CtlBatch))
	add(&tritonpb.ModelInferRequest{ModelName: "a", ModelVersion: "1", Id: "x", Parameters: map[string]*tritonpb.InferParameter{
		"react-preference": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "a=1"}}}})
	add(&tritonpb.ModelMetadataRequest{Name: "single", Version: "1"})
	add(&tritonpb.ModelStatisticsRequest{})
	twice := protowire.AppendTag(nil, 1, protowire.BytesType)
	twice = protowire.AppendString(twice, "first")
	twice = protowire.AppendTag(twice, 3, protowire.BytesType)
	twice = protowire.AppendString(twice, "id")
	twice = protowire.AppendTag(twice, 1, protowire.BytesType)
	twice = protowire.AppendString(twice, "last")
	f.Add(twice)
	wrongType := protowire.AppendTag(nil, 1, protowire.VarintType)
	wrongType = protowire.AppendVarint(wrongType, 7)
	f.Add(wrongType)
	group := protowire.AppendTag(nil, 9, protowire.StartGroupType)
	group = protowire.AppendTag(group, 1, protowire.BytesType)
	group = protowire.AppendString(group, "inner")
	group = protowire.AppendTag(group, 9, protowire.EndGroupType)
	group = protowire.AppendTag(group, 1, protowire.BytesType)
	group = protowire.AppendString(group, "outer")
	f.Add(group)
	f.Add([]byte("\x0a\x05multi\x2a\x02\x0a\x05"))
	f.Add([]byte{})
	for _, r := range overLimits("single") {
		add(r)
	}

	f.Fuzz(func(t *testing.T, b []byte) {
		name, id := controllable.ModelName(b), controllable.StringField(b, 3)
		var req tritonpb.ModelInferRequest
		if proto.Unmarshal(b, &req) == nil {
			if name != req.GetModelName() || id != req.GetId() {
				t.Fatalf("stringField read name %q, id %q; proto decoded %q, %q", name, id, req.GetModelName(), req.GetId())
			}
		}
		var md tritonpb.ModelMetadataRequest
		if proto.Unmarshal(b, &md) == nil && name != md.GetName() {
			t.Fatalf("stringField read name %q; ModelMetadataRequest decoded %q", name, md.GetName())
		}
		// limits.CheckCounts, without decoding, lets through only what decodes
		// within the limits (the wire may list a map key twice, which
		// decoding keeps once: it may refuse more, never less).
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		for _, lim := range []tritonhttp.Limits{{MaxInputs: 1, MaxOutputs: 1, MaxParameters: 1}, {MaxInputs: 2, MaxOutputs: 3, MaxParameters: 2}} {
			if limits.CheckCounts(b, lim) != nil {
				continue
			}
			over := len(req.GetInputs()) > lim.MaxInputs || len(req.GetOutputs()) > lim.MaxOutputs || len(req.GetParameters()) > lim.MaxParameters
			for _, in := range req.GetInputs() {
				over = over || len(in.GetParameters()) > lim.MaxParameters
			}
			for _, o := range req.GetOutputs() {
				over = over || len(o.GetParameters()) > lim.MaxParameters
			}
			if over {
				t.Fatalf("limits.CheckCounts let through, under %+v, a request of %d inputs, %d outputs, %d parameters", lim, len(req.GetInputs()), len(req.GetOutputs()), len(req.GetParameters()))
			}
		}
	})
}
