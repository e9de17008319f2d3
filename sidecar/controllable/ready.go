package controllable

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/sidecar/readiness"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// checkReady returns nil when the sidecar is ready, and why it is not
// otherwise (readiness.Checker.Check).
func (ms *Models) checkReady(ctx context.Context) error {
	return ms.readiness.Check(ctx, ms.state.Load().set, ms.all)
}

// httpServerReady answers GET /v2/health/ready: 503 with the reason while
// the sidecar is not ready, else Triton's own answer.
func (ms *Models) httpServerReady(pass http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := ms.checkReady(r.Context()); err != nil {
			passthrough.WriteHTTPError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		pass.ServeHTTP(w, r)
	})
}

// ReadyzHandler answers /readyz for the metrics listener: 200 when the
// sidecar is ready and Triton says it is, 503 with the reason otherwise.
// It is the readiness probe to use when the client listeners ask for
// client certificates, which a kubelet does not have.
func (ms *Models) ReadyzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		err := ms.checkReady(r.Context())
		if err == nil {
			ctx, cancel := context.WithTimeout(r.Context(), readiness.Timeout)
			defer cancel()
			resp, rerr := ms.rpc.ServerReady(ctx, &tritonpb.ServerReadyRequest{})
			switch {
			case rerr != nil:
				err = fmt.Errorf("sidecar: Triton's readiness: %s", status.Convert(ms.upstreamError(rerr)).Message())
			case !resp.GetReady():
				err = fmt.Errorf("sidecar: Triton is not ready")
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err.Error())
			return
		}
		w.Write([]byte("ok\n"))
	})
}

// partGoneError is the UNAVAILABLE status of a request for a controllable
// model one of whose parts Triton no longer serves (unloaded, or not
// ready): HTTP answers it 503, where an unreachable Triton is 502.
type partGoneError struct{ st *status.Status }

func (e *partGoneError) Error() string              { return e.st.Err().Error() }
func (e *partGoneError) GRPCStatus() *status.Status { return e.st }

// partGone turns the NOT_FOUND a request for model m got from Triton into
// UNAVAILABLE when a model m calls is not ready there (unloaded after
// start-up), and returns any other error as it is (a NOT_FOUND of m's own,
// such as a version it does not have).
func (ms *Models) partGone(ctx context.Context, m *pipeline.Model, err error) error {
	if status.Code(err) != codes.NotFound {
		return err
	}
	var nr *readiness.NotReadyError
	if perr := ms.readiness.PartsReady(context.WithoutCancel(ctx), ms.all(), m.Name()); !errors.As(perr, &nr) {
		return err
	}
	return &partGoneError{status.Newf(codes.Unavailable, "sidecar: model %q is unavailable: a model it calls is not ready on Triton (%s)", m.Name(), status.Convert(err).Message())}
}
