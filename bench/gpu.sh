#!/usr/bin/env bash
# The cuda backend on a GPU machine (docs/gpu.md), in two steps, because
# that machine has CUDA 13 and PyTorch but no Go toolchain and no network:
#
#   bench/gpu.sh prepare   here: make setup's CUDA headers, then the test
#                          binaries of react, react/cudadevice,
#                          react/internal/cuda, control, backend/model and
#                          backend, built with the cuda tag (and no
#                          openblas: the GPU machine has no libopenblas),
#                          into .gpu/ (git-ignored)
#   bench/gpu.sh run       there, from the repository root with .gpu/ carried
#                          beside it: the tests with the GPU backend against the
#                          float64 CPU reference, then the benchmarks, ours and
#                          PyTorch's on the same GPU (bench/gpu_torch.py); the
#                          logs and the table (gpu-bench.md) go to $OUT, or
#                          to .gpu/out without it
#
#   bench/gpu.sh stage     here: leave out of the working tree (git
#                          sparse-checkout) what the GPU run does not need
#                          and the device tool could not carry: it sends at
#                          most 64 MiB (tracked and untracked-not-ignored
#                          files plus carried paths); the second zoo's ONNX
#                          files alone are 69.5 MB
#   bench/gpu.sh unstage   here: the whole working tree back
#   bench/gpu.sh size      what would travel, staged, in bytes; fails above
#                          LIMIT_MIB (56: 8 MiB to spare). CI runs it after
#                          prepare.
#
# With the device tool: bench/gpu.sh prepare && bench/gpu.sh stage, then
# run `bench/gpu.sh run` there with carry [".gpu"], then bench/gpu.sh
# unstage. The binaries open libcuda.so.1 (the driver's),
# libcublas.so.13 and libcusolver.so.12 with dlopen: run finds the last two
# in PyTorch's nvidia-* wheels (nvidia/cu13/lib) or a CUDA toolkit, and puts
# them on LD_LIBRARY_PATH (CUDA_LIBDIR=DIR names another place).
set -euo pipefail
cd "$(dirname "$0")/.."

# The test binaries, the packages they run in (their testdata is relative).
BINARIES=(
	"react.test react"
	"cudadevice.test react/cudadevice"
	"cuda.test react/internal/cuda"
	"control.test control"
	"model.test backend/model"
	"backend.test backend"
)

# The paths the GPU run leaves behind (bench/gpu.sh stage).
UNSTAGED=(tritonmodels/zoo-effnet/onnx)

stage() {
	local patterns=('/*') p
	for p in "${UNSTAGED[@]}"; do
		patterns+=("!/$p/")
	done
	git sparse-checkout set --no-cone "${patterns[@]}"
	echo "gpu: staged: ${UNSTAGED[*]} left out of the working tree (bench/gpu.sh unstage brings them back)"
}

unstage() {
	git sparse-checkout disable
}

