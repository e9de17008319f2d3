package controllable

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Backend mode: a Triton model of the react backend, or an ensemble with
// such a step, reads the preference from its request's parameters
// (react-preference, react-preset). The sidecar strips ReACT's headers
// from the calls it relays, so a client that sends them to such a model
// through the sidecar would get an uncorrected answer; instead the sidecar
// turns them into the request parameters the react step reads. The
// sidecar's precedence then holds in the backend too: a react-preference
// header overrides the parameter, and a react-preset header the preset
// parameter, while a react-preference parameter still beats a preset
// header (the backend reads a preference before a preset).

// readersTTL is how long the sidecar trusts what it learnt about whether a
// model reads ReACT's parameters: Triton may load another version of it.
const readersTTL = 10 * time.Second

// maxEnsembleDepth bounds the nesting of ensembles searched for a react
// step.
const maxEnsembleDepth = 8

// reactBackend is the backend of ReACT's Triton models.
const reactBackend = "react"

// reactReaders tells which Triton models read ReACT's request parameters:
// those of the react backend, and ensembles with such a step at any depth.
// Answers are cached for readersTTL.
type reactReaders struct {
	rpc tritonpb.GRPCInferenceServiceClient

	mu    sync.Mutex
	known map[modelRef]readerEntry
	// now is the clock of the entries' age; nil is time.Now (tests age
	// entries with their own).
	now func() time.Time
}

// clock returns the time by r's clock.
func (r *reactReaders) clock() time.Time {
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
var errNoModel = fmt.Errorf("no such model")

// reads reports whether a model version reads ReACT's parameters. It
// returns errNoModel when Triton does not know the model (or a step's),
// and Triton's status otherwise.
func (r *reactReaders) reads(ctx context.Context, model, version string) (bool, error) {
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
func (r *reactReaders) search(ctx context.Context, m modelRef, depth int, seen map[modelRef]bool) (bool, error) {
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

// forget drops every cached answer (after a reload).
func (r *reactReaders) forget() {
	r.mu.Lock()
	r.known = nil
	r.mu.Unlock()
}

// backendParameters returns the request parameters to set on a relayed
// inference request for model (version) that carries ReACT's headers hdr:
// none when hdr names no preference or preset, or when the model does not
// read them (it has no react step: the headers are dropped, as from every
// relayed call) or Triton does not know it (Triton will say so). When
// Triton cannot be asked, the request is refused with UNAVAILABLE rather
// than relayed without its preference.
func (ms *Models) backendParameters(ctx context.Context, model, version string, hdr control.Values) (map[string]string, error) {
	if !hdr.HasPreference && !hdr.HasPreset {
		return nil, nil
	}
	reads, err := ms.readers.reads(ctx, model, version)
	switch {
	case err == errNoModel:
		return nil, nil
	case err != nil:
		return nil, status.Errorf(codes.Unavailable, "sidecar: model %q: cannot tell whether it reads the react-preference and react-preset headers it was sent (upstream Triton: %s)",
			model, ms.clientMessage(status.Convert(err)))
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

// withParameters returns a serialized ModelInferRequest with string
// parameters set, appended as map entries of its parameters field (4):
// the last entry of a key wins when the message is parsed, so the request
// is otherwise relayed byte for byte.
func withParameters(payload []byte, params map[string]string) []byte {
	out := append([]byte(nil), payload...)
	for _, k := range []string{control.KeyPreference, control.KeyPreset} {
		v, ok := params[k]
		if !ok {
			continue
		}
		var param []byte
		param = protowire.AppendTag(param, 3, protowire.BytesType) // string_param
		param = protowire.AppendString(param, v)
		var entry []byte
		entry = protowire.AppendTag(entry, 1, protowire.BytesType) // key
		entry = protowire.AppendString(entry, k)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType) // value
		entry = protowire.AppendBytes(entry, param)
		out = protowire.AppendTag(out, 4, protowire.BytesType) // parameters
		out = protowire.AppendBytes(out, entry)
	}
	return out
}
