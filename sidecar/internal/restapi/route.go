package restapi

import "strings"

// HeaderContentLength is the HTTP header of Triton's binary tensor
// extension: the length of the JSON part of a body.
const HeaderContentLength = "Inference-Header-Content-Length"

// Route is a request path of Triton's HTTP API about one model:
// /v2/models/NAME[/versions/V][/ACTION].
type Route struct {
	Model, Version, Action string
}

// ParseRoute parses a /v2/models/... path; ok is false for any other path
// (and for /v2/models/stats, which is about every model).
func ParseRoute(path string) (r Route, ok bool) {
	rest, found := strings.CutPrefix(path, "/v2/models/")
	if !found || rest == "" {
		return r, false
	}
	parts := strings.Split(rest, "/")
	r.Model = parts[0]
	parts = parts[1:]
	if len(parts) >= 2 && parts[0] == "versions" {
		r.Version = parts[1]
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
	case 1:
		r.Action = parts[0]
	default:
		return r, false
	}
	return r, r.Model != ""
}
