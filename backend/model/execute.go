package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
)

// Request is one inference request of a batch, as the backend hands it
// over.
type Request struct {
	// Shape is the input's shape, batch dimension first: [B, D].
	Shape []int64
	// Data holds the input's bytes in host memory, in the configured
	// datatype. It may alias server memory that is valid for the call.
	Data []byte
	// Keys are the request's react-preference and react-preset parameters
	// (a forwarded header arrives as a parameter too) and the experiment's
	// key from its key parameter (Model.ReadParameter).
	Keys control.Values
	// Header holds the experiment's key from its key header, which Triton
	// forwards as a request parameter (Key and HasKey only): it comes
	// before the key parameter, as in the sidecar.
	Header control.Values
}

// Rows returns the request's batch size, Shape[0].
func (r Request) Rows() int64 {
	if len(r.Shape) == 0 {
		return 0
	}
	return r.Shape[0]
}

// Code classifies a request's failure for Triton.
type Code uint8

// The failures of a request.
const (
	// CodeInternal is a failure of the backend or the server.
	CodeInternal Code = iota
	// CodeInvalidArgument is a problem with what the request sent: its
	// preference, its preset, its shape.
	CodeInvalidArgument
	// CodeUnavailable is a request given up because the model is
	// unloading or the server stopping.
	CodeUnavailable
)

var codeNames = [...]string{"Internal", "InvalidArgument", "Unavailable"}

// String returns the name of the gRPC status Triton answers a failure of
// the code with ("Internal", "InvalidArgument", "Unavailable"): the code
// label of the sidecar's metrics.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint8(c))
}

// ErrorCode returns the code of a request's failure: its *RequestError's,
// else CodeInternal.
func ErrorCode(err error) Code {
	var re *RequestError
	if errors.As(err, &re) {
		return re.Code
	}
	return CodeInternal
}

// RequestError is one request's failure. The other requests of its batch
// are unaffected.
type RequestError struct {
	Code Code
	Err  error
}

// Error implements error.
func (e *RequestError) Error() string { return e.Err.Error() }

// Unwrap returns the problem.
func (e *RequestError) Unwrap() error { return e.Err }

func invalid(format string, args ...any) *RequestError {
	return &RequestError{Code: CodeInvalidArgument, Err: fmt.Errorf(format, args...)}
}

// Outcome is what became of one request of a batch.
type Outcome struct {
	// Choice is the preference applied (its Canonical form is what the
	// response echoes).
	Choice control.Choice
	// Err is nil, or a *RequestError: the request gets it instead of an
	// output.
	Err error
}

// Alloc returns the output buffer of request i, as many bytes as its
// input, in host memory. It is called once for each request that gets an
// output, before that output is written.
type Alloc func(i int) ([]byte, error)

// Scratch is the working memory of one model instance, reused across its
// executions. The zero value is ready to use; it is not safe for
// concurrent use (Triton runs one execution at a time per instance).
type Scratch struct {
	z, zhat []float32
	groups  []group
}

// group is the requests of a batch that share a preference.
type group struct {
	choice control.Choice
	reqs   []int
	rows   int
}

// Execute corrects a batch of requests: it resolves each request's
// preference (parameter, then preset, then the arm of the model's
// experiment while it runs, then the model's default), groups
// the requests that share one, and corrects each group's rows with one
// application of its W_p (one GEMM when W_p is formed). A request without a
// correction gets its input unchanged. A request's problem (a bad
// preference, a wrong shape) fails that request only.
func (m *Model) Execute(ctx context.Context, reqs []Request, alloc Alloc, sc *Scratch) []Outcome {
	out := make([]Outcome, len(reqs))
	sc.groups = sc.groups[:0]
	now := time.Now()
	for i, r := range reqs {
		if err := m.check(r); err != nil {
			out[i].Err = err
			continue
		}
		c, err := m.resolve(r.Header, r.Keys, now)
		if err != nil {
			out[i].Err = &RequestError{Code: CodeInvalidArgument, Err: err}
			continue
		}
		out[i].Choice = c
		sc.add(c, i, int(r.Rows()))
	}
	for gi := range sc.groups {
		g := &sc.groups[gi]
		if !g.choice.Corrects() {
			for _, i := range g.reqs {
				if dst, err := alloc(i); err != nil {
					out[i].Err = &RequestError{Code: CodeInternal, Err: err}
				} else {
					copy(dst, reqs[i].Data)
				}
			}
			continue
		}
		if err := m.correctGroup(ctx, g, reqs, alloc, sc, out); err != nil {
			for _, i := range g.reqs {
				if out[i].Err == nil {
					out[i].Err = err
				}
			}
		}
	}
	return out
}

