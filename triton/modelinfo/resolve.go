package modelinfo

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton"
)

// Resolve asks the server c about a model version once: whether it is
// ready (a *triton.NotReadyError if not), its metadata, and its configuration
// (left nil when the server does not implement ModelConfig). An empty
// version lets the server choose. The rules that pick the model's inputs
// and outputs are the result's methods.
func Resolve(ctx context.Context, c *triton.Client, model, version string) (*Info, error) {
	ready, err := c.ModelReady(ctx, model, version)
	if err != nil {
		return nil, err
	}
	if !ready {
		return nil, &triton.NotReadyError{Model: model, Version: version, Addr: c.Addr()}
	}
	m := &Info{Name: model, Version: version}
	if m.Metadata, err = c.ModelMetadata(ctx, model, version); err != nil {
		return nil, err
	}
	if m.Config, err = c.ModelConfig(ctx, model, version); err != nil && status.Code(err) != codes.Unimplemented {
		return nil, err
	}
	return m, nil
}
