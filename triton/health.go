package triton

import (
	"context"
	"fmt"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// ServerLive reports whether the server is live.
func (c *Client) ServerLive(ctx context.Context) (bool, error) {
	var resp *tritonpb.ServerLiveResponse
	err := c.call(ctx, "ServerLive", func(ctx context.Context) (err error) {
		resp, err = c.rpc.ServerLive(ctx, &tritonpb.ServerLiveRequest{})
		return err
	})
	return resp.GetLive(), err
}

// ServerReady reports whether the server is ready for inference.
func (c *Client) ServerReady(ctx context.Context) (bool, error) {
	var resp *tritonpb.ServerReadyResponse
	err := c.call(ctx, "ServerReady", func(ctx context.Context) (err error) {
		resp, err = c.rpc.ServerReady(ctx, &tritonpb.ServerReadyRequest{})
		return err
	})
	return resp.GetReady(), err
}

// ModelReady reports whether a model is ready for inference. An empty
// version lets the server choose.
func (c *Client) ModelReady(ctx context.Context, model, version string) (bool, error) {
	var resp *tritonpb.ModelReadyResponse
	err := c.call(ctx, opName("ModelReady", model, version), func(ctx context.Context) (err error) {
		resp, err = c.rpc.ModelReady(ctx, &tritonpb.ModelReadyRequest{Name: model, Version: version})
		return err
	})
	return resp.GetReady(), err
}

// Health asks the server's grpc.health.v1 service about service ("" for
// the server as a whole). A server without the health service gives an
// UNIMPLEMENTED error.
func (c *Client) Health(ctx context.Context, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	var resp *healthpb.HealthCheckResponse
	err := c.call(ctx, fmt.Sprintf("Health %q", service), func(ctx context.Context) (err error) {
		resp, err = c.health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		return err
	})
	return resp.GetStatus(), err
}
