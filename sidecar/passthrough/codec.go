package passthrough

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// Frame is one gRPC message as it travels on the wire, undecoded: the
// serialized bytes of a request or a response.
type Frame struct {
	Payload []byte
}

// Codec passes Frames through untouched. It is forced on the proxy's
// server (grpc.ForceServerCodecV2) and on its upstream calls
// (grpc.ForceCodecV2), never registered globally, so other gRPC users in the
// process keep the proto codec.
//
// It implements encoding.CodecV2 directly, so that who owns a message's
// bytes is decided here and not by grpc's internals: Unmarshal copies the
// received buffers into a slice the Frame owns (grpc frees its buffers once
// Unmarshal returns), and Marshal hands grpc the Frame's slice, which the
// proxy never touches again.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// Marshal returns the Frame's bytes as they are.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*Frame)
	if !ok {
		return nil, fmt.Errorf("raw codec: marshal: want *passthrough.Frame, got %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(f.Payload)}, nil
}

// Unmarshal copies the received message into the Frame. The proxy uses a new
// Frame per message, because grpc may still read a sent message after
// SendMsg returns.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*Frame)
	if !ok {
		return fmt.Errorf("raw codec: unmarshal: want *passthrough.Frame, got %T", v)
	}
	f.Payload = data.Materialize()
	return nil
}

// Name is the content-subtype the codec claims: "proto", because the frames
// are Triton's protobuf messages and peers expect application/grpc+proto
// (or plain application/grpc).
func (Codec) Name() string { return "proto" }
