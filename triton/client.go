package triton

import (
	"context"
	"fmt"
	"math"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Client is a connection to one Triton server. It is safe for concurrent
// use; all calls share one *grpc.ClientConn.
type Client struct {
	addr   string
	opts   options
	conn   *grpc.ClientConn
	rpc    tritonpb.GRPCInferenceServiceClient
	health healthpb.HealthClient

	mu   sync.Mutex
	meta map[modelKey]*tritonpb.ModelMetadataResponse
	cfg  map[modelKey]*tritonpb.ModelConfig
}

type modelKey struct{ model, version string }

// Dial returns a client of the Triton server at addr (host:port, or any
// gRPC target). Unless WithBlock is given it does not wait for the
// connection: an unreachable server shows up as UNAVAILABLE on the first
// call. ctx bounds only the wait of WithBlock.
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	switch {
	case o.tlsFiles != nil:
		cfg, err := o.tlsFiles.Config()
		if err != nil {
			return nil, fmt.Errorf("triton: dialing %s: %w", addr, err)
		}
		creds = credentials.NewTLS(cfg)
	case o.tlsConfig != nil:
		creds = credentials.NewTLS(o.tlsConfig)
	}
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// Triton and its clients allow messages up to INT32_MAX.
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(math.MaxInt32),
			grpc.MaxCallSendMsgSize(math.MaxInt32),
		),
	}
	if o.keepalive != nil {
		dialOpts = append(dialOpts, grpc.WithKeepaliveParams(*o.keepalive))
	}
	dialOpts = append(dialOpts, o.dialOpts...)
	conn, err := grpc.NewClient(addr, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("triton: dialing %s: %w", addr, err)
	}
	c := &Client{
		addr:   addr,
		opts:   o,
		conn:   conn,
		rpc:    tritonpb.NewGRPCInferenceServiceClient(conn),
		health: healthpb.NewHealthClient(conn),
		meta:   make(map[modelKey]*tritonpb.ModelMetadataResponse),
		cfg:    make(map[modelKey]*tritonpb.ModelConfig),
	}
	conn.Connect()
	if o.block {
		if err := c.waitReady(ctx); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return c, nil
}

// waitReady waits until the connection is ready or ctx ends.
func (c *Client) waitReady(ctx context.Context) error {
	for {
		s := c.conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if s == connectivity.Idle {
			c.conn.Connect()
		}
		if !c.conn.WaitForStateChange(ctx, s) {
			return &Error{Addr: c.addr, Op: "connecting", Code: codes.Unavailable,
				Err: fmt.Errorf("not ready before the deadline (connection %s): %w", s, ctx.Err())}
		}
	}
}

// Addr returns the address the client was dialed with.
func (c *Client) Addr() string { return c.addr }

// Conn returns the client's connection, to share it with other gRPC
// clients (for example a pass-through of RPCs this package does not cover).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// RPC returns the generated client of the inference service, on the
// client's connection, for calls this package does not wrap. It applies
// none of the client's deadlines, retries or validation.
func (c *Client) RPC() tritonpb.GRPCInferenceServiceClient { return c.rpc }

// Close closes the connection. Calls in flight fail with CANCELED.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("triton: closing connection to %s: %w", c.addr, err)
	}
	return nil
}

// callCtx applies the default deadline when ctx has none.
func (c *Client) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.opts.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.opts.timeout)
}

// wrap annotates the error of an RPC with the address and operation, and
// keeps its gRPC code. A deadline that expires while the connection is not
// ready means the server could not be reached: that is UNAVAILABLE.
func (c *Client) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	code := status.Code(err)
	if code == codes.Unknown {
		code = status.FromContextError(err).Code()
	}
	if code == codes.DeadlineExceeded {
		if s := c.conn.GetState(); s != connectivity.Ready {
			code = codes.Unavailable
			err = fmt.Errorf("server not reachable before the deadline (connection %s): %w", s, err)
		}
	}
	return &Error{Addr: c.addr, Op: op, Code: code, Err: err}
}
