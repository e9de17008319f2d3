package controllable

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/backendmode"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/restapi"
	"github.com/mergectl/react-triton/sidecar/limits"
	"github.com/mergectl/react-triton/sidecar/outcomes"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// HTTPInterceptor returns the HTTP side of the controllable models, for the
// proxy's seam. It answers inference, metadata, readiness, configuration
// and statistics requests for controllable models, adds them to the
// repository index and the statistics of every model, and holds the
// server's readiness while they are not built, or a model they call is not
// ready on Triton. Every inference request, for
// any model, is first read (within the configured size limit) and its
// framing checked (tritonhttp.ParseRequest): a malformed one is answered
// with 400 (413 when too large) and never reaches Triton, which one such
// request can crash. Everything else passes through.
func (ms *Models) HTTPInterceptor() passthrough.HTTPInterceptor {
	return func(r *http.Request, pass http.Handler) http.Handler {
		switch {
		case r.URL.Path == "/v2/health/ready" && r.Method == http.MethodGet:
			return ms.httpServerReady(pass)
		case r.URL.Path == "/v2/models/stats" && r.Method == http.MethodGet:
			return ms.httpAllStatistics()
		case r.URL.Path == "/v2/repository/index" && r.Method == http.MethodPost:
			if len(ms.declared()) == 0 {
				return nil // nothing to add: Triton's answer as it is
			}
			return ms.httpIndex(pass)
		}
		rt, ok := restapi.ParseRoute(r.URL.Path)
		if !ok {
			return nil
		}
		if rt.Action == "infer" && r.Method == http.MethodPost {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ms.httpInfer(w, r, rt, pass) })
		}
		m, _, declared, err := ms.lookup(rt.Model)
		if !declared {
			return nil
		}
		if err == nil && ((m.Ensemble() != "" && rt.Action != "stats") || m.Relays(rt.Version)) {
			// Triton answers for the ensemble a graph-form model runs (and
			// counts the requests relayed to its other versions).
			return nil
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err == nil {
				switch rt.Action {
				case "ready":
					if !m.OwnVersion(rt.Version) {
						// As Triton: a version that does not exist is not ready.
						w.WriteHeader(http.StatusBadRequest)
						return
					}
				case "stats":
					err = checkStatisticsVersion(m, rt.Version)
				default:
					err = checkVersion(m, rt.Version)
				}
			}
			if err != nil {
				writeStatusError(w, err)
				return
			}
			switch {
			case rt.Action == "" && r.Method == http.MethodGet:
				restapi.WriteJSON(w, m.Metadata())
			case rt.Action == "ready" && r.Method == http.MethodGet:
				ready, err := ms.modelReady(r.Context(), m)
				switch {
				case err != nil:
					writeStatusError(w, err)
				case ready:
					w.WriteHeader(http.StatusOK)
				default:
					w.WriteHeader(http.StatusBadRequest)
				}
			case rt.Action == "config" && r.Method == http.MethodGet:
				restapi.WriteJSON(w, m.Config())
			case rt.Action == "stats" && r.Method == http.MethodGet:
				restapi.WriteJSON(w, &tritonpb.ModelStatisticsResponse{ModelStats: []*tritonpb.ModelStatistics{m.Stats().Proto(m.Name(), m.Version())}})
			default:
				passthrough.WriteHTTPError(w, http.StatusNotFound, "sidecar: "+r.Method+" "+r.URL.Path+" is not served for the controllable model "+strconv.Quote(m.Name()))
			}
		})
	}
}

