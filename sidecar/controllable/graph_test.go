package controllable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/restapi"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// ensembleModel is the fake's ensemble "ens": x → backbone → emb →
// head_a → logits, answering as Triton would (no correction).
func ensembleModel(sc *faketriton.Scenario) *faketriton.Model {
	head := sc.Head("a")
	return &faketriton.Model{
		Name: "ens", MaxBatchSize: faketriton.MaxBatch,
		Inputs:  []faketriton.Tensor{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}},
		Outputs: []faketriton.Tensor{{Name: "logits", Datatype: "FP32", Shape: []int64{-1, 2}}},
		Steps: []*tritonpb.ModelEnsembling_Step{
			faketriton.Step("backbone", map[string]string{"x": "x"}, map[string]string{"feature": "emb"}),
			faketriton.Step("head_a", map[string]string{"feature": "emb"}, map[string]string{"logits": "logits"}),
		},
		Infer: func(req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
			x, err := faketriton.Decode("FP32", req.GetRawInputContents()[0])
			if err != nil {
				return nil, err
			}
			z := sc.Feature("FP32", x)
			y := faketriton.Apply(head, z)
			return &tritonpb.ModelInferResponse{
				Outputs:           []*tritonpb.ModelInferResponse_InferOutputTensor{{Name: "logits", Datatype: "FP32", Shape: []int64{int64(len(x) / 3), 2}}},
				RawOutputContents: [][]byte{faketriton.Encode("FP32", y)},
			}, nil
		},
	}
}

// startGraphHarness is a harness whose configuration adds the graph-form
// model "ens", correcting "emb"; the ensemble serves versions (none: 1).
func startGraphHarness(t *testing.T, versions ...string) *sidecartest.Harness {
	t.Helper()
	h := sidecartest.NewHarness(t, func(c *sidecartest.CtlConfig) { c.MoreModels = "  - {name: ens, correct: emb}\n" })
	ens := ensembleModel(h.Scenario)
	ens.Versions = versions
	h.Fake.Put(ens)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Models.Start(ctx); err != nil {
		t.Fatalf("Start: %v\nlog:\n%s", err, h.Log.String())
	}
	return h
}

// TestGraphModelAPI: Triton answers the metadata, configuration and
// readiness of a graph-form model (the ensemble's own), over gRPC and
// HTTP; its statistics are the sidecar's, under the ensemble's version.
func TestGraphModelAPI(t *testing.T) {
	h := startGraphHarness(t)
	ctx := context.Background()
	direct := tritonpb.NewGRPCInferenceServiceClient(sidecartest.Dial(t, h.Fake.Addr))
	md, err := h.Client.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: "ens"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := direct.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: "ens"})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(md, want) || md.GetPlatform() != "ensemble" {
		t.Errorf("ModelMetadata(ens) = %v, want Triton's %v", md, want)
	}
	cfg, err := h.Client.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: "ens"})
	if err != nil {
		t.Fatal(err)
	}
	wantCfg, _ := direct.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: "ens"})
	if !proto.Equal(cfg, wantCfg) || len(cfg.GetConfig().GetEnsembleScheduling().GetStep()) != 2 {
		t.Errorf("ModelConfig(ens) = %v, want Triton's %v", cfg, wantCfg)
	}
	before := h.Fake.ReadyCalls("ens")
	if r, err := h.Client.ModelReady(ctx, &tritonpb.ModelReadyRequest{Name: "ens"}); err != nil || !r.GetReady() || h.Fake.ReadyCalls("ens") != before+1 {
		t.Errorf("ModelReady(ens) = %v, %v; want Triton's answer", r, err)
	}
	if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("ens", "s", sidecartest.CtlBatch)); err != nil {
		t.Fatal(err)
	}
	st, err := h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{Name: "ens"})
	if err != nil || len(st.GetModelStats()) != 1 || st.GetModelStats()[0].GetVersion() != "1" ||
		st.GetModelStats()[0].GetInferenceStats().GetSuccess().GetCount() != 1 {
		t.Errorf("ModelStatistics(ens) = %v, %v; want the sidecar's one request, version 1", st, err)
	}
	// HTTP: the fake serves no metadata route; the sidecar passes the
	// requests on rather than answering.
	for _, path := range []string{"/v2/models/ens", "/v2/models/ens/config", "/v2/models/ens/ready"} {
		calls := h.Fake.HTTPCalls()
		resp, _ := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+path, nil, nil)
		if resp.StatusCode != http.StatusNotFound || h.Fake.HTTPCalls() != calls+1 {
			t.Errorf("GET %s: %d, %d calls reached Triton; want Triton's 404", path, resp.StatusCode, h.Fake.HTTPCalls()-calls)
		}
	}
	resp, body := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/models/ens/stats", nil, nil)
	var stats map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &stats) != nil || jget(stats, "model_stats", 0, "version") != "1" {
		t.Errorf("GET stats: %d %s", resp.StatusCode, body)
	}
}

