# syntax=docker/dockerfile:1
#
# NVIDIA's Triton image with our backend: libtriton_react.so in
# /opt/tritonserver/backends/react/, for backend mode (docs/backend.md).
# The build runs `make build-cuda` (docker/deploytest checks it): the cuda
# build, which solves and applies W_p on the GPU when one opens, corrects a
# GPU backbone's output in place (docs/gpu.md), and otherwise runs on
# OpenBLAS as `make build`'s does, saying why in Triton's log.
# UNTESTED: no Docker engine existed where it was written (docs/deploy.md).
#
#   make image-triton     # the production image (target "triton")
#
# The target "zoo" adds onnxruntime for the Python backend, which the demo
# zoo's models (tritonmodels/repo) run on; docker/compose.yaml builds it.
#
# TRITON_VERSION and CUDA_VERSION (docker/.env, the one place they are
# recorded: Triton's release and the CUDA it is built with) and GO_VERSION
# (go.mod) come from the Makefile or from compose.

ARG TRITON_VERSION
ARG GO_VERSION
ARG CUDA_VERSION

FROM golang:${GO_VERSION}-bookworm AS go

# The CUDA headers the cuda code compiles against (cuda.h, cublas_v2.h,
# cusolverDn.h); it links no CUDA library (it opens them at run time).
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS cuda

# The backend is built on Triton's own image, so it links the glibc, and
# the OpenBLAS and LAPACKE sonames, it will run with (Ubuntu 22.04 in 24.10).
FROM nvcr.io/nvidia/tritonserver:${TRITON_VERSION}-py3 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc libc6-dev make libopenblas-dev liblapacke-dev \
 && rm -rf /var/lib/apt/lists/*
COPY --from=go /usr/local/go /usr/local/go
COPY --from=cuda /usr/local/cuda/include /usr/local/cuda/include
ENV PATH=/usr/local/go/bin:$PATH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build-cuda

FROM nvcr.io/nvidia/tritonserver:${TRITON_VERSION}-py3 AS triton
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libopenblas0-pthread liblapacke \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/cuda/backends/react/libtriton_react.so /opt/tritonserver/backends/react/
# NGC's image has the user triton-server (uid 1000); run as it.
USER 1000

# The demo zoo's models run ONNX files through the Python backend with
# onnxruntime; 1.19.2 is the version Triton 24.10's own onnxruntime backend
# ships (tritonmodels/zoo/requirements.txt).
FROM triton AS zoo
USER root
RUN pip install --no-cache-dir onnxruntime==1.19.2
USER 1000

# The default target is the production image.
FROM triton