// httpInfer reads and checks an inference request, then serves it if it is
// for a controllable model and passes it on otherwise (the body as it came,
// compressed or not). The body is read within limits.max_request_bytes and
// against limits.max_inflight_bytes, whose share it holds until the answer
// is sent; the checks stop when the client goes away.
func (ms *Models) httpInfer(w http.ResponseWriter, r *http.Request, rt restapi.Route, pass http.Handler) {
	start := time.Now()
	cfg := ms.Config()
	res, _ := ms.budget.Reserve(0) // nothing held yet (0 bytes always fit): limits.ReadBody grows it
	defer res.Release()
	req, raw, body, err := ms.readInfer(r, cfg, res)
	if err != nil {
		if r.Context().Err() != nil && !errors.Is(err, passthrough.ErrReadTimeout) {
			// The client went away: nobody is left to answer. (A body cut
			// by server.read_timeout cancels the context too, and its
			// client is told.)
			return
		}
		ms.httpRefuse(w, err, cfg)
		return
	}
	m, up, declared, lerr := ms.lookup(rt.Model)
	if !declared {
		if raw, err = ms.httpRelayed(r, rt, req, raw, body); err != nil {
			writeStatusError(w, err)
			return
		}
		passthrough.SetBody(r, raw)
		aw := &answered{ResponseWriter: w}
		pass.ServeHTTP(aw, r)
		// The sample, if any, runs once the response is sent.
		ms.sampleRelayedHTTP(w, r.Header, rt.Model, req, aw.status)
		return
	}
	if lerr != nil {
		writeStatusError(w, lerr)
		return
	}
	if req.Raw {
		if err := restapi.RawInput(m, req); err != nil {
			writeStatusError(w, err)
			return
		}
	}
	ms.httpServe(w, r, m, up, rt, req, start)
}

// httpRelayed returns the body, of an inference request for a model that
// is not controllable, that goes to Triton: raw as it came, or, when the
// model reads the request's react-preference and react-preset headers
// (backend mode; backendParameters), the decompressed body with them as
// request parameters, its headers updated to match.
func (ms *Models) httpRelayed(r *http.Request, rt restapi.Route, req *tritonhttp.Request, raw, body []byte) ([]byte, error) {
	params, err := ms.backendParameters(r.Context(), rt.Model, rt.Version, backendmode.HeaderValues(r.Header))
	if err != nil || params == nil {
		return raw, err
	}
	return backendmode.SetHTTP(rt.Model, r.Header, body, req.Raw, params)
}

// readInfer reads an inference request's body (raw, as it came; body,
// decompressed) and checks and converts it (req).
func (ms *Models) readInfer(r *http.Request, cfg *config.Config, res *limits.Reservation) (req *tritonhttp.Request, raw, body []byte, err error) {
	limit := min(int64(cfg.Limits.MaxRequestBytes), int64(cfg.Limits.MaxInflightBytes))
	if raw, err = limits.ReadBody(r.Body, r.ContentLength, limit, res); err != nil {
		return nil, nil, nil, err
	}
	body = raw
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		if body, err = tritonhttp.ReadBody(bytes.NewReader(raw), enc, limit); err != nil {
			return nil, nil, nil, err
		}
		if err = res.Grow(int64(len(body))); err != nil {
			return nil, nil, nil, err
		}
	}
	hl, framed := r.Header[http.CanonicalHeaderKey(restapi.HeaderContentLength)]
	opt := tritonhttp.Options{HasHeaderLength: framed, Limits: limits.FromConfig(cfg.Limits)}
	if framed && len(hl) > 0 {
		opt.HeaderLength = hl[0]
	}
	req, err = tritonhttp.ParseRequestWith(r.Context(), body, opt)
	return req, raw, body, err
}

// httpRefuse answers a request that failed the checks: with Triton's own
// status and message where Triton refuses it itself, otherwise with the
// sidecar's.
func (ms *Models) httpRefuse(w http.ResponseWriter, err error, cfg *config.Config) {
	var (
		tooLarge *tritonhttp.TooLargeError
		enc      *tritonhttp.EncodingError
		te       *tritonhttp.TritonError
		le       *tritonhttp.LimitError
		be       *limits.BudgetError
	)
	code, reason, msg := http.StatusBadRequest, "malformed", "sidecar: "+err.Error()
	switch {
	case errors.Is(err, passthrough.ErrReadTimeout):
		code, reason = http.StatusRequestTimeout, "timeout"
	case errors.As(err, &te):
		code, msg = te.Status, te.Msg
		if te.ContentType != "" {
			if ms.metrics != nil {
				ms.metrics.Reject("http", reason)
			}
			w.Header().Set("Content-Type", te.ContentType)
			w.WriteHeader(code)
			w.Write(tritonhttp.ErrorBody(msg))
			return
		}
	case errors.As(err, &tooLarge):
		code, reason = http.StatusRequestEntityTooLarge, "too_large"
	case errors.As(err, &enc):
		code, reason = http.StatusNotImplemented, "encoding"
		w.Header().Set("Accept-Encoding", "gzip, deflate")
	case errors.As(err, &le):
		code, reason = http.StatusRequestEntityTooLarge, limits.Reason(le)
		msg = status.Convert(limits.Status(le)).Message()
	case errors.As(err, &be) && be.Never:
		code, reason = http.StatusRequestEntityTooLarge, "too_large"
	case errors.As(err, &be):
		code, reason = http.StatusTooManyRequests, "memory"
		restapi.SetRetryAfter(w, cfg.Admission.RetryAfter)
	}
	if ms.metrics != nil {
		ms.metrics.Reject("http", reason)
	}
	passthrough.WriteHTTPError(w, code, msg)
}