// TestGraphModelOtherVersions: of an ensemble with versions 1 and 2, the
// sidecar corrects version 2 (Triton's default); a request for version 1
// without a correction goes to Triton, which answers and counts it (its
// statistics and index entry are Triton's); with one, NOT_FOUND.
func TestGraphModelOtherVersions(t *testing.T) {
	h := startGraphHarness(t, "1", "2")
	ctx := context.Background()
	ctxNone := metadata.AppendToOutgoingContext(ctx, "react-preference", "none")
	v1 := sidecartest.CtlRequest("ens", "g", sidecartest.CtlBatch)
	v1.ModelVersion = "1"
	calls := h.Fake.Calls("ens")
	resp, err := h.Client.ModelInfer(ctxNone, v1)
	if err != nil {
		t.Fatal(err)
	}
	if h.Fake.Calls("ens") != calls+1 || h.Fake.LastRequest("ens").GetModelVersion() != "1" {
		t.Errorf("version 1 did not reach Triton's version 1: %v", h.Fake.LastRequest("ens"))
	}
	delete(resp.Parameters, control.KeyPreference)
	resp.Parameters = nil
	if want := h.Fake.LastResponse("ens"); !proto.Equal(resp, want) {
		t.Errorf("answer\n%v\nwant Triton's\n%v", resp, want)
	}
	if _, err := h.Client.ModelInfer(ctx, v1); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "version 1 takes no preference") {
		t.Errorf("version 1 with the default preference: %v, want NOT_FOUND", err)
	}
	if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("ens", "g", sidecartest.CtlBatch)); err != nil {
		t.Fatal(err)
	}

	// Statistics: version 2's are the sidecar's (one request served, the
	// refused one not counted), version 1's Triton's (1000 + its calls).
	st, err := h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{Name: "ens", Version: "2"})
	if err != nil || len(st.GetModelStats()) != 1 || st.GetModelStats()[0].GetInferenceStats().GetSuccess().GetCount() != 1 {
		t.Errorf("ModelStatistics(ens, 2) = %v, %v; want the sidecar's one request", st, err)
	}
	st, err = h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{Name: "ens", Version: "1"})
	if err != nil || len(st.GetModelStats()) != 1 || st.GetModelStats()[0].GetVersion() != "1" || st.GetModelStats()[0].GetInferenceCount() < 1000 {
		t.Errorf("ModelStatistics(ens, 1) = %v, %v; want Triton's", st, err)
	}
	all, err := h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, s := range all.GetModelStats() {
		if s.GetName() == "ens" {
			counts[s.GetVersion()] = s.GetInferenceStats().GetSuccess().GetCount()
		}
	}
	if len(counts) != 2 || counts["1"] < 1000 || counts["2"] != 1 {
		t.Errorf("every model's statistics of ens: %v, want Triton's version 1 and the sidecar's version 2", counts)
	}
	index, err := h.Client.RepositoryIndex(ctx, &tritonpb.RepositoryIndexRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, e := range index.GetModels() {
		if e.GetName() == "ens" {
			versions = append(versions, e.GetVersion()+" "+e.GetState())
		}
	}
	if strings.Join(versions, ",") != "1 READY,2 READY" {
		t.Errorf("index entries of ens: %v, want Triton's version 1 and the sidecar's version 2", versions)
	}
	// HTTP: version 1's statistics go to Triton (the fake serves no such
	// route), version 2's are the sidecar's.
	httpCalls := h.Fake.HTTPCalls()
	resp1, _ := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/models/ens/versions/1/stats", nil, nil)
	if resp1.StatusCode != http.StatusNotFound || h.Fake.HTTPCalls() != httpCalls+1 {
		t.Errorf("GET version 1 stats: %d, %d calls reached Triton; want Triton's answer", resp1.StatusCode, h.Fake.HTTPCalls()-httpCalls)
	}
	resp2, body := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/models/ens/versions/2/stats", nil, nil)
	var stats map[string]any
	if resp2.StatusCode != http.StatusOK || json.Unmarshal(body, &stats) != nil || jget(stats, "model_stats", 0, "version") != "2" {
		t.Errorf("GET version 2 stats: %d %s", resp2.StatusCode, body)
	}
}

