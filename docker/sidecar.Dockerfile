# syntax=docker/dockerfile:1
#
# The sidecar and calibrate, pure Go and static (CGO_ENABLED=0: gonum's
# kernels, linalg backend "go"), on a minimal non-root base. The build runs
# `make build-go`, as CI does; nothing here compiles Go another way
# (docker/deploytest checks it).
#
#   make image     # docker build -f docker/sidecar.Dockerfile --build-arg GO_VERSION=... .
#
# The build context is the repository root (.dockerignore keeps it small).
# GO_VERSION is go.mod's go line (major.minor); the Makefile passes it.

ARG GO_VERSION

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# The modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build-go

# distroless/static: no shell, no package manager, CA certificates and
# tzdata; user 65532 ("nonroot").
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/bin/go/sidecar /src/bin/go/calibrate /usr/local/bin/
USER 65532:65532
# Triton's protocol (HTTP, gRPC) and the metrics, as sidecar/config/example.yaml's
# listen section.
EXPOSE 8000 8001 8003
ENTRYPOINT ["/usr/local/bin/sidecar"]
CMD ["--config", "/etc/react/sidecar.yaml"]
