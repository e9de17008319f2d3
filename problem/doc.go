// Package problem is how every configuration surface of ReACT says what is
// wrong with a value: the sidecar's YAML file, its REACT_* environment and
// flags, calibrate's files and flags, the react backend's Triton model
// parameters, and the sidecar's checks of a configuration against a live
// Triton.
//
// A Problem names the value by its path in the surface's own terms
// ("components[1].presets.balanced", "parameters.beta",
// "models[0].heads[1].model"), says what is wrong without repeating the
// path, and where the value came from: a line of the file, or a flag or
// environment variable. A transient problem may go away by itself (a model
// not loaded yet); a permanent one needs a change of configuration.
//
// A List is every problem found at once, and is itself an error:
//
//	var l problem.List
//	if errors.As(err, &l) {
//		for _, p := range l { ... }
//	}
//
// Key and Index build paths, so that every surface writes them alike:
// keys after a dot, list indexes in brackets, and map keys that are not
// plain words quoted in brackets (`outputs["scores:0"]`).
package problem
