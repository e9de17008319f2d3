# Build, test and run entry points. Every dependency is installed by
# `make setup` (scripts/setup.sh); nothing is installed by hand.

GO       ?= go
BIN      := bin
# The binaries link OpenBLAS and LAPACKE (Debian's libopenblas-dev and
# liblapacke-dev, installed by make setup) through cgo: the openblas build
# tag (docs/linear-algebra.md). `make build-go` builds pure-Go binaries
# instead (CGO_ENABLED=0), as a static container image does.
GOTAGS   ?= openblas
VENV     := .venv
GOFILES  := $(shell git ls-files '*.go' 2>/dev/null)

# Container images (docs/deploy.md). docker/.env records the versions of
# the base images once: TRITON_VERSION (NGC's tritonserver release),
# GO_VERSION and CUDA_VERSION; compose reads the same file.
include docker/.env
DOCKER       ?= docker
IMAGE_PREFIX ?= mergectl/react-
IMAGE_TAG    ?= dev

.PHONY: all setup build build-go build-cuda gpu-prepare image image-cuda image-triton bench-linalg test test-unit bench lint proto proto-check demo serve zoo report clean help

all: build

## setup: install every dependency (Go modules and tools, Debian packages, the Python venv with Triton)
setup:
	scripts/setup.sh

## build: bin/calibrate, bin/sidecar and the Triton backend bin/backends/react/libtriton_react.so, with OpenBLAS (cgo, the openblas tag)
build:
	$(GO) build -tags '$(GOTAGS)' -o $(BIN)/calibrate ./cmd/calibrate
	$(GO) build -tags '$(GOTAGS)' -o $(BIN)/sidecar ./cmd/sidecar
	$(GO) build -tags '$(GOTAGS)' -buildmode=c-shared -o $(BIN)/backends/react/libtriton_react.so ./backend
	@rm -f $(BIN)/backends/react/libtriton_react.h

## build-go: bin/go/calibrate and bin/go/sidecar, pure Go (CGO_ENABLED=0, static)
build-go:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/go/calibrate ./cmd/calibrate
	CGO_ENABLED=0 $(GO) build -o $(BIN)/go/sidecar ./cmd/sidecar

## build-cuda: bin/cuda/calibrate, bin/cuda/sidecar and bin/cuda/backends/react/libtriton_react.so with W_p on the GPU (the cuda tag next to openblas; docs/gpu.md); CUDA headers from make setup (.cache/cuda) or /usr/local/cuda
build-cuda:
	@[ -f .cache/cuda/include/cusolverDn.h ] || [ -f /usr/local/cuda/include/cusolverDn.h ] || \
		{ echo "build-cuda: no CUDA headers in .cache/cuda/include or /usr/local/cuda/include: run make setup (scripts/setup.d/50-cuda.sh)" >&2; exit 1; }
	$(GO) build -tags '$(GOTAGS) cuda' -o $(BIN)/cuda/calibrate ./cmd/calibrate
	$(GO) build -tags '$(GOTAGS) cuda' -o $(BIN)/cuda/sidecar ./cmd/sidecar
	$(GO) build -tags '$(GOTAGS) cuda' -buildmode=c-shared -o $(BIN)/cuda/backends/react/libtriton_react.so ./backend
	@rm -f $(BIN)/cuda/backends/react/libtriton_react.h

## gpu-prepare: build the cuda test and benchmark binaries into .gpu/ for bench/gpu.sh run on a GPU machine (docs/gpu.md)
gpu-prepare:
	bench/gpu.sh prepare

## image: the sidecar image (docker/sidecar.Dockerfile: make build-go, static, non-root), where a Docker engine exists
image:
	$(DOCKER) build -f docker/sidecar.Dockerfile --build-arg GO_VERSION=$(GO_VERSION) -t $(IMAGE_PREFIX)sidecar:$(IMAGE_TAG) .

