package backendmode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// readersTTL is how long a Readers trusts what it learnt about whether a
// model reads ReACT's parameters: Triton may load another version of it.
const readersTTL = 10 * time.Second

// maxEnsembleDepth bounds the nesting of ensembles searched for a react
// step.
const maxEnsembleDepth = 8

// reactBackend is the backend of ReACT's Triton models.
const reactBackend = "react"

// Readers tells which Triton models read ReACT's request parameters:
// those of the react backend, and ensembles with such a step at any depth.
// Answers are cached for 10 seconds, or until Forget. It is safe for
// concurrent use.
type Readers struct {
	rpc tritonpb.GRPCInferenceServiceClient

	mu    sync.Mutex
	known map[modelRef]readerEntry
	// now is the clock of the entries' age; nil is time.Now (tests age
	// entries with their own).
	now func() time.Time
}

// NewReaders returns Readers that ask Triton, through rpc, for the
// models' configurations.
func NewReaders(rpc tritonpb.GRPCInferenceServiceClient) *Readers {
	return &Readers{rpc: rpc}
}

// clock returns the time by r's clock.
func (r *Readers) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// modelRef names a model version ("" for Triton's choice).
type modelRef struct{ model, version string }

// readerEntry is a cached answer.
type readerEntry struct {
	reads bool
	at    time.Time
}

// errNoModel is Triton's answer for a model it does not have.
var errNoModel = errors.New("no such model")

// Parameters returns the request parameters to set on a relayed inference
// request for model (version) that carries ReACT's headers hdr: none when
// hdr names no preference or preset, or when the model does not read them
// (it has no react step: the headers are dropped, as from every relayed
// call) or Triton does not know it (Triton will say so). When Triton
// cannot be asked, the error is Triton's, a gRPC status as it came: the
// caller refuses the request rather than relay it without its preference.
func (r *Readers) Parameters(ctx context.Context, model, version string, hdr control.Values) (map[string]string, error) {
	if !hdr.HasPreference && !hdr.HasPreset {
		return nil, nil
	}
	reads, err := r.reads(ctx, model, version)
	switch {
	case err == errNoModel:
		return nil, nil
	case err != nil:
		return nil, err
	case !reads:
		return nil, nil
	}
	params := make(map[string]string, 2)
	if hdr.HasPreference {
		params[control.KeyPreference] = hdr.Preference
	}
	if hdr.HasPreset {
		params[control.KeyPreset] = hdr.Preset
	}
	return params, nil
}

// Forget drops every cached answer (after a reload, so that a model
// replaced with the configuration is asked about again at once).
func (r *Readers) Forget() {
	r.mu.Lock()
	r.known = nil
	r.mu.Unlock()
}

// reads reports whether a model version reads ReACT's parameters. It
// returns errNoModel when Triton does not know the model (or a step's),
// and Triton's status otherwise.
func (r *Readers) reads(ctx context.Context, model, version string) (bool, error) {
	key := modelRef{model, version}
	r.mu.Lock()
	e, ok := r.known[key]
	r.mu.Unlock()
	if ok && r.clock().Sub(e.at) < readersTTL {
		return e.reads, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	reads, err := r.search(ctx, key, 0, map[modelRef]bool{})
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	if r.known == nil {
		r.known = make(map[modelRef]readerEntry)
	}
	r.known[key] = readerEntry{reads: reads, at: r.clock()}
	r.mu.Unlock()
	return reads, nil
}

// search asks Triton for a model's configuration and, for an ensemble,
// its steps'.
func (r *Readers) search(ctx context.Context, m modelRef, depth int, seen map[modelRef]bool) (bool, error) {
	if depth > maxEnsembleDepth || seen[m] {
		return false, nil
	}
	seen[m] = true
	resp, err := r.rpc.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: m.model, Version: m.version})
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return false, errNoModel
		}
		return false, err
	}
	cfg := resp.GetConfig()
	if cfg.GetBackend() == reactBackend {
		return true, nil
	}
	for _, s := range cfg.GetEnsembleScheduling().GetStep() {
		v := ""
		if s.GetModelVersion() > 0 {
			v = fmt.Sprint(s.GetModelVersion())
		}
		reads, err := r.search(ctx, modelRef{s.GetModelName(), v}, depth+1, seen)
		if reads || err != nil {
			return reads, err
		}
	}
	return false, nil
}