// TestGraphInfer: over gRPC, a gRPC stream and HTTP, a graph-form model answers with no
// correction exactly as Triton's ensemble does (the request goes to the
// ensemble), and with one, the ensemble's graph with the tensor corrected.
func TestGraphInfer(t *testing.T) {
	h := startGraphHarness(t)
	ctx := context.Background()

	// (The harness's default preference is a=1: ask for none.)
	var hdr metadata.MD
	ctxNone := metadata.AppendToOutgoingContext(ctx, "react-preference", "none")
	resp, err := h.Client.ModelInfer(ctxNone, sidecartest.CtlRequest("ens", "g", sidecartest.CtlBatch), grpc.Header(&hdr))
	if err != nil {
		t.Fatal(err)
	}
	want := h.Fake.LastResponse("ens")
	if got := resp.GetParameters()[control.KeyPreference].GetStringParam(); got != "none" || hdr.Get(control.KeyPreference)[0] != "none" {
		t.Errorf("react-preference %q, header %v; want none", got, hdr)
	}
	delete(resp.Parameters, control.KeyPreference)
	resp.Parameters = nil
	if !proto.Equal(resp, want) {
		t.Errorf("answer\n%v\nwant Triton's ensemble's\n%v", resp, want)
	}

	ctxPref := metadata.AppendToOutgoingContext(ctx, "react-preference", "a=1,b=1")
	calls := h.Fake.Calls("ens")
	resp, err = h.Client.ModelInfer(ctxPref, sidecartest.CtlRequest("ens", "g", sidecartest.CtlBatch))
	if err != nil {
		t.Fatal(err)
	}
	if h.Fake.Calls("ens") != calls {
		t.Error("a corrected request went to the ensemble")
	}
	if err := sidecartest.CheckLogits(h.Scenario, "a", []float64{0.5, 0.5, 0}, sidecartest.CtlBatch, resp.GetRawOutputContents()[0]); err != nil {
		t.Error(err)
	}

	// A stream, the preference in its metadata.
	stream, err := h.Client.ModelStreamInfer(ctxPref)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(sidecartest.CtlRequest("ens", "st", sidecartest.CtlBatch)); err != nil {
		t.Fatal(err)
	}
	sr, err := stream.Recv()
	if err != nil || sr.GetErrorMessage() != "" {
		t.Fatalf("stream: %v %v", sr, err)
	}
	stream.CloseSend()
	if err := sidecartest.CheckLogits(h.Scenario, "a", []float64{0.5, 0.5, 0}, sidecartest.CtlBatch, sr.GetInferResponse().GetRawOutputContents()[0]); err != nil {
		t.Errorf("stream: %v", err)
	}

	for _, binary := range []bool{false, true} {
		body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("ens", "h", sidecartest.CtlBatch), binary)
		hdr["React-Preference"] = "a=1,b=1"
		resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/ens/infer", body, hdr)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("React-Preference") != "a=0.5,b=0.5" {
			t.Fatalf("HTTP binary=%v: %d %s", binary, resp.StatusCode, out)
		}
		dec, err := tritonhttp.DecodeResponse(out, resp.Header.Get(restapi.HeaderContentLength))
		if err != nil || len(dec.GetOutputs()) != 1 || dec.GetOutputs()[0].GetName() != "logits" {
			t.Fatalf("HTTP binary=%v: %v %s", binary, err, out)
		}
		if err := sidecartest.CheckLogits(h.Scenario, "a", []float64{0.5, 0.5, 0}, sidecartest.CtlBatch, dec.GetRawOutputContents()[0]); err != nil {
			t.Errorf("HTTP binary=%v: %v", binary, err)
		}
	}
}

