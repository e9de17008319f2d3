package controllable

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// grpcStream serves ModelStreamInfer. One stream may carry requests for
// controllable models and for others: the sidecar answers the former
// itself, each as soon as it is done, and relays the latter over one
// upstream stream to Triton, opened with the client's (so that a stream
// Triton refuses, such as one without the key of
// --grpc-restricted-protocol, is refused at once, as Triton would), and
// relays Triton's responses back as they arrive. A controllable request
// that fails is answered with an error_message, as Triton does, and the
// stream goes on; so is a request refused by the sidecar's limits (its
// inputs, outputs and parameters, limits.max_inflight_bytes). When the
// client half-closes, the sidecar waits for its own answers, half-closes
// upstream and ends with Triton's status and trailers; if the upstream
// stream fails first, the call ends with its status. At most
// server.grpc.max_concurrent_streams controllable requests of one stream
// are in flight at once.
func (ms *Models) grpcStream(ss grpc.ServerStream, _ func(*passthrough.Frame) error) error {
	ctx, cancel := context.WithCancel(ss.Context())
	md, _ := metadata.FromIncomingContext(ss.Context())
	x := &streamMux{ms: ms, ss: ss, ctx: ctx, cancel: cancel, md: md, upDone: make(chan error, 1),
		peer:  peerAddr(peer.FromContext(ss.Context())),
		slots: make(chan struct{}, max(ms.Config().Server.GRPC.MaxConcurrentStreams, 1))}
	if err := x.openUpstream(); err != nil {
		cancel()
		return err
	}
	received := make(chan error, 1)
	go func() { received <- x.receive() }()
	var err error
	select {
	case err = <-received:
		if err == nil {
			err = x.finish()
		}
	case err = <-x.upDoneEarly():
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	x.stop()
	return err
}

// streamMux is the state of one ModelStreamInfer call.
type streamMux struct {
	ms     *Models
	ss     grpc.ServerStream
	ctx    context.Context
	cancel context.CancelFunc
	md     metadata.MD // the call's metadata: the preference keys and experiment keys of every request
	peer   string      // the client's address, for admission's key
	// slots bounds the controllable requests in flight: when every slot is
	// taken, the stream reads no more until one is answered, and HTTP/2's
	// flow control holds the client back (server.grpc.max_concurrent_streams).
	slots chan struct{}

	mu       sync.Mutex // guards stopped and the WaitGroup's Add
	stopped  bool
	inflight sync.WaitGroup

	sendMu     sync.Mutex // one sender at a time on ss
	headerSent bool

	up        grpc.ClientStream // the upstream stream
	upDone    chan error        // the upstream relay's end: io.EOF or a status
	relayDone chan struct{}
}

// receive reads the client's requests until it half-closes (nil) or fails.
func (x *streamMux) receive() error {
	for {
		f := new(passthrough.Frame)
		if err := x.ss.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		name := modelName(f.Payload)
		res, _, admitErr := x.ms.admitFrame(f, x.ms.Config())
		m, up, ok, lookupErr := x.ms.lookup(name)
		if !ok && admitErr == nil {
			relay, err := x.ms.relayed(x.ctx, x.md, f)
			if err != nil {
				// Refused as Triton refuses a request of a stream: with an
				// error message, the stream going on.
				res.Release()
				x.sendError(name, f, err)
				continue
			}
			err = x.toUpstream(relay)
			res.Release()
			if err != nil {
				return err
			}
			continue
		}
		select {
		case x.slots <- struct{}{}:
		case <-x.ctx.Done():
			res.Release()
			return status.FromContextError(x.ctx.Err()).Err()
		}
		if !x.begin() {
			<-x.slots
			res.Release()
			return nil
		}
		go func() {
			defer func() { <-x.slots }()
			defer x.inflight.Done()
			defer res.Release()
			var resp *tritonpb.ModelInferResponse
			err := admitErr
			if err == nil {
				err = lookupErr
			}
			if err == nil {
				resp, err = x.infer(m, up, f.Payload)
			}
			if err != nil {
				x.sendError(name, f, err)
				return
			}
			b, err := proto.Marshal(&tritonpb.ModelStreamInferResponse{InferResponse: resp})
			if err == nil {
				x.send(&passthrough.Frame{Payload: b})
			}
		}()
	}
}

// sendError answers the request f, for model name, with an error message.
func (x *streamMux) sendError(name string, f *passthrough.Frame, err error) {
	out := &tritonpb.ModelStreamInferResponse{
		ErrorMessage:  status.Convert(err).Message(),
		InferResponse: &tritonpb.ModelInferResponse{ModelName: name, Id: passthrough.StringField(f.Payload, 3)},
	}
	if b, err := proto.Marshal(out); err == nil {
		x.send(&passthrough.Frame{Payload: b})
	}
}

// infer serves one request of the stream, turning a panic into an error
// for that request: grpc-go does not recover handler goroutines, and the
// sidecar must never crash.
func (x *streamMux) infer(m *pipeline.Model, up *pipeline.Upstream, payload []byte) (resp *tritonpb.ModelInferResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, status.Errorf(codes.Internal, "sidecar: serving a stream request for %q failed: %v", m.Name(), r)
		}
	}()
	ctx := control.WithClientKey(x.ctx, x.ms.clientKey(m, metadataGetter(x.md), x.peer))
	return x.ms.infer(ctx, m, up, payload, preferenceHeader(x.md, m), "grpc")
}

