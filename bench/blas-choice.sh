#!/usr/bin/env bash
# Which OpenBLAS should the binaries link? Side by side in one run, on one
# core: react's W_p solve and its steps (BenchmarkSolve, BenchmarkSolveSteps)
# linked with Debian's OpenBLAS (what make build links today) and with the
# newer OpenBLAS that SciPy's build wheel ships (scipy-openblas32, every
# symbol prefixed scipy_). The wheel is downloaded into .cache/bench/blas
# by pip (a package registry); a generated header maps each cblas_*,
# LAPACKE_* and openblas_* name to its prefixed one, so gonum's netlib
# bindings compile unchanged against it (CGO_CFLAGS=-include).
#
# Rounds alternate the two builds; the raw output goes to stdout.
#
#   bench/blas-choice.sh [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=2
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	*) echo "usage: $0 [--rounds N]" >&2; exit 2 ;;
	esac
done
wheel=scipy-openblas32==0.3.34.481.3
dir=.cache/bench/blas
pkg=$dir/scipy_openblas32
if [ ! -f "$pkg/lib/libscipy_openblas.so" ]; then
	mkdir -p "$dir"
	.venv/bin/python -m pip download --quiet --no-deps --dest "$dir" "$wheel"
	.venv/bin/python -m zipfile -e "$dir"/scipy_openblas32-*.whl "$dir"
fi
# One #define per exported name the headers declare.
grep -ohE '\bscipy_(cblas|LAPACKE|openblas)_[A-Za-z0-9_]+' "$pkg"/include/*.h | sort -u |
	sed -E 's/^scipy_(.*)$/#define \1 scipy_\1/' > "$dir/shim.h"

export GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
go test -c -tags openblas -o "$dir/react-debian.test" ./react
abs=$(cd "$pkg" && pwd)
CGO_CFLAGS="-O2 -g -include $PWD/$dir/shim.h" \
	CGO_LDFLAGS="-L$abs/lib -lscipy_openblas -Wl,-rpath,$abs/lib" \
	go test -c -tags openblas -o "$dir/react-wheel.test" ./react
ldd "$dir/react-wheel.test" | grep -q libscipy_openblas || { echo "blas-choice: the wheel build does not link the wheel" >&2; exit 1; }

echo "# bench/blas-choice.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc --all) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
echo "# debian: $(dpkg-query -W -f '${Version}' libopenblas0-pthread 2>/dev/null || echo '?'); wheel: $wheel"
for r in $(seq "$rounds"); do
	for b in debian wheel; do
		echo "## round $r: $b"
		(cd react && "../$dir/react-$b.test" -test.run '^$' \
			-test.bench 'BenchmarkSolve/D=(512|768)/T=8$|BenchmarkSolveSteps/D=512' \
			-test.benchtime 20x) | grep -E '^Benchmark'
	done
done
