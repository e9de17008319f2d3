#!/usr/bin/env bash
# Runs every test: the Go unit, property and fuzz-corpus tests, then the
# interoperability and end-to-end tests that need the Python venv and a real
# Triton. REACT_E2E=1 makes those tests fail, not skip, when what they need
# is missing.
#
# One real Triton (scripts/triton-up, the venv's tritonserver 2.51.0) serves
# two model repositories on free ports for the whole run: the protocol-test
# models of triton/testdata/repo and the demo zoo of tritonmodels/repo (about
# 20 more Python-backend models and our react backend's models, so start-up
# takes longer; react-* headers are forwarded to backends as request
# parameters, as docs/backend.md recommends). The tests find it in
#   TRITON_GRPC_ADDR, TRITON_HTTP_ADDR, TRITON_METRICS_ADDR   (127.0.0.1:port)
#   TRITON_MODEL_REPOSITORY                                   (absolute path)
#   ZOO_MODEL_REPOSITORY                                      (absolute path)
# In front of it runs the sidecar (built here from cmd/sidecar) with the
# zoo's configuration (tritonmodels/zoo/sidecar.yaml): the zoo's ensembles
# are its controllable models, and everything else passes through, so that
# the same tests also prove it a drop-in:
#   SIDECAR_GRPC_ADDR, SIDECAR_HTTP_ADDR, SIDECAR_METRICS_ADDR (127.0.0.1:port)
#   SIDECAR_CONFIG                                            (absolute path)
# Both are stopped on exit; if anything failed, the tails of their logs are printed.
# Both the Go tests and pytest always run; the exit status is non-zero if
# either failed (pytest's "no tests collected", status 5, counts as a failure).
# On failure the Triton log tail is printed, then pytest's closing line again,
# so that it stays the last line of the output.
set -euo pipefail
cd "$(dirname "$0")/.."
export REACT_E2E=1

[ -x .venv/bin/python ] || { echo "test: no .venv: run make setup" >&2; exit 1; }
repo=$PWD/triton/testdata/repo
zoo_repo=$PWD/tritonmodels/repo
run_dir=$(mkdir -p .cache/triton && mktemp -d "$PWD/.cache/triton/test.XXXXXX")
pid_file=$run_dir/tritonserver.pid
log=$run_dir/tritonserver.log
sidecar_log=$run_dir/sidecar.log
sidecar_pid=

# free_ports, and start_sidecar and stop_sidecar, shared with the other
# scripts that start a Triton and a sidecar
. scripts/lib/ports.sh
. scripts/lib/sidecar.sh