# size prints the bytes the device tool would send with .gpu carried: the
# tracked files, less UNSTAGED, the untracked files git does not ignore,
# and .gpu; it fails above LIMIT_MIB.
size() {
	local limit=${LIMIT_MIB:-56} tree p total
	local exclude=()
	for p in "${UNSTAGED[@]}"; do
		exclude+=(":(exclude)$p")
	done
	tree=$(git ls-files -z --cached --others --exclude-standard -- . "${exclude[@]}" |
		xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
	[ -d .gpu ] || { echo "gpu: no .gpu: run bench/gpu.sh prepare first" >&2; exit 1; }
	p=$(find .gpu -type f -not -path '.gpu/out/*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	total=$((tree + p))
	awk -v t="$tree" -v g="$p" -v l="$limit" 'BEGIN { printf "gpu: the device run sends %d bytes (%.1f MiB): working tree %.1f MiB, .gpu %.1f MiB; limit %d MiB\n", t + g, (t + g) / 1048576, t / 1048576, g / 1048576, l }'
	[ "$total" -le $((limit * 1048576)) ] || { echo "gpu: over $limit MiB: the device tool (64 MiB) would refuse it, or nearly" >&2; exit 1; }
}

prepare() {
	bash scripts/setup.d/50-cuda.sh
	mkdir -p .gpu
	# Stripped (-s -w) and gzipped: what travels to the GPU machine is
	# limited (run unpacks them).
	local b
	rm -f .gpu/*.test .gpu/*.test.gz
	for b in "${BINARIES[@]}"; do
		go test -c -tags cuda -ldflags='-s -w' -o ".gpu/${b%% *}" "./${b#* }"
		gzip -9 -f ".gpu/${b%% *}"
	done
	# The emulator's conformance probe (docs/gpu.md, "The emulator"): the
	# same calls against NVIDIA's libraries there, to compare.
	bash scripts/cuda-emulator.sh >/dev/null
	cp .cache/cudaemu/probe .gpu/probe
	du -ch .gpu/* | tail -n 1
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

# step NAME SECONDS DIR CMD...: runs CMD in DIR (a package's directory,
# for its testdata) with a time limit, its output into $work/NAME.log, and
# one line in the summary; a failure marks the run failed but the next
# steps still run.
step() {
	local name=$1 limit=$2 dir=$3 rc=0 t0=$SECONDS
	shift 3
	(cd "$dir" && timeout --kill-after=5 "$limit" "$@") >"$work/$name.log" 2>&1 || rc=$?
	local verdict=ok
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		verdict="TIMED OUT after ${limit}s"
	elif [ "$rc" -ne 0 ]; then
		verdict="FAILED (exit $rc)"
	fi
	[ "$verdict" = ok ] || status=1
	tar -C "$work" -czf "$out/logs.tgz" . # what is done so far comes back, even if a later step is cut off
	printf '%-28s %-22s %4ss  %s\n' "$name" "$verdict" "$((SECONDS - t0))" \
		"$(grep -cE -- '^--- FAIL' "$work/$name.log" || true) failed, $(grep -cE -- '^--- PASS' "$work/$name.log" || true) passed, $(grep -cE -- '^--- SKIP' "$work/$name.log" || true) skipped" |
		tee -a "$work/summary.txt"
}

run() {
	local out=${OUT:-.gpu/out} status=0 bin bins libdir work
	work=$(mktemp -d) bins=$(mktemp -d)
	mkdir -p "$out"
	for b in "${BINARIES[@]}"; do
		bin=${b%% *}
		[ -f ".gpu/$bin.gz" ] || { echo "gpu: .gpu/$bin.gz missing: run bench/gpu.sh prepare and carry .gpu" >&2; exit 1; }
		gunzip -c ".gpu/$bin.gz" >"$bins/$bin"
		chmod +x "$bins/$bin"
	done
	libdir=$(cuda_libdir)
	[ -n "$libdir" ] || { echo "gpu: no libcublas.so.13 and libcusolver.so.12 found" >&2; exit 1; }
	export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	{
		echo "libraries: $libdir"
		nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
		lscpu | grep -E '^Model name' || true
		compute-sanitizer --version 2>&1 | tail -n 1 || true
		python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 || true
	} | tee "$work/machine.txt"

	# The tests, with the GPU backend: REACT_TEST_BACKEND=cuda makes every
	# package fail rather than fall back when no GPU opens, and
	# REACT_CUDA_EXPECT=gpu runs the tests at D = 768 and 1280.
	export REACT_TEST_BACKEND=cuda REACT_CUDA_EXPECT=gpu
	local limits=(120 60 40 60 60 60) i=0
	for b in "${BINARIES[@]}"; do
		bin=${b%% *}
		step "test-${bin%.test}" "${limits[i]}" "${b#* }" "$bins/$bin" -test.count=1 -test.v
		i=$((i + 1))
	done

	# The benchmarks: ours, then PyTorch's on the same GPU, then the table.
	step bench-go 120 react/cudadevice "$bins/cudadevice.test" -test.run '^$' -test.bench 'Device' -test.benchtime 20x -test.count 2
	step bench-torch 90 . python3 bench/gpu_torch.py --out "$work/bench-torch.json"
	python3 bench/gpu_table.py "$work/bench-go.log" "$work/bench-torch.json" "$work/machine.txt" >"$work/gpu-bench.md" 2>&1 || status=1
	cat "$work/gpu-bench.md"

	# compute-sanitizer over the device tests at small sizes: memcheck (every
	# device access inside an allocation) and initcheck (no kernel reads
	# memory never written). API errors are not reported: some tests make
	# calls fail on purpose (a host address checked as a device one).
	export REACT_DEVICE_LARGE=0
	local sanitize=(compute-sanitizer --error-exitcode 9 --report-api-errors no --print-limit 20)
	local small='TestDevice(SolveMatchesCPU|ApplyAllocatedMemory|RefusesLikeCPU|RefusesBeyondFloat32|Concurrent)|TestOneNorm'
	step memcheck-react 50 react "${sanitize[@]}" --tool memcheck "$bins/react.test" -test.run "$small" -test.v
	step memcheck-cudadevice 30 react/cudadevice "${sanitize[@]}" --tool memcheck "$bins/cudadevice.test" -test.run 'TestDeviceApplyResident' -test.v
	step memcheck-model 40 backend/model "${sanitize[@]}" --tool memcheck "$bins/model.test" -test.run 'TestExecuteDevice' -test.v
	step initcheck-react 50 react "${sanitize[@]}" --tool initcheck "$bins/react.test" -test.run "$small" -test.v
	step initcheck-cudadevice 30 react/cudadevice "${sanitize[@]}" --tool initcheck "$bins/cudadevice.test" -test.run 'TestDeviceApplyResident' -test.v

	# The conformance probe: NVIDIA's answers to the calls the emulator
	# imitates (compare with REACT_EMU_ABORT=0 .cache/cudaemu/probe here).
	if [ -x .gpu/probe ]; then
		for c in "" sticky misaligned; do
			step "probe${c:+-$c}" 30 . .gpu/probe $c
		done
		step probe-init 30 . env CUDA_VISIBLE_DEVICES= .gpu/probe init
	fi

	echo "--- summary"
	cat "$work/summary.txt"
	grep -hE -- '^\s*--- FAIL|panic:|^FAIL' "$work"/test-*.log | head -n 40 || true
	for f in "$work"/memcheck-*.log "$work"/initcheck-*.log; do
		grep -E 'ERROR SUMMARY|Invalid|Uninitialized' "$f" | head -n 5 | sed "s|^|$(basename "$f"): |" || true
	done
	cp "$work/summary.txt" "$work/gpu-bench.md" "$work/machine.txt" "$out/" 2>/dev/null || true
	tar -C "$work" -czf "$out/logs.tgz" .
	return "$status"
}

case ${1:-} in
prepare) prepare ;;
stage) stage ;;
unstage) unstage ;;
size) size ;;
run) run ;;
*) echo "usage: $0 prepare|stage|unstage|size|run" >&2; exit 2 ;;
esac
