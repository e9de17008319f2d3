// Package faketriton is an in-process stand-in for Triton Inference Server,
// for the sidecar's tests: a GRPCInferenceService on a loopback port (and an
// HTTP handler for the inference route) serving small linear models whose
// answers the tests can compute on their own, with switches to make a model
// not ready, missing or failing, and a record of what reached each model.
//
// It is test support only: nothing outside the sidecar's tests imports it.
package faketriton

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Tensor describes one input or output of a model, as ModelMetadata
// reports it (the batch dimension, -1, included when the model batches).
type Tensor struct {
	Name     string
	Datatype string
	Shape    []int64
	// Optional marks an input the model can run without (ModelConfig).
	Optional bool
}

// InferFunc computes a model's answer. The request has been checked to name
// the model; the function checks the rest.
type InferFunc func(req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error)

// Model is one model of the fake repository.
type Model struct {
	Name string
	// Versions are the versions served; nil means ["1"].
	Versions     []string
	MaxBatchSize int32
	Inputs       []Tensor
	Outputs      []Tensor
	Infer        InferFunc
	// Platform and Backend are what ModelMetadata and ModelConfig report;
	// "" reports "fake".
	Platform, Backend string
	// Steps make the model an ensemble: ModelConfig reports them as its
	// ensemble_scheduling (and platform "ensemble" unless Platform says
	// otherwise). The fake does not run them: Infer answers for the
	// ensemble, as the test computes it.
	Steps []*tritonpb.ModelEnsembling_Step
}

// platform returns the platform the model reports.
func (m *Model) platform() string {
	switch {
	case m.Platform != "":
		return m.Platform
	case m.Steps != nil:
		return "ensemble"
	}
	return "fake"
}

// backend returns the backend the model reports ("" for an ensemble).
func (m *Model) backend() string {
	switch {
	case m.Backend != "":
		return m.Backend
	case m.platform() == "ensemble":
		return ""
	}
	return "fake"
}

// Step returns an ensemble step: model (version -1, Triton's choice),
// reading the ensemble's tensors in (step input: ensemble tensor) and
// writing out (step output: ensemble tensor).
func Step(model string, in, out map[string]string) *tritonpb.ModelEnsembling_Step {
	return &tritonpb.ModelEnsembling_Step{ModelName: model, ModelVersion: -1, InputMap: in, OutputMap: out}
}

func (m *Model) versions() []string {
	if len(m.Versions) == 0 {
		return []string{"1"}
	}
	return m.Versions
}

// state is a model's switches and record.
type state struct {
	model    *Model
	notReady bool
	missing  bool
	fail     error
	gate     chan struct{} // ModelInfer waits for it to close (or its context)

	calls      int // ModelInfer calls that reached the model (stream included)
	cancelled  int // held calls whose context ended first
	readyCalls int
	last       *tritonpb.ModelInferRequest
	lastMD     metadata.MD
	lastResp   *tritonpb.ModelInferResponse
}

// Server is the fake Triton. Its methods are safe for concurrent use.
type Server struct {
	tritonpb.UnimplementedGRPCInferenceServiceServer

	// Addr is the gRPC address (host:port).
	Addr string

	stop func() // stops the gRPC server

	mu          sync.Mutex
	models      map[string]*state
	serverReady bool
	httpCalls   int
	httpHeader  http.Header
	statsCalls  int
	indexCalls  int
	statsMD     metadata.MD // of the last ModelStatistics call
	indexMD     metadata.MD // of the last RepositoryIndex call
}