status=0
finish() {
	local rc=$?
	[ "$status" -ne 0 ] || status=$rc
	stop_sidecar
	scripts/triton-down --pid "$pid_file" >/dev/null 2>&1 || true
	if [ "$status" -ne 0 ]; then
		if [ -s "$log" ]; then
			echo "--- last lines of the Triton log ($log):" >&2
			tail -n 60 "$log" >&2
			echo "--- end of the Triton log" >&2
		fi
		if [ -s "$sidecar_log" ]; then
			echo "--- last lines of the sidecar log ($sidecar_log):" >&2
			tail -n 20 "$sidecar_log" >&2
			echo "--- end of the sidecar log" >&2
		fi
		# Keep pytest's closing line last.
		[ ! -s "$run_dir/pytest.out" ] || tail -n 1 "$run_dir/pytest.out"
	else
		rm -rf "$run_dir"
	fi
	exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM


# The binaries and the react backend, as make build makes them (OpenBLAS):
# the zoo's react models need bin/backends/react/libtriton_react.so.
make -s build

# A port can be taken between the check and Triton's bind: retry with others.
started=
for attempt in 1 2 3; do
	read -r grpc_port http_port metrics_port < <(free_ports)
	if scripts/triton-up --repo "$repo" --repo "$zoo_repo" --grpc-port "$grpc_port" --http-port "$http_port" \
		--metrics-port "$metrics_port" --log "$log" --pid "$pid_file" --timeout 300 \
		-- --grpc-header-forward-pattern='react-.*' --http-header-forward-pattern='react-.*'; then
		started=1
		break
	fi
	echo "test: Triton did not start (attempt $attempt)" >&2
done
[ -n "$started" ] || { status=1; exit 1; }

export TRITON_GRPC_ADDR=127.0.0.1:$grpc_port
export TRITON_HTTP_ADDR=127.0.0.1:$http_port
export TRITON_METRICS_ADDR=127.0.0.1:$metrics_port
export TRITON_MODEL_REPOSITORY=$repo
export ZOO_MODEL_REPOSITORY=$zoo_repo

# The sidecar in front of it, on free ports, ready once Triton is ready and
# the controllable models are built.
cp bin/sidecar "$run_dir/sidecar"
export SIDECAR_CONFIG=$PWD/tritonmodels/zoo/sidecar.yaml
SIDECAR_BIN=$run_dir/sidecar start_sidecar "$SIDECAR_CONFIG" "$TRITON_GRPC_ADDR" "$TRITON_HTTP_ADDR" "$sidecar_log" || { status=1; exit 1; }
export SIDECAR_GRPC_ADDR=$sidecar_grpc SIDECAR_HTTP_ADDR=$sidecar_http SIDECAR_METRICS_ADDR=$sidecar_metrics

# Every package on gonum's pure-Go kernels, then the ones that compute on
# OpenBLAS as well (the openblas tag: what make build links), so that the
# property and reference tests run against both backends.
go test -count=1 ./... || status=1
go test -count=1 -tags openblas ./react/... ./control/... ./sidecar/... ./calibrate/... ./backend/... || status=1
# The cuda build (docs/gpu.md), which needs no GPU: the binaries and the
# backend link (make build-cuda), the test binaries of every package with
# cuda code compile, and the tests that need no device run, twice: without
# libcuda (the CUDA libraries cannot be loaded: auto falls back to the CPU
# and says why), then with the libraries of .cache/cuda and the libcuda stub
# first on the library path (every CUDA function resolves in the real
# CUDA 13 libraries; cuInit fails as on a machine without a GPU).
make -s build-cuda || status=1
cuda_pkgs=(./react/... ./control/... ./backend/...)
REACT_CUDA_EXPECT=none go test -count=1 -tags 'openblas cuda' \
	-run 'TestOpen|TestLibraries|TestUseBackend|Device|OneNorm' "${cuda_pkgs[@]}" || status=1
LD_LIBRARY_PATH="$PWD/.cache/cuda/stubs:$PWD/.cache/cuda/lib" REACT_CUDA_EXPECT=stub go test -count=1 -tags 'openblas cuda' \
	-run 'TestOpen|TestLibraries|TestUseBackend' ./react/... || status=1
# Then every test of those packages on the cuda backend, the device tests
# included (they run, not skip), under the CUDA emulator: a strict
# host-memory stand-in for the driver, cuBLAS, cuSOLVER and the runtime
# (scripts/cuda-emulator.sh, its self-test first; docs/gpu.md, "The
# emulator"). About 7 s on two cores (the test binaries are the ones above).
bash scripts/cuda-emulator.sh --check || status=1
# The emulator's mutation proof (scripts/cuda-mutants.sh, minutes) is not
# run here, but each of its mutants must still apply to the code it breaks.
bash scripts/cuda-mutants.sh --patterns || status=1
LD_LIBRARY_PATH="$PWD/.cache/cudaemu" REACT_TEST_BACKEND=cuda REACT_CUDA_EXPECT=emulator go test -count=1 -tags 'openblas cuda' \
	"${cuda_pkgs[@]}" || status=1
LD_LIBRARY_PATH="$PWD/.cache/cudaemu" REACT_EMU_DEVICES=0 REACT_CUDA_EXPECT=nodevice go test -count=1 -tags 'openblas cuda' \
	-run '^TestOpen$' ./react/internal/cuda || status=1
# What the GPU run would send through the device tool (at most 64 MiB):
# its test binaries built, and the staged working tree (bench/gpu.sh).
bench/gpu.sh prepare >/dev/null && bench/gpu.sh size || status=1
# The servers' packages again under the race detector: concurrent requests,
# reloads and streams (about half a minute).
go test -race -count=1 ./control/... ./sidecar/... ./backend/... || status=1
# The deployment files (docker/: Kubernetes manifests rendered and decoded
# strictly, the compose file, the Dockerfiles against the Makefile), in a
# module of their own so that the main module does not depend on k8s.io/api.
(cd docker/deploytest && go test -count=1 ./...) || status=1
# The zoo's own tests, in the zoo venv (torch): the second zoo's
# EfficientNet-Lite0 against an independent implementation, and its strict
# weight loading (make setup creates .cache/zoo-venv).
[ -x .cache/zoo-venv/bin/python ] || { echo "test: no .cache/zoo-venv: run make setup" >&2; status=1; }
[ ! -x .cache/zoo-venv/bin/python ] || .cache/zoo-venv/bin/python -m pytest -q tritonmodels/zoo/tests || status=1

# (tests/test_sidecar_ops.py and tests/test_sidecar_graph.py start small
# Tritons of their own beside this one: the latter on a model repository it
# generates, tests/graph_repo.py.)
.venv/bin/python -m pytest -q tests/ 2>&1 | tee "$run_dir/pytest.out" || status=1
