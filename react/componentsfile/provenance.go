package componentsfile

import (
	"fmt"
	"strings"

	"github.com/mergectl/react-triton/react"
)

// taskFields are the per-task metadata fields the format defines; a
// task's provenance uses any other field name.
var taskFields = map[string]bool{"n": true, "expert": true, "expert_version": true, "expert_output": true,
	MetaSumSquares: true, MetaReconError: true}

// encodeProvenance adds a task's provenance entries to the metadata, as
// "task.<name>.<key>".
func encodeProvenance(md map[string]string, t *react.TaskStats) error {
	for k, v := range t.Provenance {
		if k == "" || taskFields[k] {
			return fmt.Errorf("task %q: provenance key %q is reserved", t.Name, k)
		}
		md[MetaTaskKey(t.Name, k)] = v
	}
	return nil
}

// decodeProvenance returns the provenance entries of a task in the
// metadata: every "task.<name>.<key>" whose key is not a field of the
// format, nil when there are none.
func decodeProvenance(md map[string]string, name string) map[string]string {
	prefix := MetaTaskKey(name, "")
	var p map[string]string
	for k, v := range md {
		field, ok := strings.CutPrefix(k, prefix)
		if !ok || taskFields[field] || field == "" {
			continue
		}
		if p == nil {
			p = map[string]string{}
		}
		p[field] = v
	}
	return p
}