// Start serves models on a loopback port until the test ends.
func Start(t testing.TB, models ...*Model) *Server {
	t.Helper()
	s := New(models...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	tritonpb.RegisterGRPCInferenceServiceServer(g, s)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	s.Addr, s.stop = lis.Addr().String(), g.Stop
	return s
}

// Stop stops the gRPC server: Triton goes away.
func (s *Server) Stop() { s.stop() }

// New returns a fake that serves nothing yet; Start is what tests use.
func New(models ...*Model) *Server {
	s := &Server{models: make(map[string]*state), serverReady: true}
	for _, m := range models {
		s.models[m.Name] = &state{model: m}
	}
	return s
}

// Put adds a model, or replaces one of the same name (keeping its
// switches and counters).
func (s *Server) Put(m *Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.models[m.Name]; ok {
		st.model = m
		return
	}
	s.models[m.Name] = &state{model: m}
}

func (s *Server) with(name string, f func(*state)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.models[name]
	if !ok {
		panic("faketriton: no model " + name)
	}
	f(st)
}

// SetVersions changes the versions a model serves, as Triton loading or
// unloading a version (its model control in poll mode) does.
func (s *Server) SetVersions(name string, versions ...string) {
	s.with(name, func(st *state) {
		m := *st.model
		m.Versions = versions
		st.model = &m
	})
}

// SetReady makes a model ready or not (ModelReady answers false, ModelInfer
// fails with UNAVAILABLE).
func (s *Server) SetReady(name string, ready bool) {
	s.with(name, func(st *state) { st.notReady = !ready })
}

// SetMissing makes a model unknown: every call naming it fails NOT_FOUND.
func (s *Server) SetMissing(name string, missing bool) {
	s.with(name, func(st *state) { st.missing = missing })
}

// Fail makes every ModelInfer of a model fail with err (a status error);
// nil stops failing.
func (s *Server) Fail(name string, err error) { s.with(name, func(st *state) { st.fail = err }) }

// Hold makes ModelInfer calls of a model wait until the returned release
// is called (or their context ends). release may be called more than once.
func (s *Server) Hold(name string) (release func()) {
	gate := make(chan struct{})
	s.with(name, func(st *state) { st.gate = gate })
	var once sync.Once
	return func() {
		once.Do(func() {
			s.with(name, func(st *state) {
				if st.gate == gate {
					st.gate = nil
				}
			})
			close(gate)
		})
	}
}

// SetServerReady sets what ServerReady answers.
func (s *Server) SetServerReady(ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serverReady = ready
}

// Calls returns how many inference requests reached a model.
func (s *Server) Calls(name string) int {
	var n int
	s.with(name, func(st *state) { n = st.calls })
	return n
}

// Cancelled returns how many held calls of a model ended because their
// context did (the client's cancellation or deadline reached Triton).
func (s *Server) Cancelled(name string) int {
	var n int
	s.with(name, func(st *state) { n = st.cancelled })
	return n
}

// ReadyCalls returns how many ModelReady calls named a model.
func (s *Server) ReadyCalls(name string) int {
	var n int
	s.with(name, func(st *state) { n = st.readyCalls })
	return n
}

// TotalCalls returns the inference requests that reached any model.
func (s *Server) TotalCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.models {
		n += st.calls
	}
	return n
}

// HTTPCalls returns how many HTTP requests reached HTTPHandler.
func (s *Server) HTTPCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.httpCalls
}

// LastHTTPHeader returns the headers of the last HTTP request.
func (s *Server) LastHTTPHeader() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.httpHeader.Clone()
}

// StatisticsCalls and IndexCalls count the ModelStatistics and
// RepositoryIndex calls.
func (s *Server) StatisticsCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statsCalls
}

// IndexCalls counts the RepositoryIndex calls.
func (s *Server) IndexCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.indexCalls
}

// StatisticsMetadata returns the gRPC metadata of the last
// ModelStatistics call.
func (s *Server) StatisticsMetadata() metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statsMD.Copy()
}

// IndexMetadata returns the gRPC metadata of the last RepositoryIndex
// call.
func (s *Server) IndexMetadata() metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.indexMD.Copy()
}

// LastRequest returns a copy of the last inference request a model
// received, nil if none.
func (s *Server) LastRequest(name string) *tritonpb.ModelInferRequest {
	var r *tritonpb.ModelInferRequest
	s.with(name, func(st *state) {
		if st.last != nil {
			r = proto.Clone(st.last).(*tritonpb.ModelInferRequest)
		}
	})
	return r
}

