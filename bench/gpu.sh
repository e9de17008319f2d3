#!/usr/bin/env bash
# The cuda backend on a GPU machine (docs/gpu.md), in two steps, because
# that machine has CUDA 13 and PyTorch but no Go toolchain and no network:
#
#   bench/gpu.sh prepare   here: make setup's CUDA headers, then the test
#                          binaries of react, react/internal/cuda, control
#                          and backend/model, built with the cuda tag (and no
#                          openblas: the GPU machine has no libopenblas),
#                          into .gpu/ (git-ignored)
#   bench/gpu.sh run       there, from the repository root with .gpu/ carried
#                          beside it: the tests with the GPU backend against the
#                          float64 CPU reference, then the benchmarks, ours and
#                          PyTorch's on the same GPU (bench/gpu_torch.py); the
#                          logs and the table (gpu-bench.md) go to $OUT, or
#                          to .gpu/out without it
#
# With the device tool: bench/gpu.sh prepare, then run `bench/gpu.sh run`
# there with carry [".gpu"]. The binaries open libcuda.so.1 (the driver's),
# libcublas.so.13 and libcusolver.so.12 with dlopen: run finds the last two
# in PyTorch's nvidia-* wheels (nvidia/cu13/lib) or a CUDA toolkit, and puts
# them on LD_LIBRARY_PATH (CUDA_LIBDIR=DIR names another place).
set -euo pipefail
cd "$(dirname "$0")/.."

# The test binaries, the packages they run in (their testdata is relative).
BINARIES=(
	"react.test react"
	"cuda.test react/internal/cuda"
	"control.test control"
	"model.test backend/model"
)

prepare() {
	bash scripts/setup.d/50-cuda.sh
	mkdir -p .gpu
	go test -c -tags cuda -o .gpu/react.test ./react
	go test -c -tags cuda -o .gpu/cuda.test ./react/internal/cuda
	go test -c -tags cuda -o .gpu/control.test ./control
	go test -c -tags cuda -o .gpu/model.test ./backend/model
	du -ch .gpu/*.test | tail -n 1
	echo "gpu: .gpu ready; on the GPU machine: bench/gpu.sh run (carry .gpu)"
}

# cuda_libdir prints the directory holding libcublas.so.13 and
# libcusolver.so.12 on this machine (CUDA_LIBDIR when set), or nothing.
cuda_libdir() {
	local py dir
	if [ -n "${CUDA_LIBDIR:-}" ]; then
		echo "$CUDA_LIBDIR"
		return
	fi
	for py in python3 /opt/torch/.venv/bin/python3; do
		command -v "$py" >/dev/null 2>&1 || [ -x "$py" ] || continue
		for dir in $("$py" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
			if [ -e "$dir/nvidia/cu13/lib/libcublas.so.13" ] && [ -e "$dir/nvidia/cu13/lib/libcusolver.so.12" ]; then
				echo "$dir/nvidia/cu13/lib"
				return
			fi
		done
	done
	for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
		if [ -e "$dir/libcublas.so.13" ]; then
			echo "$dir"
			return
		fi
	done
}

run() {
	local out=${OUT:-.gpu/out} root=$PWD status=0 bin dir libdir
	mkdir -p "$out"
	for b in "${BINARIES[@]}"; do
		bin=${b%% *}
		[ -x ".gpu/$bin" ] || { echo "gpu: .gpu/$bin missing: run bench/gpu.sh prepare and carry .gpu" >&2; exit 1; }
	done
	libdir=$(cuda_libdir)
	[ -n "$libdir" ] || { echo "gpu: no libcublas.so.13 and libcusolver.so.12 found" >&2; exit 1; }
	export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	{
		echo "libraries: $libdir"
		nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
	} | tee "$out/machine.txt"

	# The tests, with the GPU backend: REACT_TEST_BACKEND=cuda makes the
	# react package's tests fail rather than fall back when no GPU opens.
	export REACT_TEST_BACKEND=cuda REACT_CUDA_EXPECT=gpu
	for b in "${BINARIES[@]}"; do
		bin=${b%% *} dir=${b#* }
		echo "gpu: $bin (in $dir)"
		(cd "$dir" && "$root/.gpu/$bin" -test.count=1 -test.v) >"$out/test-${bin%.test}.log" 2>&1 || status=1
		grep -E '^(--- (FAIL|SKIP)|PASS|FAIL|ok)' "$out/test-${bin%.test}.log" | grep -v -- '--- SKIP' | tail -n 3 || true
	done
	grep -hE -- '--- (PASS|FAIL|SKIP): TestDevice|--- (PASS|FAIL): TestOpen' "$out"/test-*.log || true

	# The benchmarks: ours (Go benchmarks, GPU time from CUDA events), then
	# PyTorch's on the same GPU, then the table.
	echo "gpu: benchmarks"
	(cd react && "$root/.gpu/react.test" -test.run '^$' -test.bench 'Device' -test.benchtime 20x -test.count 3) \
		>"$out/bench-go.txt" 2>&1 || status=1
	python3 bench/gpu_torch.py --out "$out/bench-torch.json" || status=1
	python3 bench/gpu_table.py "$out/bench-go.txt" "$out/bench-torch.json" "$out/machine.txt" >"$out/gpu-bench.md" || status=1
	cat "$out/gpu-bench.md"
	return "$status"
}

case ${1:-} in
prepare) prepare ;;
run) run ;;
*) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
