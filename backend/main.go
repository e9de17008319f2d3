// Command backend is the react Triton backend: a C shared library,
// libtriton_react.so, built with
//
//	go build -buildmode=c-shared -o bin/backends/react/libtriton_react.so ./backend
//
// which a stock tritonserver loads from <backend-directory>/react/ for every
// model whose configuration says backend: "react". Such a model takes an
// embedding (a merged backbone's output, FP32, FP16 or BF16, [batch, D]) and
// returns the corrected embedding W_p z in the same datatype, W_p solved for
// the request's preference: the react-preference or react-preset request
// parameter (which Triton's ensembles pass to every step, and which Triton
// fills from the same headers with --grpc-header-forward-pattern and
// --http-header-forward-pattern), else the model's default.
//
// This package only translates between Triton's C API, declared in
// triton.h, and package backend/model, which holds the logic and its
// tests. docs/backend.md describes the model's configuration, the
// lifecycle and how the Go runtime behaves inside tritonserver.
package main

// main is never called: a c-shared library's entry points are its exported
// functions. Without cgo (CGO_ENABLED=0) this file alone builds, so that
// `go build ./...` and `go vet ./...` work everywhere.
func main() {}
