package passthrough

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// RecvRequest reads the one request message of a unary call.
func RecvRequest(ss grpc.ServerStream) (*Frame, error) {
	f := new(Frame)
	if err := ss.RecvMsg(f); err != nil {
		return nil, err
	}
	return f, nil
}

// recvFirst reads a call's first message within d (d ≤ 0: no bound). A
// call that sends none in time ends with DEADLINE_EXCEEDED; the read goes
// on in the background until grpc ends the stream, and nothing else
// touches the stream meanwhile.
func recvFirst(ss grpc.ServerStream, d time.Duration) (*Frame, error) {
	if d <= 0 {
		return RecvRequest(ss)
	}
	type result struct {
		f   *Frame
		err error
	}
	got := make(chan result, 1)
	go func() {
		f, err := RecvRequest(ss)
		got <- result{f, err}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-got:
		return r.f, r.err
	case <-t.C:
		return nil, status.Errorf(codes.DeadlineExceeded, "sidecar: no request message within server.read_timeout (%v)", d)
	case <-ss.Context().Done():
		return nil, status.FromContextError(ss.Context().Err()).Err()
	}
}

// firstReplayed is a server stream whose first message was already read:
// RecvMsg returns it (or the io.EOF of a client that half-closed without
// one) first, then reads on.
type firstReplayed struct {
	grpc.ServerStream
	first    *Frame
	firstErr error
}

// RecvMsg implements grpc.ServerStream.
func (s *firstReplayed) RecvMsg(m any) error {
	if s.firstErr != nil {
		return s.firstErr
	}
	if s.first != nil {
		f, ok := m.(*Frame)
		if !ok {
			return status.Errorf(codes.Internal, "sidecar: a message of type %T on the raw stream", m)
		}
		*f = *s.first
		s.first = nil
		return nil
	}
	return s.ServerStream.RecvMsg(m)
}