// LastMetadata returns the gRPC metadata of a model's last inference
// request.
func (s *Server) LastMetadata(name string) metadata.MD {
	var md metadata.MD
	s.with(name, func(st *state) { md = st.lastMD.Copy() })
	return md
}

// LastResponse returns a copy of the last successful answer of a model.
func (s *Server) LastResponse(name string) *tritonpb.ModelInferResponse {
	var r *tritonpb.ModelInferResponse
	s.with(name, func(st *state) {
		if st.lastResp != nil {
			r = proto.Clone(st.lastResp).(*tritonpb.ModelInferResponse)
		}
	})
	return r
}

// lookup finds a model for a call: NOT_FOUND for a missing model or an
// unknown version.
func (s *Server) lookup(name, version string) (*state, error) {
	st, ok := s.models[name]
	if !ok || st.missing {
		return nil, status.Errorf(codes.NotFound, "Request for unknown model: '%s' is not found", name)
	}
	if version != "" && !slices.Contains(st.model.versions(), version) {
		return nil, status.Errorf(codes.NotFound, "Request for unknown model: '%s' version %s is not found", name, version)
	}
	return st, nil
}

// ServerLive implements the service.
func (s *Server) ServerLive(context.Context, *tritonpb.ServerLiveRequest) (*tritonpb.ServerLiveResponse, error) {
	return &tritonpb.ServerLiveResponse{Live: true}, nil
}

// ServerReady implements the service.
func (s *Server) ServerReady(context.Context, *tritonpb.ServerReadyRequest) (*tritonpb.ServerReadyResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &tritonpb.ServerReadyResponse{Ready: s.serverReady}, nil
}

// ModelReady implements the service.
func (s *Server) ModelReady(_ context.Context, req *tritonpb.ModelReadyRequest) (*tritonpb.ModelReadyResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.models[req.GetName()]; ok {
		st.readyCalls++
	}
	st, err := s.lookup(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	return &tritonpb.ModelReadyResponse{Ready: !st.notReady}, nil
}

func metaTensors(ts []Tensor) []*tritonpb.ModelMetadataResponse_TensorMetadata {
	out := make([]*tritonpb.ModelMetadataResponse_TensorMetadata, len(ts))
	for i, t := range ts {
		out[i] = &tritonpb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: slices.Clone(t.Shape)}
	}
	return out
}