// httpServe serves a checked inference request for a controllable model.
func (ms *Models) httpServe(w http.ResponseWriter, r *http.Request, m *pipeline.Model, up *pipeline.Upstream, rt restapi.Route, req *tritonhttp.Request, start time.Time) {
	req.Proto.ModelName, req.Proto.ModelVersion = rt.Model, rt.Version
	hdr := control.ValuesFrom(r.Header.Values)
	if k := m.KeyHeader(); k != "" {
		if v, ok := r.Header[http.CanonicalHeaderKey(k)]; ok && len(v) > 0 {
			hdr.Key, hdr.HasKey = v[0], true
		}
	}
	if err := restapi.JSONOutputsFit(m, req); err != nil {
		// Refused before Triton is called (Triton answers 400 too).
		passthrough.WriteHTTPError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx := control.WithClientKey(ms.httpUpstreamContext(r), ms.clientKey(m, r.Header.Get, r.RemoteAddr))
	ctx, sample := withPendingSample(ctx, headerMetadata(r.Header))
	defer sample.run() // after the response is written
	resp, err := ms.serve(ctx, m, up, req.Proto, hdr, "http", start, nil)
	if err != nil {
		writeStatusError(w, err)
		return
	}
	body, headerLength, err := tritonhttp.EncodeResponse(resp, req)
	if err != nil {
		var re *tritonhttp.RequestError
		if errors.As(err, &re) {
			passthrough.WriteHTTPError(w, http.StatusBadRequest, err.Error())
			return
		}
		passthrough.WriteHTTPError(w, http.StatusInternalServerError, "sidecar: encoding the response: "+err.Error())
		return
	}
	h := w.Header()
	h.Set(control.KeyPreference, preferenceOf(resp))
	if arm := armOf(resp); arm != "" {
		h.Set(control.KeyArm, arm)
	}
	if id := requestIDOf(resp); id != "" {
		h.Set(outcomes.KeyRequestID, id)
	}
	if headerLength >= 0 {
		h.Set(restapi.HeaderContentLength, strconv.Itoa(headerLength))
		h.Set("Content-Type", "application/octet-stream")
	} else {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// httpAllStatistics answers GET /v2/models/stats: Triton's statistics with
// the controllable models'.
func (ms *Models) httpAllStatistics() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := ms.rpc.ModelStatistics(ms.httpUpstreamContext(r), &tritonpb.ModelStatisticsRequest{})
		if err != nil {
			writeStatusError(w, ms.upstreamError(err))
			return
		}
		resp.ModelStats = ms.mergeStatistics(resp.GetModelStats())
		restapi.WriteJSON(w, resp)
	})
}

// httpUpstreamContext is the context of a call the sidecar makes to
// Triton for HTTP request r: r's headers of triton.forward_headers as
// gRPC metadata (restapi.GRPCMetadata), so that Triton's restricted
// endpoints and its tracing see them as they would from the client.
func (ms *Models) httpUpstreamContext(r *http.Request) context.Context {
	st := ms.state.Load()
	return metadata.NewOutgoingContext(r.Context(), restapi.GRPCMetadata(r.Header, st.cfg.Triton.ForwardHeaders, ms.PrivateKeys()))
}

// writeStatusError answers a gRPC status error in Triton's HTTP form; a
// model still loading, or one whose parts are gone from Triton, is 503, a
// new preference shed by the W_p cache's admission 429 with Retry-After.
func writeStatusError(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	code := restapi.HTTPStatus(st.Code())
	var loading *loadingError
	var gone *partGoneError
	var overload *control.OverloadError
	switch {
	case errors.As(err, &loading), errors.As(err, &gone):
		code = http.StatusServiceUnavailable
	case errors.As(err, &overload):
		code = http.StatusTooManyRequests
		restapi.SetRetryAfter(w, overload.RetryAfter)
	}
	passthrough.WriteHTTPError(w, code, st.Message())
}
