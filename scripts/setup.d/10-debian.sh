#!/usr/bin/env bash
# Debian packages the Triton runtime needs. Idempotent: `apt-get update` and
# `apt-get install` run only when a package is missing.
#
#   python3.11, python3.11-venv  the interpreter the venv is made from (Debian's,
#                                not pyenv's: see 20-python.sh)
#   libpython3.11                libpython3.11.so.1.0, which the Python backend
#                                stub (python_backend_stubs/3.11) links to;
#                                nvidia-pytriton does not bundle it
#   libexpat1, zlib1g            the other system libraries the stub needs
#                                (`ldd`); tritonserver and libtriton_python.so
#                                find everything else in nvidia_pytriton.libs
#   libb64-0d, patchelf          perf_analyzer (from the tritonclient wheel)
#                                links to libb64.so.0d; patchelf points it at
#                                the venv's libcudart.so.12 (20-python.sh)
#   curl                         scripts/triton-up polls /v2/health/ready
#   util-linux                   setsid, so triton-down can stop the stubs too
#   libopenblas-dev,             OpenBLAS and LAPACKE, which make build links
#   liblapacke-dev               (the openblas build tag: docs/linear-algebra.md)
set -euo pipefail

# shellcheck source=../lib/debian.sh
. "$(dirname "$0")/../lib/debian.sh"
ensure_debian_packages debian python3.11 python3.11-venv libpython3.11 libexpat1 zlib1g libb64-0d patchelf curl util-linux libopenblas-dev liblapacke-dev