// begin counts a controllable request in flight, unless the call is
// stopping.
func (x *streamMux) begin() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stopped {
		return false
	}
	x.inflight.Add(1)
	return true
}

// openUpstream opens the upstream stream to Triton and starts relaying its
// answers.
func (x *streamMux) openUpstream() error {
	cs, err := passthrough.OpenStream(x.ms.upstreamContext(x.ctx), x.ms.conn, passthrough.MethodStreamInfer)
	if err != nil {
		return x.ms.upstreamError(status.Convert(err).Err())
	}
	x.up = cs
	x.relayDone = make(chan struct{})
	go x.relay(cs)
	return nil
}

// toUpstream sends a request on to Triton.
func (x *streamMux) toUpstream(f *passthrough.Frame) error {
	if err := x.up.SendMsg(f); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	// On io.EOF the upstream call has ended; the relay reports how.
	return nil
}

// relay copies Triton's header and responses to the client until the
// upstream stream ends.
func (x *streamMux) relay(cs grpc.ClientStream) {
	defer close(x.relayDone)
	if md, err := cs.Header(); err == nil && md != nil {
		x.sendMu.Lock()
		if !x.headerSent {
			x.ss.SendHeader(md)
			x.headerSent = true
		}
		x.sendMu.Unlock()
	}
	for {
		f := new(passthrough.Frame)
		if err := cs.RecvMsg(f); err != nil {
			x.upDone <- err
			return
		}
		x.send(f)
	}
}

// upDoneEarly is the channel on which the upstream relay ends. It is read
// only by the handler's goroutine, after receive has started.
func (x *streamMux) upDoneEarly() <-chan error {
	return x.upDone
}

// send writes one response to the client.
func (x *streamMux) send(f *passthrough.Frame) {
	x.sendMu.Lock()
	defer x.sendMu.Unlock()
	x.headerSent = true
	x.ss.SendMsg(f)
}

// finish ends a call whose client half-closed: it waits for the sidecar's
// own answers, then half-closes upstream and waits for Triton's end.
func (x *streamMux) finish() error {
	x.inflight.Wait()
	x.up.CloseSend()
	err := <-x.upDone
	x.ss.SetTrailer(x.up.Trailer())
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// stop cancels what is left and waits until nothing will write to the
// client's stream any more.
func (x *streamMux) stop() {
	x.mu.Lock()
	x.stopped = true
	x.mu.Unlock()
	x.cancel()
	x.inflight.Wait()
	if x.relayDone != nil {
		<-x.relayDone
	}
}
