package controllable

import (
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
