package triton

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// ServerMetadata returns the server's name, version and extensions.
func (c *Client) ServerMetadata(ctx context.Context) (*tritonpb.ServerMetadataResponse, error) {
	var resp *tritonpb.ServerMetadataResponse
	err := c.call(ctx, "ServerMetadata", func(ctx context.Context) (err error) {
		resp, err = c.rpc.ServerMetadata(ctx, &tritonpb.ServerMetadataRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ModelMetadata returns a model's metadata: its versions, platform, and
// input and output tensors. An empty version lets the server choose. The
// answer is cached per model and version (Infer validates against it) until
// ForgetModel, or until the server answers a call about the model with an
// error that says the model changed state (see cache.go); the caller gets
// its own copy.
func (c *Client) ModelMetadata(ctx context.Context, model, version string) (*tritonpb.ModelMetadataResponse, error) {
	m, err := c.modelMetadata(ctx, model, version)
	if err != nil {
		return nil, err
	}
	return proto.CloneOf(m), nil
}

// modelMetadata returns the cached metadata, fetching it on a miss. The
// result is shared and must not be modified.
func (c *Client) modelMetadata(ctx context.Context, model, version string) (*tritonpb.ModelMetadataResponse, error) {
	key := modelKey{model, version}
	c.mu.Lock()
	m, ok := c.meta[key]
	c.mu.Unlock()
	if ok {
		return m, nil
	}
	err := c.call(ctx, opName("ModelMetadata", model, version), func(ctx context.Context) (err error) {
		m, err = c.rpc.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: model, Version: version})
		return err
	})
	if err != nil {
		c.forgetIfStale(model, err, false)
		return nil, err
	}
	c.mu.Lock()
	c.meta[key] = m
	c.mu.Unlock()
	return m, nil
}

// ModelConfig returns a model's configuration. An empty version lets the
// server choose. Fields our protocol files do not declare are kept as
// unknown fields, so the message re-encodes to what the server sent.
func (c *Client) ModelConfig(ctx context.Context, model, version string) (*tritonpb.ModelConfig, error) {
	var resp *tritonpb.ModelConfigResponse
	err := c.call(ctx, opName("ModelConfig", model, version), func(ctx context.Context) (err error) {
		resp, err = c.rpc.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: model, Version: version})
		return err
	})
	if err != nil {
		c.forgetIfStale(model, err, false)
		return nil, err
	}
	return resp.GetConfig(), nil
}

// modelConfig is ModelConfig, cached like modelMetadata. The result is
// shared and must not be modified.
func (c *Client) modelConfig(ctx context.Context, model, version string) (*tritonpb.ModelConfig, error) {
	key := modelKey{model, version}
	c.mu.Lock()
	cfg, ok := c.cfg[key]
	c.mu.Unlock()
	if ok {
		return cfg, nil
	}
	cfg, err := c.ModelConfig(ctx, model, version)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.cfg[key] = cfg
	c.mu.Unlock()
	return cfg, nil
}

// ForgetModel drops the cached metadata and configuration of a model, all
// versions, for example after the model was reloaded with other tensors.
// The client also does so itself when the server's errors say the model
// changed state (see cache.go).
func (c *Client) ForgetModel(model string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.meta {
		if k.model == model {
			delete(c.meta, k)
		}
	}
	for k := range c.cfg {
		if k.model == model {
			delete(c.cfg, k)
		}
	}
}

// ModelStatistics returns the cumulative inference statistics of a model
// version; an empty version means every version, and an empty model every
// model.
func (c *Client) ModelStatistics(ctx context.Context, model, version string) ([]*tritonpb.ModelStatistics, error) {
	var resp *tritonpb.ModelStatisticsResponse
	err := c.call(ctx, opName("ModelStatistics", model, version), func(ctx context.Context) (err error) {
		resp, err = c.rpc.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{Name: model, Version: version})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.GetModelStats(), nil
}

// RepositoryIndex lists the models of the server's repositories, only the
// ready ones if ready is true.
func (c *Client) RepositoryIndex(ctx context.Context, ready bool) ([]*tritonpb.RepositoryIndexResponse_ModelIndex, error) {
	var resp *tritonpb.RepositoryIndexResponse
	err := c.call(ctx, "RepositoryIndex", func(ctx context.Context) (err error) {
		resp, err = c.rpc.RepositoryIndex(ctx, &tritonpb.RepositoryIndexRequest{Ready: ready})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.GetModels(), nil
}
