# syntax=docker/dockerfile:1
#
# The sidecar and calibrate with W_p on the GPU: the `cuda` build tag
# (cuBLAS and cuSOLVER, opened at run time; docs/gpu.md) next to OpenBLAS,
# on NVIDIA's CUDA runtime base. The build runs `make build-cuda`, which
# compiles against the devel image's headers in /usr/local/cuda/include.
# UNTESTED: no Docker engine existed where it was written (docs/deploy.md).
#
#   make image-cuda
#
# CUDA_VERSION (docker/.env: the CUDA of Triton's image) and GO_VERSION
# (go.mod) come from the Makefile.

ARG CUDA_VERSION
ARG GO_VERSION

FROM golang:${GO_VERSION}-bookworm AS go

# The devel image has the CUDA headers the cgo code compiles against;
# Ubuntu 22.04, as the runtime image below, so the glibc matches.
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates gcc libc6-dev make libopenblas-dev liblapacke-dev \
 && rm -rf /var/lib/apt/lists/*
COPY --from=go /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build-cuda

# The runtime image has cuBLAS and cuSOLVER (CUDA 12's sonames, which the
# cuda code tries after CUDA 13's); the driver's libcuda comes with the
# container runtime's GPU support. Without a GPU the sidecar runs on the
# CPU and logs why. OpenBLAS and LAPACKE are what the openblas tag links.
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu22.04
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libopenblas0-pthread liblapacke \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/cuda/sidecar /src/bin/cuda/calibrate /usr/local/bin/
USER 65532:65532
EXPOSE 8000 8001 8003
ENTRYPOINT ["/usr/local/bin/sidecar"]
CMD ["--config", "/etc/react/sidecar.yaml"]