// ModelMetadata implements the service.
func (s *Server) ModelMetadata(_ context.Context, req *tritonpb.ModelMetadataRequest) (*tritonpb.ModelMetadataResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.lookup(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	m := st.model
	return &tritonpb.ModelMetadataResponse{
		Name: m.Name, Versions: m.versions(), Platform: m.platform(),
		Inputs: metaTensors(m.Inputs), Outputs: metaTensors(m.Outputs),
	}, nil
}

// dims drops the batch dimension of a metadata shape, as a configuration
// writes it.
func (m *Model) dims(shape []int64) []int64 {
	if m.MaxBatchSize > 0 && len(shape) > 0 {
		return slices.Clone(shape[1:])
	}
	return slices.Clone(shape)
}

// Config returns the model's configuration as ModelConfig answers it.
func (m *Model) Config() *tritonpb.ModelConfig {
	cfg := &tritonpb.ModelConfig{Name: m.Name, Platform: m.platform(), Backend: m.backend(), MaxBatchSize: m.MaxBatchSize}
	if m.Steps != nil {
		cfg.SchedulingChoice = &tritonpb.ModelConfig_EnsembleScheduling{EnsembleScheduling: &tritonpb.ModelEnsembling{Step: m.Steps}}
	}
	for _, in := range m.Inputs {
		cfg.Input = append(cfg.Input, &tritonpb.ModelInput{Name: in.Name, DataType: triton.DatatypeToConfig(in.Datatype), Dims: m.dims(in.Shape), Optional: in.Optional})
	}
	for _, out := range m.Outputs {
		cfg.Output = append(cfg.Output, &tritonpb.ModelOutput{Name: out.Name, DataType: triton.DatatypeToConfig(out.Datatype), Dims: m.dims(out.Shape)})
	}
	return cfg
}

// ModelConfig implements the service.
func (s *Server) ModelConfig(_ context.Context, req *tritonpb.ModelConfigRequest) (*tritonpb.ModelConfigResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.lookup(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	return &tritonpb.ModelConfigResponse{Config: st.model.Config()}, nil
}

// ModelInfer implements the service.
func (s *Server) ModelInfer(ctx context.Context, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
	return s.infer(ctx, req)
}

func (s *Server) infer(ctx context.Context, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	st, err := s.lookup(req.GetModelName(), req.GetModelVersion())
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	st.calls++
	st.last = proto.Clone(req).(*tritonpb.ModelInferRequest)
	st.lastMD = md.Copy()
	gate, fail, notReady, m := st.gate, st.fail, st.notReady, st.model
	s.mu.Unlock()

	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			s.mu.Lock()
			st.cancelled++
			s.mu.Unlock()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	switch {
	case notReady:
		return nil, status.Errorf(codes.Unavailable, "model '%s' is not ready", m.Name)
	case fail != nil:
		return nil, fail
	case m.Infer == nil:
		return nil, status.Errorf(codes.Unimplemented, "model '%s' cannot infer", m.Name)
	}
	resp, err := m.Infer(req)
	if err != nil {
		if _, ok := status.FromError(err); !ok {
			err = status.Error(codes.InvalidArgument, err.Error())
		}
		return nil, err
	}
	resp.ModelName, resp.Id = m.Name, req.GetId()
	if resp.ModelVersion == "" {
		// The version asked for, or, as Triton's default policy, the last
		// (highest) served.
		resp.ModelVersion = req.GetModelVersion()
		if resp.ModelVersion == "" {
			resp.ModelVersion = m.versions()[len(m.versions())-1]
		}
	}
	s.mu.Lock()
	st.lastResp = proto.Clone(resp).(*tritonpb.ModelInferResponse)
	s.mu.Unlock()
	return resp, nil
}

// ModelStreamInfer implements the service: each request is answered in
// turn, a failure as an error_message.
func (s *Server) ModelStreamInfer(stream grpc.BidiStreamingServer[tritonpb.ModelInferRequest, tritonpb.ModelStreamInferResponse]) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp, err := s.infer(stream.Context(), req)
		out := &tritonpb.ModelStreamInferResponse{InferResponse: resp}
		if err != nil {
			out = &tritonpb.ModelStreamInferResponse{ErrorMessage: status.Convert(err).Message(),
				InferResponse: &tritonpb.ModelInferResponse{ModelName: req.GetModelName(), Id: req.GetId()}}
		}
		if err := stream.Send(out); err != nil {
			return err
		}
	}
}

// Stat is what the fake reports as a model version's statistics: its
// inference count is 1000 + the calls the model received (all versions
// together), so that tests can tell Triton's numbers from the sidecar's.
func (s *Server) stat(st *state, version string) *tritonpb.ModelStatistics {
	n := uint64(1000 + st.calls)
	return &tritonpb.ModelStatistics{
		Name: st.model.Name, Version: version, InferenceCount: n, ExecutionCount: n,
		InferenceStats: &tritonpb.InferStatistics{Success: &tritonpb.StatisticDuration{Count: n, Ns: 7 * n}},
	}
}

// ModelStatistics implements the service.
func (s *Server) ModelStatistics(ctx context.Context, req *tritonpb.ModelStatisticsRequest) (*tritonpb.ModelStatisticsResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statsCalls++
	s.statsMD = md.Copy()
	resp := &tritonpb.ModelStatisticsResponse{}
	if req.GetName() != "" {
		st, err := s.lookup(req.GetName(), req.GetVersion())
		if err != nil {
			return nil, err
		}
		version := req.GetVersion()
		if version == "" {
			version = st.model.versions()[0]
		}
		resp.ModelStats = append(resp.ModelStats, s.stat(st, version))
		return resp, nil
	}
	for _, name := range s.sortedNames() {
		if st := s.models[name]; !st.missing {
			for _, v := range st.model.versions() {
				resp.ModelStats = append(resp.ModelStats, s.stat(st, v))
			}
		}
	}
	return resp, nil
}