## image-cuda: the sidecar image with the cuda build (docker/sidecar-cuda.Dockerfile: make build-cuda), on NVIDIA's CUDA runtime
image-cuda:
	$(DOCKER) build -f docker/sidecar-cuda.Dockerfile --build-arg GO_VERSION=$(GO_VERSION) --build-arg CUDA_VERSION=$(CUDA_VERSION) -t $(IMAGE_PREFIX)sidecar-cuda:$(IMAGE_TAG) .

## image-triton: NGC's tritonserver $(TRITON_VERSION) with the react backend, cuda build (docker/triton.Dockerfile: make build-cuda)
image-triton:
	$(DOCKER) build -f docker/triton.Dockerfile --target triton --build-arg GO_VERSION=$(GO_VERSION) --build-arg TRITON_VERSION=$(TRITON_VERSION) --build-arg CUDA_VERSION=$(CUDA_VERSION) -t $(IMAGE_PREFIX)tritonserver:$(TRITON_VERSION)-$(IMAGE_TAG) .

## test: everything CI runs: setup, lint, unit, property, interop and end-to-end tests
test: setup build lint proto-check
	scripts/test.sh

## test-unit: the Go tests that need no Python venv and no Triton (pure Go, then with OpenBLAS)
test-unit:
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -tags '$(GOTAGS)' ./react/... ./control/... ./sidecar/... ./calibrate/... ./backend/...

## bench: the Go benchmarks, on one core, as recorded in bench/README.md
bench:
	GOMAXPROCS=1 $(GO) test -run '^$$' -bench 'Solve' -benchmem -cpu 1 -count 3 -benchtime 5x ./react/
	GOMAXPROCS=1 $(GO) test -run '^$$' -bench 'Correct|Accumulate|Hypervolume' -benchmem -cpu 1 -count 3 -benchtime 1s ./react/ ./evaluate/

## bench-linalg: pure Go, OpenBLAS and numpy/SciPy side by side on one core (bench/linalg.sh; bench/README.md)
bench-linalg: setup
	bench/linalg.sh

## lint: go vet (also of the cuda code, with make setup's CUDA headers) and gofmt
lint:
	$(GO) vet ./...
	$(GO) vet -tags '$(GOTAGS)' ./react/... ./control/... ./sidecar/... ./calibrate/... ./backend/...
	$(GO) vet -tags '$(GOTAGS) cuda' ./react/... ./control/... ./sidecar/... ./calibrate/... ./backend/... ./cmd/...
	cd docker/deploytest && $(GO) vet ./...
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## proto: regenerate the Go code in triton/tritonpb from triton/proto
proto:
	bash scripts/setup.d/05-protoc.sh
	scripts/gen-proto.sh

## proto-check: fail if the committed triton/tritonpb differs from a fresh generation
proto-check:
	@bash scripts/setup.d/05-protoc.sh
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	scripts/gen-proto.sh "$$tmp" && \
	if ! diff -r triton/tritonpb "$$tmp"; then \
		echo "proto-check: triton/tritonpb is out of date with triton/proto; run 'make proto' and commit the result" >&2; \
		exit 1; \
	fi

## zoo: rebuild a model zoo from packaged data, on the CPU (CI never runs it): ZOO=vit, the demo zoo (default, about 10 minutes), or ZOO=effnet, EfficientNet-Lite0 (tritonmodels/zoo-effnet/README.md)
ZOO ?= vit
zoo:
	ZOO=$(ZOO) scripts/zoo-build.sh

## serve: Triton with the zoo and the sidecar in front of it (scripts/serve; GRPC_PORT, HTTP_PORT choose the sidecar's ports)
serve: setup build
	scripts/serve $(if $(GRPC_PORT),--grpc-port $(GRPC_PORT)) $(if $(HTTP_PORT),--http-port $(HTTP_PORT))

## demo: the main job end to end on the bundled example
demo: setup build
	scripts/demo.sh

## report: regenerate docs/REPORT.md from scratch: fits and calibrate eval against a real Triton (scripts/report.sh)
report: setup build
	scripts/report.sh

clean:
	rm -rf $(BIN)

help:
	@grep -E '^## ' Makefile | sed 's/^## /  /'
