package controllable

import (
	"net"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/mergectl/react-triton/sidecar/pipeline"
)

// clientKey is the key by which the W_p cache limits the new preferences
// one client may have solved (admission.key_rate): the value of
// admission.key_header, else of the key header of the model's experiment,
// else the peer's address without its port (every client behind one proxy
// shares it). get reads a request header (gRPC metadata); peer is the
// peer's address, host:port.
func (ms *Models) clientKey(m *pipeline.Model, get func(string) string, peer string) string {
	if h := ms.Config().Admission.KeyHeader; h != "" {
		if v := get(h); v != "" {
			return "key:" + v
		}
	}
	if h := m.KeyHeader(); h != "" {
		if v := get(h); v != "" {
			return "key:" + v
		}
	}
	if host, _, err := net.SplitHostPort(peer); err == nil {
		return "peer:" + host
	}
	return "peer:" + peer
}

// metadataGetter reads gRPC metadata as clientKey reads headers.
func metadataGetter(md metadata.MD) func(string) string {
	return func(k string) string {
		if v := md.Get(strings.ToLower(k)); len(v) > 0 {
			return v[0]
		}
		return ""
	}
}

// peerAddr is the address of a gRPC call's peer, "" when unknown.
func peerAddr(p *peer.Peer, ok bool) string {
	if !ok || p.Addr == nil {
		return ""
	}
	return p.Addr.String()
}
