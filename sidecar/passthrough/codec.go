package passthrough

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
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
//
// A message that is not a Frame but a protobuf message, the request and
// answer of a service registered on the proxy's server beside the
// pass-through (the sidecar's own react.Feedback), is encoded and decoded
// as grpc's proto codec does.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// protoCodec is grpc's own codec for protobuf messages.
var protoCodec = encoding.GetCodecV2(protoenc.Name)

// Marshal returns the Frame's bytes as they are, or a protobuf message
// encoded.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *Frame:
		return mem.BufferSlice{mem.SliceBuffer(m.Payload)}, nil
	case proto.Message:
		return protoCodec.Marshal(m)
	}
	return nil, fmt.Errorf("raw codec: marshal: want *passthrough.Frame or a protobuf message, got %T", v)
}

// Unmarshal copies the received message into the Frame, or decodes it into
// a protobuf message. The proxy uses a new Frame per message, because grpc
// may still read a sent message after SendMsg returns.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *Frame:
		m.Payload = data.Materialize()
		return nil
	case proto.Message:
		return protoCodec.Unmarshal(data, m)
	}
	return fmt.Errorf("raw codec: unmarshal: want *passthrough.Frame or a protobuf message, got %T", v)
}

// Name is the content-subtype the codec claims: "proto", because the frames
// are Triton's protobuf messages and peers expect application/grpc+proto
// (or plain application/grpc).
func (Codec) Name() string { return "proto" }