// resolve applies the precedence of a request's keys (control.Profile.Resolve)
// with the model's experiment, at now.
func (m *Model) resolve(header, params control.Values, now time.Time) (control.Choice, error) {
	return m.profile.Resolve(control.Request{Header: header, Parameter: params, Experiment: m.experiment, Now: now})
}

// add puts request i (rows rows) in the group of choice c.
func (sc *Scratch) add(c control.Choice, i, rows int) {
	for gi := range sc.groups {
		if sc.groups[gi].choice.Key == c.Key {
			sc.groups[gi].reqs = append(sc.groups[gi].reqs, i)
			sc.groups[gi].rows += rows
			return
		}
	}
	if len(sc.groups) < cap(sc.groups) {
		sc.groups = sc.groups[:len(sc.groups)+1]
		g := &sc.groups[len(sc.groups)-1]
		g.choice, g.reqs, g.rows = c, append(g.reqs[:0], i), rows
		return
	}
	sc.groups = append(sc.groups, group{choice: c, reqs: []int{i}, rows: rows})
}

// check verifies a request's shape and size against the configuration.
func (m *Model) check(r Request) error {
	if len(r.Shape) != 2 || r.Shape[0] < 0 || r.Shape[1] != int64(m.d) {
		return invalid("input %q: shape %v: want [batch, %d]", m.cfg.Input.Name, r.Shape, m.d)
	}
	// A batch whose byte count overflows would wrap to a small one that a
	// few bytes of data can match (Triton's own check wraps alike).
	if r.Shape[0] > math.MaxInt64/int64(m.d*m.elem) {
		return invalid("input %q: shape %v: a batch of more than %d rows", m.cfg.Input.Name, r.Shape, math.MaxInt64/int64(m.d*m.elem))
	}
	if want := r.Shape[0] * int64(m.d) * int64(m.elem); int64(len(r.Data)) != want {
		return invalid("input %q: %d bytes for shape %v of %s: want %d", m.cfg.Input.Name, len(r.Data), r.Shape, m.cfg.Input.Datatype, want)
	}
	return nil
}

// correctGroup applies the group's W_p to all of its rows at once and
// writes each request's share of the result to its output. A non-nil error
// fails every request of the group that has not failed already.
func (m *Model) correctGroup(ctx context.Context, g *group, reqs []Request, alloc Alloc, sc *Scratch, out []Outcome) error {
	w, err := m.matrix(ctx, g.choice)
	if err != nil {
		return err
	}
	dt := m.cfg.Input.Datatype
	sc.z = sc.z[:0]
	for _, i := range g.reqs {
		if sc.z, err = triton.DecodeFloat32(sc.z, dt, reqs[i].Data); err != nil {
			return &RequestError{Code: CodeInternal, Err: err}
		}
	}
	sc.zhat = grow(sc.zhat, len(sc.z))
	if err := w.Apply(sc.zhat, sc.z); err != nil {
		return &RequestError{Code: CodeInternal, Err: err}
	}
	at := 0
	for _, i := range g.reqs {
		n := int(reqs[i].Rows()) * m.d
		part := sc.zhat[at : at+n]
		at += n
		dst, err := alloc(i)
		if err != nil {
			out[i].Err = &RequestError{Code: CodeInternal, Err: err}
			continue
		}
		if err := encodeInto(dst, dt, part); err != nil {
			out[i].Err = &RequestError{Code: CodeInternal, Err: err}
		}
	}
	return nil
}

// matrix returns the W_p of a choice that corrects, or the request error
// of failing to get it: a preference whose C_p is refused is the request's
// fault, a model unloading makes it unavailable.
func (m *Model) matrix(ctx context.Context, c control.Choice) (*control.Matrix, error) {
	w, err := m.profile.Matrix(ctx, c)
	if err != nil {
		var se *react.SolveError
		if errors.As(err, &se) {
			return nil, &RequestError{Code: CodeInvalidArgument, Err: err}
		}
		if ctx.Err() != nil {
			return nil, &RequestError{Code: CodeUnavailable, Err: err}
		}
		return nil, &RequestError{Code: CodeInternal, Err: fmt.Errorf("W_p for %s: %w", c.Canonical(), err)}
	}
	return w, nil
}

// encodeInto writes v encoded as dt into dst, which must be exactly its
// size.
func encodeInto(dst []byte, dt string, v []float32) error {
	enc, err := triton.EncodeFloat32(dst[:0], dt, v)
	if err != nil {
		return err
	}
	if len(enc) != len(dst) || (len(enc) > 0 && &enc[0] != &dst[0]) {
		return fmt.Errorf("output buffer of %d bytes for %d bytes of %s", len(dst), len(enc), dt)
	}
	return nil
}

// grow returns s resized to n elements, reusing its memory when it can.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}
