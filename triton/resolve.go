package triton

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NotReadyError says that Triton answered that a model version is not
// ready. Its gRPC code is UNAVAILABLE: a model being loaded may become
// ready.
type NotReadyError struct {
	Model, Version string
	Addr           string // the server, for the message
}

// Error formats the error as `model "name" is not ready on Triton ADDR`.
func (e *NotReadyError) Error() string {
	return fmt.Sprintf("%s is not ready on Triton %s", DescribeModel(e.Model, e.Version), e.Addr)
}

// GRPCStatus returns an UNAVAILABLE status with the error's message.
func (e *NotReadyError) GRPCStatus() *status.Status { return status.New(codes.Unavailable, e.Error()) }

// ResolveModel asks the server about a model version once: whether it is
// ready (a *NotReadyError if not), its metadata, and its configuration
// (left nil when the server does not implement ModelConfig). An empty
// version lets the server choose. The rules that pick the model's inputs
// and outputs are the result's methods.
func (c *Client) ResolveModel(ctx context.Context, model, version string) (*ModelInfo, error) {
	ready, err := c.ModelReady(ctx, model, version)
	if err != nil {
		return nil, err
	}
	if !ready {
		return nil, &NotReadyError{Model: model, Version: version, Addr: c.addr}
	}
	m := &ModelInfo{Name: model, Version: version}
	if m.Metadata, err = c.ModelMetadata(ctx, model, version); err != nil {
		return nil, err
	}
	if m.Config, err = c.ModelConfig(ctx, model, version); err != nil && status.Code(err) != codes.Unimplemented {
		return nil, err
	}
	return m, nil
}
