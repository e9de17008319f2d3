#!/usr/bin/env bash
# Builds the CUDA emulator (docs/gpu.md, "The emulator"): a strict
# host-memory stand-in for the CUDA driver API, cuBLAS, cuSOLVER and the
# runtime functions that react/internal/cuda calls, so that the device
# tests run without a GPU:
#
#   LD_LIBRARY_PATH=$PWD/.cache/cudaemu REACT_TEST_BACKEND=cuda REACT_CUDA_EXPECT=emulator \
#       go test -tags 'openblas cuda' ./react/... ./control/... ./backend/...
#
# The sources are react/internal/cuda/testdata/emulator/*.c (testdata keeps
# them out of the Go build). They compile against the real CUDA 13 headers
# of .cache/cuda/include (scripts/setup.d/50-cuda.sh, make setup), so every
# function matches NVIDIA's prototype and carries the versioned symbol the
# headers map its name to. Output, in .cache/cudaemu (git-ignored):
#
#   libcudaemu.so                 the one library, holding all the state
#   libcuda.so.1, libcublas.so.13, libcusolver.so.12, libcudart.so.13
#                                 links to it, the sonames the binding opens
#                                 (glibc maps a file once, so each dlopen
#                                 gets the same handle: --check tests it)
#   selftest                      the emulator's own tests (selftest.c)
#   probe                         the conformance probe (probe.c): the same
#                                 calls against NVIDIA's libraries on a GPU
#                                 and against the emulator, to compare
#
# Idempotent: .cache/cudaemu/.stamp records the hash of this script, the
# sources and the headers' cuda.h; when it matches nothing is rebuilt.
#
#   scripts/cuda-emulator.sh           build
#   scripts/cuda-emulator.sh --check   build, then run the self-test and
#                                      the conformance check: the probe's
#                                      answers under the emulator against
#                                      an H200's (testdata/emulator/h200/,
#                                      from bench/gpu.sh run), which may
#                                      differ only as h200/differences.diff
#                                      records (docs/gpu.md says why)
set -euo pipefail
cd "$(dirname "$0")/.."

src=react/internal/cuda/testdata/emulator
inc=.cache/cuda/include
out=.cache/cudaemu
check=0
case "${1:-}" in
--check) check=1 ;;
"") ;;
*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

[ -f "$inc/cuda.h" ] && [ -f "$inc/cublas_v2.h" ] && [ -f "$inc/cusolverDn.h" ] ||
	{ echo "cuda-emulator: no CUDA headers in $inc: run make setup (scripts/setup.d/50-cuda.sh)" >&2; exit 1; }
command -v cc >/dev/null || { echo "cuda-emulator: a C compiler (cc) is needed" >&2; exit 1; }

key=$(cat "$0" "$src"/*.c "$src"/*.h "$inc/cuda.h" | sha256sum | cut -d' ' -f1)
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$key" ] && [ -e "$out/libcudaemu.so" ] && [ -x "$out/selftest" ]; then
	echo "cuda-emulator: $out up to date"
else
	rm -rf "$out"
	mkdir -p "$out/gen"
	# The names of the driver's CUresult and the runtime's cudaError_t
	# values, from the headers' enumerations (each checked by the compiler
	# as it compiles the tables).
	awk '/^typedef enum cudaError_enum/,/} CUresult;/' "$inc/cuda.h" |
		sed -nE 's/^[[:space:]]+(CUDA_[A-Z0-9_]+)[[:space:]]*=.*/N(\1)/p' >"$out/gen/cu_names.inc"
	awk '/^enum __device_builtin__ cudaError$/,/^};/' "$inc/driver_types.h" |
		sed -nE 's/^[[:space:]]+(cuda[A-Za-z0-9]+)[[:space:]]*=.*/R(\1)/p' >"$out/gen/rt_names.inc"
	for f in cu_names rt_names; do
		[ "$(wc -l <"$out/gen/$f.inc")" -gt 50 ] || { echo "cuda-emulator: too few error names found for $f.inc" >&2; exit 1; }
	done
	flags=(-std=c11 -O2 -ftree-vectorize -fPIC -pthread -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation -I"$inc" -I"$out/gen")
	cc "${flags[@]}" -shared -Wl,-soname,libcudaemu.so -Wl,-z,defs -o "$out/libcudaemu.so" \
		"$src/core.c" "$src/driver.c" "$src/blas.c" "$src/solver.c" "$src/runtime.c" "$src/ptx.c" -lm
	for name in libcuda.so.1 libcublas.so.13 libcusolver.so.12 libcudart.so.13; do
		ln -s libcudaemu.so "$out/$name"
	done
	cc "${flags[@]}" -o "$out/selftest" "$src/selftest.c" -L"$out" -lcudaemu -Wl,-rpath,'$ORIGIN' -ldl -lm
	cc "${flags[@]}" -o "$out/probe" "$src/probe.c" -ldl
	echo "$key" >"$out/.stamp"
	echo "cuda-emulator: $out ready"
fi

# The self-test's calls that must fail make the emulator say why on
# stderr: kept in selftest.log, shown when a check fails.
if [ "$check" = 1 ]; then
	if "$out/selftest" 2>"$out/selftest.log"; then
		tail -n 1 "$out/selftest.log"
	else
		cat "$out/selftest.log" >&2
		exit 1
	fi
fi

# The conformance check: the emulator answers the probe as the H200 did,
# but for the recorded differences (where it is stricter on purpose, or
# imitates what a GPU cannot show the same way).
if [ "$check" = 1 ]; then
	gpu=$src/h200
	got=$(mktemp -d)
	trap 'rm -rf "$got"' EXIT
	for c in "" sticky misaligned; do
		REACT_EMU_ABORT=0 LD_LIBRARY_PATH="$out" "$out/probe" $c 2>/dev/null >"$got/probe${c:+-$c}.txt" || true
	done
	REACT_EMU_ABORT=0 REACT_EMU_DEVICES=0 LD_LIBRARY_PATH="$out" "$out/probe" init 2>/dev/null >"$got/probe-init.txt" || true
	(cd "$gpu" && for f in probe.txt probe-sticky.txt probe-misaligned.txt probe-init.txt; do
		diff -U0 --label "h200/$f" --label "emulator/$f" "$f" "$got/$f" || true
	done) | grep -v '^@@' >"$got/differences.diff"
	if ! diff -u "$gpu/differences.diff" "$got/differences.diff" >&2; then
		echo "cuda-emulator: the probe's answers under the emulator differ from the H200's otherwise than $gpu/differences.diff records (above: - recorded, + now)" >&2
		exit 1
	fi
	echo "cuda-emulator: the probe answers as the H200 did, but for the $(grep -c '^-[^-]' "$gpu/differences.diff") recorded differences"
fi
