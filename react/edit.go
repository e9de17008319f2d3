package react

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// AddTasks appends copies of src's tasks to dst, after checking that both
// are valid, have the same feature dimension and the same backbone, and
// share no task name. dst keeps its own default β and normalisation. On
// error dst is unchanged.
func AddTasks(dst, src *Components) error {
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("adding tasks: destination: %w", err)
	}
	if err := src.Validate(); err != nil {
		return fmt.Errorf("adding tasks: source: %w", err)
	}
	if dst.D != src.D {
		return fmt.Errorf("adding tasks: feature dimension differs: %d in the destination, %d in the source", dst.D, src.D)
	}
	if dst.Backbone != src.Backbone {
		return fmt.Errorf("adding tasks: backbone differs: %s in the destination, %s in the source", describeRef(dst.Backbone), describeRef(src.Backbone))
	}
	for _, t := range src.Tasks {
		if _, ok := dst.Task(t.Name); ok {
			return fmt.Errorf("adding tasks: task %q is already present", t.Name)
		}
	}
	for _, t := range src.Tasks {
		dst.Tasks = append(dst.Tasks, copyTask(t))
	}
	return nil
}

// RemoveTasks removes the named tasks from c, keeping the others, and their
// order, untouched. Naming an unknown task, naming a task twice or removing
// every task is an error, and leaves c unchanged.
func RemoveTasks(c *Components, names ...string) error {
	if len(names) == 0 {
		return errors.New("removing tasks: no task named")
	}
	drop := make(map[string]bool, len(names))
	for _, name := range names {
		if drop[name] {
			return fmt.Errorf("removing tasks: task %q named twice", name)
		}
		if _, ok := c.Task(name); !ok {
			return fmt.Errorf("removing tasks: unknown task %q (known: %s)", name, strings.Join(c.TaskNames(), ", "))
		}
		drop[name] = true
	}
	if len(drop) == len(c.Tasks) {
		return errors.New("removing tasks: that would remove every task")
	}
	kept := make([]*TaskStats, 0, len(c.Tasks)-len(drop))
	for _, t := range c.Tasks {
		if !drop[t.Name] {
			kept = append(kept, t)
		}
	}
	c.Tasks = kept
	return nil
}

func copyTask(t *TaskStats) *TaskStats {
	c := *t
	c.Provenance = maps.Clone(t.Provenance)
	c.S = mat.DenseCopyOf(t.S)
	c.WOrth = mat.DenseCopyOf(t.WOrth)
	g := mat.NewSymDense(t.G.SymmetricDim(), nil)
	g.CopySym(t.G)
	c.G = g
	return &c
}

func describeRef(m ModelRef) string {
	if m == (ModelRef{}) {
		return "(unnamed)"
	}
	return fmt.Sprintf("model %q version %q output %q", m.Name, m.Version, m.Output)
}
