package backendmode

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// configClient answers ModelConfig with the backend it holds for every
// model, counting the calls; the other methods are not used.
type configClient struct {
	tritonpb.GRPCInferenceServiceClient
	backend string
	calls   int
}

func (c *configClient) ModelConfig(_ context.Context, in *tritonpb.ModelConfigRequest, _ ...grpc.CallOption) (*tritonpb.ModelConfigResponse, error) {
	c.calls++
	return &tritonpb.ModelConfigResponse{Config: &tritonpb.ModelConfig{Name: in.GetName(), Backend: c.backend}}, nil
}

// TestReactReadersExpire: what the sidecar learnt about a model is trusted
// for readersTTL, then asked again (a model replaced by a react-backend
// version gets its parameters within that time), and Forget (a reload)
// drops it at once.
func TestReactReadersExpire(t *testing.T) {
	c := &configClient{backend: "python"}
	now := time.Unix(1000, 0)
	r := NewReaders(c)
	r.now = func() time.Time { return now }
	ask := func(want bool, calls int) {
		t.Helper()
		got, err := r.reads(context.Background(), "m", "")
		if err != nil {
			t.Fatal(err)
		}
		if got != want || c.calls != calls {
			t.Fatalf("at %v: reads %v after %d calls to Triton, want %v after %d", now.Sub(time.Unix(1000, 0)), got, c.calls, want, calls)
		}
	}
	ask(false, 1)
	c.backend = "react" // Triton loads a react-backend version
	now = now.Add(readersTTL - time.Millisecond)
	ask(false, 1) // still trusted
	now = now.Add(time.Millisecond)
	ask(true, 2) // expired: asked again
	c.backend = "python"
	r.Forget() // a reload
	ask(false, 3)
}
