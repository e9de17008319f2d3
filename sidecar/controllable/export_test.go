package controllable

import (
	"context"

	"github.com/mergectl/react-triton/sidecar/limits"
	"github.com/mergectl/react-triton/sidecar/passthrough"
)

// What the external tests read of the controllable models' internals.

// ModelName is modelName, for the fuzz target.
var ModelName = modelName

// StringField is passthrough.StringField, for the fuzz target.
var StringField = passthrough.StringField

// Budget returns the budget of request bodies the models hold against.
func (ms *Models) Budget() *limits.Budget { return ms.budget }

// Readers returns what the models know of which Triton models read
// ReACT's parameters (backend mode).
func (ms *Models) Readers() *reactReaders { return ms.readers }

// Reads asks whether a model version reads ReACT's parameters.
func (r *reactReaders) Reads(ctx context.Context, model, version string) (bool, error) {
	return r.reads(ctx, model, version)
}

// Known returns how many answers r holds.
func (r *reactReaders) Known() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.known)
}