// TestReloadRefusesAnotherSignature: a reload whose models no longer
// match the signature of the Triton models they shadow, or no longer fit
// the ensemble they run, is refused with every problem listed, and the
// configuration in service keeps serving.
func TestReloadRefusesAnotherSignature(t *testing.T) {
	h := startGraphHarness(t)
	c := h.Config
	c.Components = filepath.Join(h.Dir, "components.safetensors")
	// "multi" no longer declares its difference from Triton's "multi",
	// and "ens" names a tensor its ensemble lacks.
	c.MoreModels = "  - {name: ens, correct: embedding}\n"
	text := strings.Replace(c.YAML(), "    signature: differs\n", "", 1)
	path := filepath.Join(t.TempDir(), "new.yaml")
	sidecartest.WriteFile(t, path, text)
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Models.Reload(context.Background(), cfg)
	var be problem.List
	if !errors.As(err, &be) || be.Transient() {
		t.Fatalf("Reload: %v, want a permanent problem.List", err)
	}
	for _, want := range []string{
		`models[1].name: input "x" is served, but Triton's "multi" has no such input`,
		`models[1].name: output "logits" of Triton's "multi" is not served`,
		`models[2].correct: ensemble "ens": no step produces tensor "embedding"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Reload error lacks %q:\n%v", want, err)
		}
	}
	// The old configuration serves on.
	ctx := metadata.AppendToOutgoingContext(context.Background(), "react-preference", "a=1")
	resp, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("ens", "after", sidecartest.CtlBatch))
	if err != nil {
		t.Fatal(err)
	}
	if err := sidecartest.CheckLogits(h.Scenario, "a", []float64{1, 0, 0}, sidecartest.CtlBatch, resp.GetRawOutputContents()[0]); err != nil {
		t.Error(err)
	}
	if h.Models.Config() == cfg {
		t.Error("the refused configuration is in service")
	}
}

// TestGraphModelOtherVersionsHTTP: the other versions of a graph-form
// model's ensemble over HTTP, as over gRPC: an inference request for
// version 1 without a correction goes to Triton's version 1 and is not
// counted by the sidecar, with one it is 404 saying what to send; the
// repository index lists Triton's version 1 beside the sidecar's version
// 2, each once.
func TestGraphModelOtherVersionsHTTP(t *testing.T) {
	h := startGraphHarness(t, "1", "2")
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("ens", "h", sidecartest.CtlBatch), false)
	hdr["React-Preference"] = "none"
	calls := h.Fake.Calls("ens")
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/ens/versions/1/infer", body, hdr)
	if resp.StatusCode != http.StatusOK || h.Fake.Calls("ens") != calls+1 || h.Fake.LastRequest("ens").GetModelVersion() != "1" {
		t.Errorf("version 1 without a correction: %d %s; want Triton's version 1 to answer", resp.StatusCode, out)
	}
	var answer map[string]any
	if json.Unmarshal(out, &answer) != nil || answer["model_version"] != "1" {
		t.Errorf("version 1's answer: %s, want model_version 1", out)
	}
	delete(hdr, "React-Preference")
	resp, out = sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/ens/versions/1/infer", body, hdr)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(out), "version 1 takes no preference") {
		t.Errorf("version 1 with the default preference: %d %s, want 404", resp.StatusCode, out)
	}
	if resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/ens/versions/2/infer", body, hdr); resp.StatusCode != http.StatusOK {
		t.Fatalf("version 2: %d %s", resp.StatusCode, out)
	}
	// The sidecar's version 2 counts its own: one success, neither the
	// relayed request nor the refused one (both for version 1).
	st, err := h.Client.ModelStatistics(context.Background(), &tritonpb.ModelStatisticsRequest{Name: "ens"})
	if is := st.GetModelStats()[0].GetInferenceStats(); err != nil || is.GetSuccess().GetCount() != 1 || is.GetFail().GetCount() != 0 {
		t.Errorf("ModelStatistics(ens) = %v, %v; want the sidecar's 1 success, no failure", st, err)
	}

	code, idx := getJSON(t, http.MethodPost, h.HTTPURL+"/v2/repository/index", "")
	arr, ok := idx.([]any)
	if code != http.StatusOK || !ok {
		t.Fatalf("index: %d %v", code, idx)
	}
	var versions []string
	for _, e := range arr {
		if jget(e, "name") == "ens" {
			versions = append(versions, fmt.Sprint(jget(e, "version"), " ", jget(e, "state")))
		}
	}
	slices.Sort(versions)
	if strings.Join(versions, ",") != "1 READY,2 READY" {
		t.Errorf("HTTP index entries of ens: %v, want Triton's version 1 and the sidecar's version 2", versions)
	}
}

// TestExplicitModelShadowsEveryVersion: an explicit-form model is not
// changed by the graph form's versions: when Triton's model of its name
// has versions 1 and 2, the sidecar's model (version 1) replaces both in
// the statistics and the index (gRPC and HTTP), and a request for version
// 2 is NOT_FOUND (404), counted as the sidecar model's failure, and not
// ready.
func TestExplicitModelShadowsEveryVersion(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	h.Fake.SetVersions("multi", "1", "2")
	ctx := context.Background()
	// Triton lists both versions of its multi (what the sidecar replaces).
	direct := tritonpb.NewGRPCInferenceServiceClient(sidecartest.Dial(t, h.Fake.Addr))
	var tritons []string
	if st, err := direct.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{}); err == nil {
		for _, s := range st.GetModelStats() {
			if s.GetName() == "multi" {
				tritons = append(tritons, s.GetVersion())
			}
		}
	}
	if idx, err := direct.RepositoryIndex(ctx, &tritonpb.RepositoryIndexRequest{}); err == nil {
		for _, e := range idx.GetModels() {
			if e.GetName() == "multi" {
				tritons = append(tritons, e.GetVersion())
			}
		}
	}
	if strings.Join(tritons, ",") != "1,2,1,2" {
		t.Fatalf("Triton's statistics and index entries of multi: %v, want versions 1 and 2 in each", tritons)
	}
	if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "s", sidecartest.CtlBatch)); err != nil {
		t.Fatal(err)
	}
	v2 := sidecartest.CtlRequest("multi", "s", sidecartest.CtlBatch)
	v2.ModelVersion = "2"
	calls := h.Fake.Calls("multi")
	if _, err := h.Client.ModelInfer(ctx, v2); status.Code(err) != codes.NotFound {
		t.Errorf("ModelInfer(multi, 2): %v, want NOT_FOUND", err)
	}
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "h", sidecartest.CtlBatch), false)
	if resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/versions/2/infer", body, hdr); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST multi version 2: %d %s, want 404", resp.StatusCode, out)
	}
	if h.Fake.Calls("multi") != calls {
		t.Error("a request for version 2 reached Triton's multi")
	}
	// Readiness: version 1 is ready, version 2 (Triton's only) is not, as
	// Triton answers for a version that does not exist.
	for _, v := range []string{"", "1", "2"} {
		r, err := h.Client.ModelReady(ctx, &tritonpb.ModelReadyRequest{Name: "multi", Version: v})
		if err != nil || r.GetReady() != (v != "2") {
			t.Errorf("ModelReady(multi, %q) = %v, %v; want %v", v, r, err, v != "2")
		}
		path := "/v2/models/multi/ready"
		if v != "" {
			path = "/v2/models/multi/versions/" + v + "/ready"
		}
		want := http.StatusOK
		if v == "2" {
			want = http.StatusBadRequest
		}
		if resp, _ := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+path, nil, nil); resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}

	all, err := h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var stats []string
	for _, s := range all.GetModelStats() {
		if s.GetName() == "multi" {
			is := s.GetInferenceStats()
			stats = append(stats, fmt.Sprintf("%s %d/%d", s.GetVersion(), is.GetSuccess().GetCount(), is.GetFail().GetCount()))
		}
	}
	if strings.Join(stats, ",") != "1 1/2" {
		t.Errorf("statistics of multi: %v, want only the sidecar's version 1: 1 success, 2 failures", stats)
	}
	idx, err := h.Client.RepositoryIndex(ctx, &tritonpb.RepositoryIndexRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, e := range idx.GetModels() {
		if e.GetName() == "multi" {
			versions = append(versions, e.GetVersion())
		}
	}
	_, hidx := getJSON(t, http.MethodPost, h.HTTPURL+"/v2/repository/index", "")
	arr, _ := hidx.([]any)
	for _, e := range arr {
		if jget(e, "name") == "multi" {
			versions = append(versions, fmt.Sprint("http ", jget(e, "version")))
		}
	}
	if strings.Join(versions, ",") != "1,http 1" {
		t.Errorf("index entries of multi: %v, want only the sidecar's version 1 (gRPC, HTTP)", versions)
	}
}