func (s *Server) sortedNames() []string {
	names := make([]string, 0, len(s.models))
	for n := range s.models {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// RepositoryIndex implements the service.
func (s *Server) RepositoryIndex(ctx context.Context, req *tritonpb.RepositoryIndexRequest) (*tritonpb.RepositoryIndexResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indexCalls++
	s.indexMD = md.Copy()
	resp := &tritonpb.RepositoryIndexResponse{}
	for _, name := range s.sortedNames() {
		st := s.models[name]
		if st.missing {
			continue
		}
		for _, v := range st.model.versions() {
			e := &tritonpb.RepositoryIndexResponse_ModelIndex{Name: name, Version: v, State: "READY"}
			if st.notReady {
				e.State, e.Reason = "UNAVAILABLE", "not ready"
			}
			if req.GetReady() && e.State != "READY" {
				continue
			}
			resp.Models = append(resp.Models, e)
		}
	}
	return resp, nil
}

// HTTPHandler serves Triton's HTTP inference route for the fake's models
// (POST /v2/models/NAME[/versions/V]/infer) and its repository index (POST
// /v2/repository/index), and answers 404 otherwise.
// Every request is counted (HTTPCalls).
func (s *Server) HTTPHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.httpCalls++
		s.httpHeader = r.Header.Clone()
		s.mu.Unlock()
		if r.URL.Path == "/v2/repository/index" && r.Method == http.MethodPost {
			s.httpIndex(w, r)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/v2/models/")
		parts := strings.Split(rest, "/")
		if !ok || r.Method != http.MethodPost || len(parts) < 2 || parts[len(parts)-1] != "infer" {
			httpError(w, http.StatusNotFound, "fake: no route "+r.URL.Path)
			return
		}
		name, version := parts[0], ""
		if len(parts) == 4 && parts[1] == "versions" {
			version = parts[2]
		}
		// As Triton: the body in its Content-Encoding (gzip, deflate).
		body, err := tritonhttp.ReadBody(r.Body, r.Header.Get("Content-Encoding"), 1<<30)
		if err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		req, err := tritonhttp.ParseRequest(body, r.Header.Get("Inference-Header-Content-Length"))
		if err != nil {
			httpError(w, http.StatusBadRequest, "fake: "+err.Error())
			return
		}
		req.Proto.ModelName, req.Proto.ModelVersion = name, version
		resp, err := s.infer(r.Context(), req.Proto)
		if err != nil {
			code := http.StatusBadRequest
			if status.Code(err) == codes.NotFound {
				code = http.StatusNotFound
			}
			httpError(w, code, status.Convert(err).Message())
			return
		}
		out, hl, err := tritonhttp.EncodeResponse(resp, req)
		if err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if hl >= 0 {
			w.Header().Set("Inference-Header-Content-Length", fmt.Sprint(hl))
		}
		w.Header().Set("X-Fake-Triton", "1")
		w.Write(out)
	})
}

// httpIndex answers the repository index as Triton 2.51 does: a bare JSON
// array of entries whose empty fields are left out, in the order name,
// version, state, reason; a body that is not JSON gets 500.
func (s *Server) httpIndex(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Ready bool `json:"ready"`
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			httpError(w, http.StatusInternalServerError, "failed to parse the request JSON buffer: "+err.Error())
			return
		}
	}
	resp, _ := s.RepositoryIndex(r.Context(), &tritonpb.RepositoryIndexRequest{Ready: req.Ready})
	type entry struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
		State   string `json:"state,omitempty"`
		Reason  string `json:"reason,omitempty"`
	}
	out := []entry{}
	for _, m := range resp.GetModels() {
		out = append(out, entry{m.GetName(), m.GetVersion(), m.GetState(), m.GetReason()})
	}
	b, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(tritonhttp.ErrorBody(msg))
}
